// FormatProfileCsv: measured layer times in DeepPool's profile CSV, the format
// planner::ParseProfileCsv reads (planner/profile.h). Names and params_json are written as
// tools/measure_layer_profile.py writes them, so that planner::SignatureOf binds each row back to
// its layer.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "wavepool/planner/profile.h"
#include "wavepool/runtime/layer_profiler.h"

namespace wavepool::runtime {
namespace {

using nlohmann::json;
using planner::LayerKind;

constexpr char kHeader[] =
    "model,per_gpu_batch,layer_idx,name,params_json,input_dim,total_ms,fw_us,bw_us";

// RFC 4180: a field holding a comma or a quote is quoted, its quotes doubled.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// An int when both dims agree, else [h, w] (DeepPool's kernel_size and padding).
json Pair(int h, int w) { return h == w ? json(h) : json::array({h, w}); }

// DeepPool's layer type name ("ReLU2d", "maxPool2d", ...), which the planner normalises back.
std::string ProfileName(const planner::Layer& layer) {
  switch (layer.kind) {
    case LayerKind::kReLU:
      return layer.input.dims.size() == 3 ? "ReLU2d" : "ReLU1d";
    case LayerKind::kMaxPool2d:
      return "maxPool2d";
    case LayerKind::kAvgPool2d:
      return "avgPool2d";
    case LayerKind::kAdaptiveAvgPool2d:
      return "adAvgPool2d";
    case LayerKind::kResNetBottleneck:
      return "ResnetBottleneck";
    default:
      return std::string(planner::LayerKindName(layer.kind));  // conv2d, linear, flatten
  }
}

// The module's settings, keys sorted, as the profile's params_json column holds them.
json ProfileParams(const planner::Layer& layer) {
  const planner::WindowAttrs& w = layer.window;
  switch (layer.kind) {
    case LayerKind::kConv2d: {
      json params = {{"in_channels", layer.in_channels},
                     {"kernel_size", Pair(w.kernel_h, w.kernel_w)},
                     {"out_channels", layer.out_channels},
                     {"padding", Pair(w.pad_h, w.pad_w)},
                     {"stride", w.stride_h}};
      if (w.groups != 1) params["groups"] = w.groups;
      return params;
    }
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
      return {{"kernel_size", Pair(w.kernel_h, w.kernel_w)},
              {"padding", Pair(w.pad_h, w.pad_w)},
              {"stride", w.stride_h}};
    case LayerKind::kLinear:
      return {{"bias", layer.attrs.bias},
              {"in_features", layer.in_channels},
              {"out_features", layer.out_channels}};
    case LayerKind::kResNetBottleneck:
      return {{"base_width", layer.attrs.base_width},
              {"dilation", 1},
              {"groups", 1},
              {"inplanes", layer.in_channels},
              {"planes", layer.attrs.planes},
              {"stride", w.stride_h}};
    case LayerKind::kReLU:
      return {{"inplace", false}};
    case LayerKind::kAdaptiveAvgPool2d:
      return {{"output_height", layer.output.dims[1]}, {"output_width", layer.output.dims[2]}};
    default:
      return json::object();
  }
}

// The signature's input as DeepPool writes it: a bare count for one dim, else [C,H,W].
std::string InputDim(const planner::TensorShape& shape) {
  if (shape.dims.size() == 1) return absl::StrCat(shape.dims[0]);
  return absl::StrCat("[", absl::StrJoin(shape.dims, ","), "]");
}

}  // namespace

int ProfiledLayerCount(const planner::ModelGraph& graph) {
  int count = 0;
  for (const planner::Layer& layer : graph.layers()) count += planner::SignatureOf(layer) ? 1 : 0;
  return count;
}

std::string FormatProfileCsv(const planner::ModelGraph& graph,
                             const std::vector<MeasuredLayer>& measured) {
  // One block per batch, layers in graph order within it, as DeepPool's files are laid out.
  std::vector<std::int64_t> batches;
  for (const MeasuredLayer& entry : measured) {
    for (const auto& [batch, time] : entry.by_batch) {
      if (std::find(batches.begin(), batches.end(), batch) == batches.end()) {
        batches.push_back(batch);
      }
    }
  }
  std::sort(batches.begin(), batches.end());
  std::string text = absl::StrCat(kHeader, "\n");
  for (std::int64_t batch : batches) {
    int index = 0;
    for (const MeasuredLayer& entry : measured) {
      const planner::Layer& layer = graph.layer(entry.layer);
      const std::optional<planner::LayerSignature> signature = planner::SignatureOf(layer);
      if (!signature) continue;
      const int layer_index = index++;
      const auto time = entry.by_batch.find(batch);
      if (time == entry.by_batch.end()) continue;
      const double forward_us = planner::ToMicros(time->second.forward);
      const double backward_us = planner::ToMicros(time->second.backward);
      absl::StrAppend(&text, CsvField(graph.name()), ",", batch, ",", layer_index, ",",
                      ProfileName(layer), ",", CsvField(ProfileParams(layer).dump()), ",",
                      CsvField(InputDim(signature->input)), ",",
                      absl::StrFormat("%.4f,%.3f,%.3f", (forward_us + backward_us) / 1e3,
                                      forward_us, backward_us),
                      "\n");
    }
  }
  return text;
}

}  // namespace wavepool::runtime
