#include "wavepool/planner/model.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

constexpr std::array<std::pair<LayerKind, std::string_view>, 20> kKindNames = {{
    {LayerKind::kConv2d, "conv2d"},
    {LayerKind::kLinear, "linear"},
    {LayerKind::kReLU, "relu"},
    {LayerKind::kGELU, "gelu"},
    {LayerKind::kBatchNorm2d, "batchnorm2d"},
    {LayerKind::kLayerNorm, "layernorm"},
    {LayerKind::kMaxPool2d, "maxpool2d"},
    {LayerKind::kAvgPool2d, "avgpool2d"},
    {LayerKind::kAdaptiveAvgPool2d, "adaptiveavgpool2d"},
    {LayerKind::kFlatten, "flatten"},
    {LayerKind::kDropout, "dropout"},
    {LayerKind::kConcat, "concat"},
    {LayerKind::kAdd, "add"},
    {LayerKind::kResNetBottleneck, "resnet_bottleneck"},
    {LayerKind::kEmbedding, "embedding"},
    {LayerKind::kTransformerAttention, "transformer_attention"},
    {LayerKind::kTransformerFeedForward, "transformer_feedforward"},
    {LayerKind::kTransformerPooler, "transformer_pooler"},
    {LayerKind::kSoftmaxCrossEntropy, "softmax_cross_entropy"},
    {LayerKind::kOpaque, "opaque"},
}};

bool IsValidShape(const TensorShape& shape) {
  if (shape.dims.empty()) return false;
  return std::all_of(shape.dims.begin(), shape.dims.end(), [](std::int64_t d) { return d > 0; });
}

// Names end up in layer tables, where ',' separates columns and ';' separates inputs.
absl::Status CheckName(const std::string& name,
                       const std::unordered_map<std::string, LayerId>& ids_by_name) {
  if (name.empty()) return absl::InvalidArgumentError("name is empty");
  if (name.find_first_of(",;\"\r\n") != std::string::npos) {
    return absl::InvalidArgumentError("name must not contain ',', ';', '\"' or a line break");
  }
  if (auto it = ids_by_name.find(name); it != ids_by_name.end()) {
    return absl::InvalidArgumentError(absl::StrCat("name is already used by layer ", it->second));
  }
  return absl::OkStatus();
}

absl::Status CheckLayerFields(const Layer& layer, LayerId expected_id,
                              const std::unordered_map<std::string, LayerId>& ids_by_name) {
  if (layer.id != expected_id) {
    return absl::InvalidArgumentError(absl::StrCat("id is ", layer.id, ", expected ", expected_id));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckName(layer.name, ids_by_name));
  if (!IsValidShape(layer.output)) {
    return absl::InvalidArgumentError(absl::StrCat("output shape ", layer.output.ToString(),
                                                   " is empty or has a non-positive dim"));
  }
  if (layer.params < 0 || !(layer.forward_flops >= 0) || !(layer.backward_flops >= 0) ||
      layer.internal_activation_items < 0) {
    return absl::InvalidArgumentError(
        "negative (or NaN) parameters, FLOPs or internal activation items");
  }
  if (layer.measured_time_per_sample && !(layer.measured_time_per_sample->count() >= 0)) {
    return absl::InvalidArgumentError("negative measured time");
  }
  return absl::OkStatus();
}

// An Add's inputs all have its output shape; a Concat's agree in every dim but the channels.
absl::Status CheckJoinShapes(const std::vector<Layer>& layers, const Layer& join) {
  std::int64_t channels = 0;
  for (LayerId in : join.inputs) {
    const TensorShape& shape = layers[static_cast<size_t>(in)].output;
    const std::string what =
        absl::StrCat("input ", layers[static_cast<size_t>(in)].name, " ", shape.ToString());
    if (join.kind == LayerKind::kAdd && shape != join.output) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " differs from the sum's shape ", join.output.ToString()));
    }
    if (join.kind == LayerKind::kConcat) {
      const bool same_rank = shape.dims.size() == join.output.dims.size();
      if (!same_rank ||
          !std::equal(shape.dims.begin() + 1, shape.dims.end(), join.output.dims.begin() + 1)) {
        return absl::InvalidArgumentError(absl::StrCat(what, " does not match the concatenation ",
                                                       join.output.ToString(),
                                                       " in its non-channel dims"));
      }
      channels += shape.dims[0];
    }
  }
  if (join.kind == LayerKind::kConcat && channels != join.output.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs have ", channels, " channels in all, the output has ", join.output.dims[0]));
  }
  return absl::OkStatus();
}

// Checks (and, when empty, fills in) what `layer` reads.
absl::Status CheckInputs(const std::vector<Layer>& layers, Layer& layer,
                         const TensorShape& input_shape) {
  const bool join_kind = layer.kind == LayerKind::kConcat || layer.kind == LayerKind::kAdd;
  if (join_kind && layer.inputs.size() < 2) {
    return absl::InvalidArgumentError("a join needs at least 2 inputs");
  }
  for (size_t k = 0; k < layer.inputs.size(); ++k) {
    const LayerId in = layer.inputs[k];
    if (in < 0 || in >= layer.id) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", in, " is not an earlier layer (layers must be topologically ordered)"));
    }
    if (std::find(layer.inputs.begin(), layer.inputs.begin() + static_cast<long>(k), in) !=
        layer.inputs.begin() + static_cast<long>(k)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", layers[static_cast<size_t>(in)].name, " is listed twice"));
    }
  }
  const TensorShape& reads =
      layer.inputs.empty() ? input_shape : layers[static_cast<size_t>(layer.inputs[0])].output;
  if (layer.input.dims.empty()) layer.input = reads;
  if (layer.input != reads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "its input is ", layer.input.ToString(), " but it reads ",
        layer.inputs.empty()
            ? std::string("the model input ")
            : absl::StrCat(layers[static_cast<size_t>(layer.inputs[0])].name, "'s output "),
        reads.ToString()));
  }
  return join_kind ? CheckJoinShapes(layers, layer) : absl::OkStatus();
}

}  // namespace

std::int64_t TensorShape::Elements() const {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1},
                         [](std::int64_t a, std::int64_t b) { return a * b; });
}

std::string TensorShape::ToString() const {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

std::string_view LayerKindName(LayerKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::optional<LayerKind> ParseLayerKind(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  for (const auto& [kind, kind_name] : kKindNames) {
    if (kind_name == lower) return kind;
  }
  return std::nullopt;
}

absl::StatusOr<ModelGraph> ModelGraph::Create(std::string name, TensorShape input_shape,
                                              std::vector<Layer> layers) {
  const std::string where = absl::StrCat("model ", name);
  if (layers.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": has no layers"));
  if (!IsValidShape(input_shape)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": input shape ", input_shape.ToString(),
                                                   " is empty or has a non-positive dim"));
  }
  std::vector<std::vector<LayerId>> successors(layers.size());
  std::unordered_map<std::string, LayerId> ids_by_name;
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer& layer = layers[i];
    const std::string at = absl::StrCat(where, ", layer ", i, " (", layer.name, ")");
    absl::Status status = CheckLayerFields(layer, static_cast<LayerId>(i), ids_by_name);
    if (status.ok()) status = CheckInputs(layers, layer, input_shape);
    if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(at, ": ", status.message()));
    ids_by_name.emplace(layer.name, layer.id);
    for (LayerId in : layer.inputs) successors[static_cast<size_t>(in)].push_back(layer.id);
  }
  LayerId sink = -1;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!successors[i].empty()) continue;
    if (sink >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": layers ", layers[static_cast<size_t>(sink)].name, " and ",
                       layers[i].name, " both have no successor; a model has one output"));
    }
    sink = static_cast<LayerId>(i);
  }
  ModelGraph graph;
  graph.name_ = std::move(name);
  graph.input_shape_ = std::move(input_shape);
  graph.layers_ = std::move(layers);
  graph.successors_ = std::move(successors);
  graph.sink_ = sink;
  return graph;
}

bool WindowAttrs::operator==(const WindowAttrs& other) const {
  return kernel_h == other.kernel_h && kernel_w == other.kernel_w && stride_h == other.stride_h &&
         stride_w == other.stride_w && pad_h == other.pad_h && pad_w == other.pad_w &&
         groups == other.groups;
}

bool LayerAttrs::operator==(const LayerAttrs& other) const {
  return bias == other.bias && batch_norm == other.batch_norm && relu == other.relu &&
         planes == other.planes && base_width == other.base_width &&
         max_positions == other.max_positions && type_vocab == other.type_vocab &&
         heads == other.heads && intermediate == other.intermediate;
}

bool Layer::operator==(const Layer& other) const {
  return id == other.id && name == other.name && kind == other.kind &&
         opaque_type == other.opaque_type && inputs == other.inputs && input == other.input &&
         output == other.output && window == other.window && attrs == other.attrs &&
         in_channels == other.in_channels && out_channels == other.out_channels &&
         params == other.params && forward_flops == other.forward_flops &&
         backward_flops == other.backward_flops &&
         reuses_input_memory == other.reuses_input_memory &&
         internal_activation_items == other.internal_activation_items &&
         measured_time_per_sample == other.measured_time_per_sample;
}

bool ModelGraph::operator==(const ModelGraph& other) const {
  return name_ == other.name_ && input_shape_ == other.input_shape_ && layers_ == other.layers_;
}

std::optional<LayerId> ModelGraph::Find(std::string_view name) const {
  for (const Layer& layer : layers_) {
    if (layer.name == name) return layer.id;
  }
  return std::nullopt;
}

std::int64_t ModelGraph::TotalParams() const {
  std::int64_t total = 0;
  for (const Layer& layer : layers_) total += layer.params;
  return total;
}

double ModelGraph::ForwardFlopsPerSample() const {
  double total = 0;
  for (const Layer& layer : layers_) total += layer.forward_flops;
  return total;
}

double ModelGraph::BackwardFlopsPerSample() const {
  double total = 0;
  for (const Layer& layer : layers_) total += layer.backward_flops;
  return total;
}

std::int64_t ModelGraph::ActivationItemsPerSample(bool with_reuse) const {
  std::int64_t total = 0;
  for (const Layer& layer : layers_) {
    total += layer.internal_activation_items;
    if (!(with_reuse && layer.reuses_input_memory)) total += layer.output.Elements();
  }
  return total;
}

bool ModelGraph::IsChain() const {
  for (const Layer& layer : layers_) {
    if (layer.inputs.size() > 1 || successors(layer.id).size() > 1) return false;
  }
  return true;
}

}  // namespace wavepool::planner
