#include "wavepool/planner/model.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace wavepool::planner {
namespace {

constexpr std::array<std::pair<LayerKind, std::string_view>, 19> kKindNames = {{
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
    {LayerKind::kSoftmaxCrossEntropy, "softmax_cross_entropy"},
    {LayerKind::kOpaque, "opaque"},
}};

}  // namespace

std::int64_t TensorShape::Elements() const {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1},
                         [](std::int64_t a, std::int64_t b) { return a * b; });
}

std::string TensorShape::ToString() const { return absl::StrCat("[", absl::StrJoin(dims, ","), "]"); }

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
  if (input_shape.dims.empty() || input_shape.Elements() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": input shape ", input_shape.ToString(), " is empty"));
  }
  const int n = static_cast<int>(layers.size());
  std::vector<std::vector<LayerId>> successors(layers.size());
  for (int i = 0; i < n; ++i) {
    Layer& layer = layers[static_cast<size_t>(i)];
    const std::string at = absl::StrCat(where, ", layer ", i, " (", layer.name, ")");
    if (layer.id != i) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": id is ", layer.id, ", expected ", i));
    }
    if (layer.output.dims.empty() || layer.output.Elements() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": output shape ", layer.output.ToString(), " is empty"));
    }
    if (layer.params < 0 || layer.forward_flops < 0 || layer.backward_flops < 0) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": negative parameters or FLOPs"));
    }
    const bool join_kind = layer.kind == LayerKind::kConcat || layer.kind == LayerKind::kAdd;
    if (join_kind && layer.inputs.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": a join needs at least 2 inputs"));
    }
    for (LayerId in : layer.inputs) {
      if (in < 0 || in >= i) {
        return absl::InvalidArgumentError(absl::StrCat(
            at, ": input ", in, " is not an earlier layer (layers must be topologically ordered)"));
      }
      successors[static_cast<size_t>(in)].push_back(i);
    }
    if (layer.inputs.empty() && layer.input != input_shape) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": reads the model input ",
                                                     input_shape.ToString(), " but its input is ",
                                                     layer.input.ToString()));
    }
  }
  LayerId sink = -1;
  for (int i = 0; i < n; ++i) {
    if (!successors[static_cast<size_t>(i)].empty()) continue;
    if (sink >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": layers ", layers[static_cast<size_t>(sink)].name, " and ",
          layers[static_cast<size_t>(i)].name, " both have no successor; a model has one output"));
    }
    sink = i;
  }
  ModelGraph graph;
  graph.name_ = std::move(name);
  graph.input_shape_ = std::move(input_shape);
  graph.layers_ = std::move(layers);
  graph.successors_ = std::move(successors);
  graph.sink_ = sink;
  return graph;
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
