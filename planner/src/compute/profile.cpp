#include "wavepool/planner/profile.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "text/csv.h"

namespace wavepool::planner {
namespace {

using nlohmann::json;

constexpr const char* kColumns[] = {"model",    "per_gpu_batch", "layer_idx",
                                    "name",     "params_json",   "input_dim",
                                    "total_ms", "fw_us",         "bw_us"};

// The profile's layer types, normalised ("ReLU2d" and "ReLU1d" are both "relu").
std::string NormaliseKind(const std::string& name) {
  if (name == "ReLU2d" || name == "ReLU1d") return "relu";
  if (name == "maxPool2d") return "maxpool2d";
  if (name == "avgPool2d") return "avgpool2d";
  if (name == "adAvgPool2d") return "adaptiveavgpool2d";
  if (name == "ResnetBottleneck") return "resnet_bottleneck";
  return name;
}

// A JSON field that is an int or a [h, w] pair.
std::pair<int, int> Pair(const json& params, const char* key, int fallback) {
  if (!params.contains(key)) return {fallback, fallback};
  const json& v = params.at(key);
  if (v.is_array() && v.size() == 2) return {v[0].get<int>(), v[1].get<int>()};
  return {v.get<int>(), v.get<int>()};
}

absl::StatusOr<TensorShape> ParseInputDim(const std::string& text) {
  std::string body(absl::StripSuffix(absl::StripPrefix(text, "["), "]"));
  TensorShape shape;
  for (absl::string_view part : absl::StrSplit(body, ',')) {
    std::int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad dimension \"", part, "\""));
    }
    shape.dims.push_back(dim);
  }
  return shape;
}

absl::StatusOr<LayerSignature> ParseSignature(const std::string& name,
                                              const std::string& params_text,
                                              const std::string& input_dim) {
  LayerSignature sig;
  sig.kind = NormaliseKind(name);
  absl::StatusOr<TensorShape> input = ParseInputDim(input_dim);
  if (!input.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("column input_dim: ", input.status().message()));
  }
  sig.input = *std::move(input);
  try {
    const json params = json::parse(params_text);
    if (sig.kind == "conv2d") {
      sig.in_channels = params.at("in_channels").get<std::int64_t>();
      sig.out_channels = params.at("out_channels").get<std::int64_t>();
    } else if (sig.kind == "linear") {
      sig.in_channels = params.at("in_features").get<std::int64_t>();
      sig.out_channels = params.at("out_features").get<std::int64_t>();
    } else if (sig.kind == "resnet_bottleneck") {
      sig.in_channels = params.at("inplanes").get<std::int64_t>();
      sig.out_channels = 4 * params.at("planes").get<std::int64_t>();
    }
    if (sig.kind == "conv2d" || sig.kind == "maxpool2d" || sig.kind == "avgpool2d") {
      std::tie(sig.kernel_h, sig.kernel_w) = Pair(params, "kernel_size", 1);
    }
    if (sig.kind == "conv2d" || sig.kind == "maxpool2d" || sig.kind == "avgpool2d" ||
        sig.kind == "resnet_bottleneck") {
      sig.stride = Pair(params, "stride", 1).first;
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("column params_json: ", e.what()));
  }
  return sig;
}

absl::StatusOr<Seconds> ParseMicros(const std::string& text) {
  double us = 0;
  if (!absl::SimpleAtod(text, &us) || !(us >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" is not a time >= 0"));
  }
  return Microseconds(us);
}

// Time at `batch` from the measured points: exact, linear between neighbours, the smallest
// measurement below it, and proportional to the batch above the largest (a saturated GPU's time
// per sample stays constant; the slope between two noisy large batches can even be negative).
Seconds Interpolate(const std::map<std::int64_t, Seconds>& points, std::int64_t batch) {
  auto hi = points.lower_bound(batch);
  if (hi != points.end() && hi->first == batch) return hi->second;
  if (hi == points.begin()) return hi->second;
  if (hi == points.end()) {
    auto last = std::prev(points.end());
    return last->second * (static_cast<double>(batch) / static_cast<double>(last->first));
  }
  auto lo = std::prev(hi);
  const double f =
      static_cast<double>(batch - lo->first) / static_cast<double>(hi->first - lo->first);
  return lo->second + (hi->second - lo->second) * f;
}

class ProfiledCostModel final : public ComputeCostModel {
 public:
  // `bound[id]` is the profiled layer matched to graph layer `id`, or null.
  ProfiledCostModel(const std::vector<const ProfiledLayer*>& bound, const LayerProfile& profile,
                    ComputeCostModelPtr fallback)
      : fallback_(std::move(fallback)) {
    description_ = absl::StrCat("measured profile of ", profile.model, " (", profile.layers.size(),
                                " layers; others ", fallback_->Description(), ")");
    for (const ProfiledLayer* layer : bound) {
      forward_.emplace_back();
      backward_.emplace_back();
      if (layer == nullptr) continue;
      for (const auto& [batch, time] : layer->by_batch) {
        forward_.back()[batch] = time.forward;
        backward_.back()[batch] = time.backward;
      }
    }
  }

  LayerTime Time(const Layer& layer, std::int64_t per_gpu_batch) const override {
    const size_t id = static_cast<size_t>(layer.id);
    if (id >= forward_.size() || forward_[id].empty()) return fallback_->Time(layer, per_gpu_batch);
    return {Interpolate(forward_[id], per_gpu_batch), Interpolate(backward_[id], per_gpu_batch)};
  }

  std::string Description() const override { return description_; }

 private:
  std::string description_;
  ComputeCostModelPtr fallback_;
  std::vector<std::map<std::int64_t, Seconds>> forward_, backward_;  // by LayerId
};

}  // namespace

bool LayerSignature::operator==(const LayerSignature& other) const {
  return kind == other.kind && input == other.input && in_channels == other.in_channels &&
         out_channels == other.out_channels && kernel_h == other.kernel_h &&
         kernel_w == other.kernel_w && stride == other.stride;
}

std::string LayerSignature::ToString() const {
  std::string s = absl::StrCat(kind, " ", input.ToString());
  if (in_channels || out_channels) absl::StrAppend(&s, " ", in_channels, "->", out_channels);
  if (kernel_h) absl::StrAppend(&s, " k", kernel_h, "x", kernel_w);
  if (stride) absl::StrAppend(&s, " s", stride);
  return s;
}

std::optional<LayerSignature> SignatureOf(const Layer& layer) {
  LayerSignature sig;
  sig.input = layer.input;
  const WindowAttrs& w = layer.window;
  switch (layer.kind) {
    case LayerKind::kConv2d:
      sig.kind = "conv2d";
      sig.in_channels = layer.in_channels;
      sig.out_channels = layer.out_channels;
      sig.kernel_h = w.kernel_h, sig.kernel_w = w.kernel_w, sig.stride = w.stride_h;
      return sig;
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
      sig.kind = layer.kind == LayerKind::kMaxPool2d ? "maxpool2d" : "avgpool2d";
      sig.kernel_h = w.kernel_h, sig.kernel_w = w.kernel_w, sig.stride = w.stride_h;
      return sig;
    case LayerKind::kLinear:
      sig.kind = "linear";
      sig.in_channels = layer.in_channels;
      sig.out_channels = layer.out_channels;
      // The profile records a linear layer's input as its flat feature count.
      sig.input = TensorShape{{layer.input.Elements()}};
      return sig;
    case LayerKind::kResNetBottleneck:
      sig.kind = "resnet_bottleneck";
      sig.in_channels = layer.in_channels;
      sig.out_channels = layer.out_channels;
      sig.stride = w.stride_h;
      return sig;
    case LayerKind::kReLU:
      sig.kind = "relu";
      return sig;
    case LayerKind::kAdaptiveAvgPool2d:
      sig.kind = "adaptiveavgpool2d";
      return sig;
    case LayerKind::kFlatten:
      sig.kind = "flatten";
      return sig;
    default:
      return std::nullopt;
  }
}

absl::StatusOr<std::vector<LayerProfile>> ParseProfileCsv(std::string_view text) {
  std::vector<LayerProfile> profiles;
  std::map<std::string, std::map<int, ProfiledLayer>> layers;
  int line_number = 0;
  std::vector<std::string> header;
  for (const std::string& line : csv::SplitLines(text)) {
    ++line_number;
    if (line.empty()) continue;
    absl::StatusOr<std::vector<std::string>> fields = csv::SplitRow(line);
    const std::string where = absl::StrCat("profile line ", line_number);
    if (!fields.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", fields.status().message()));
    if (header.empty()) {
      header = *fields;
      if (header != std::vector<std::string>(std::begin(kColumns), std::end(kColumns))) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": header must be ", absl::StrJoin(kColumns, ",")));
      }
      continue;
    }
    if (fields->size() != header.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": has ", fields->size(), " columns, expected ", header.size()));
    }
    const std::vector<std::string>& f = *fields;
    std::int64_t batch = 0;
    int index = 0;
    if (!absl::SimpleAtoi(f[1], &batch) || batch < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ", column per_gpu_batch: \"", f[1], "\" is not a positive integer"));
    }
    if (!absl::SimpleAtoi(f[2], &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ", column layer_idx: \"", f[2], "\" is not an index"));
    }
    absl::StatusOr<LayerSignature> sig = ParseSignature(f[3], f[4], f[5]);
    if (!sig.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ", ", sig.status().message()));
    }
    absl::StatusOr<Seconds> fw = ParseMicros(f[7]);
    absl::StatusOr<Seconds> bw = ParseMicros(f[8]);
    for (const auto& [column, status] :
         {std::pair{"fw_us", fw.status()}, std::pair{"bw_us", bw.status()}}) {
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ", column ", column, ": ", status.message()));
      }
    }
    ProfiledLayer& layer = layers[f[0]][index];
    if (!layer.by_batch.empty() && !(layer.signature == *sig)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": layer ", index, " of ", f[0], " was ", layer.signature.ToString(),
                       " on an earlier line, here ", sig->ToString()));
    }
    layer.index = index;
    layer.signature = *sig;
    if (!layer.by_batch.emplace(batch, LayerTime{*fw, *bw}).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": layer ", index, " of ", f[0],
                                                     " at batch ", batch, " is measured twice"));
    }
  }
  if (header.empty()) return absl::InvalidArgumentError("profile is empty");
  for (auto& [model, by_index] : layers) {
    LayerProfile profile;
    profile.model = model;
    for (auto& [index, layer] : by_index) profile.layers.push_back(std::move(layer));
    profiles.push_back(std::move(profile));
  }
  return profiles;
}

absl::StatusOr<ComputeCostModelPtr> MakeProfiledCostModel(const LayerProfile& profile,
                                                          const ModelGraph& model,
                                                          ComputeCostModelPtr fallback) {
  std::vector<const ProfiledLayer*> bound(static_cast<size_t>(model.size()), nullptr);
  size_t next = 0;
  for (const Layer& layer : model.layers()) {
    if (next == profile.layers.size()) break;
    const std::optional<LayerSignature> sig = SignatureOf(layer);
    if (sig && *sig == profile.layers[next].signature) bound[layer.id] = &profile.layers[next++];
  }
  if (next < profile.layers.size()) {
    const ProfiledLayer& row = profile.layers[next];
    return absl::InvalidArgumentError(absl::StrCat(
        "profile of ", profile.model, ": layer ", row.index, " (", row.signature.ToString(),
        ") matches no remaining layer of model ", model.name(), " (", next, " of ",
        profile.layers.size(), " profiled layers matched in order)"));
  }
  return std::make_unique<ProfiledCostModel>(bound, profile, std::move(fallback));
}

}  // namespace wavepool::planner
