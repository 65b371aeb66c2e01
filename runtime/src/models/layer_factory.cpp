// MakeLayerModule: which module each layer kind gets, and the checks that keep a graph not made
// by ModelBuilder from reaching LibTorch with sizes it would reject.
#include <new>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "layers.h"

namespace wavepool::runtime::internal {
namespace {

using planner::Layer;
using planner::LayerKind;

bool Rank(const planner::TensorShape& shape, size_t dims) { return shape.dims.size() == dims; }

// What a module of `layer`'s kind needs of its fields; "" when it has it.
std::string MissingFields(const Layer& layer) {
  const planner::WindowAttrs& w = layer.window;
  switch (layer.kind) {
    case LayerKind::kConv2d:
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
    case LayerKind::kResNetBottleneck:
      if (!Rank(layer.input, 3) || !Rank(layer.output, 3)) return "{C,H,W} input and output";
      if (w.kernel_h < 1 || w.kernel_w < 1 || w.stride_h < 1 || w.stride_w < 1 || w.pad_h < 0 ||
          w.pad_w < 0 || w.groups < 1 || layer.in_channels % w.groups != 0 ||
          layer.out_channels % w.groups != 0) {
        return "a window with kernel and stride >= 1, padding >= 0 and groups dividing the "
               "channels";
      }
      if (layer.kind == LayerKind::kResNetBottleneck &&
          layer.attrs.planes * layer.attrs.base_width / 64 < 1) {
        return "planes and base_width giving a width >= 1";
      }
      return "";
    case LayerKind::kBatchNorm2d:
    case LayerKind::kAdaptiveAvgPool2d:
      return Rank(layer.input, 3) && Rank(layer.output, 3) ? "" : "{C,H,W} input and output";
    case LayerKind::kEmbedding:
      if (!Rank(layer.input, 1) || layer.in_channels < 1 || layer.attrs.type_vocab < 0 ||
          layer.attrs.max_positions < layer.input.dims[0]) {
        return "a {T} input of token ids, a vocabulary >= 1 and max_positions >= T";
      }
      return "";
    case LayerKind::kTransformerAttention:
      return Rank(layer.input, 2) && layer.attrs.heads >= 1 &&
                     layer.input.dims[1] % layer.attrs.heads == 0
                 ? ""
                 : "a {T,D} input and heads dividing D";
    case LayerKind::kTransformerFeedForward:
    case LayerKind::kTransformerPooler:
      return Rank(layer.input, 2) ? "" : "a {T,D} input";
    case LayerKind::kSoftmaxCrossEntropy:
      // Labels are one per sample, so the loss reads one row of class scores per sample.
      return Rank(layer.input, 1) ? "" : "a {classes} input (one row of logits per sample)";
    default:
      return "";
  }
}

std::shared_ptr<LayerModule> MakeOfKind(const Layer& layer, const InitScope& init) {
  switch (layer.kind) {
    case LayerKind::kConv2d:
      return MakeConv2d(layer, init);
    case LayerKind::kLinear:
      return MakeLinear(layer, init);
    case LayerKind::kBatchNorm2d:
    case LayerKind::kLayerNorm:
      return MakeNorm(layer);
    case LayerKind::kDropout:
      return MakeDropout(layer, init);
    case LayerKind::kSoftmaxCrossEntropy:
      return MakeSoftmaxCrossEntropy(layer);
    case LayerKind::kResNetBottleneck:
      return MakeResNetBottleneck(layer, init);
    case LayerKind::kEmbedding:
      return MakeEmbedding(layer, init);
    case LayerKind::kTransformerAttention:
      return MakeTransformerAttention(layer, init);
    case LayerKind::kTransformerFeedForward:
      return MakeTransformerFeedForward(layer, init);
    case LayerKind::kTransformerPooler:
      return MakeTransformerPooler(layer, init);
    case LayerKind::kOpaque:
      return nullptr;  // MakeLayerModule rejects it first
    default:           // relu, gelu, pools, flatten, concat, add
      return MakeFunctional(layer);
  }
}

std::int64_t CountParameters(const torch::nn::Module& module) {
  std::int64_t count = 0;
  for (const torch::Tensor& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace

std::string LayerWhere(const planner::ModelGraph& graph, const Layer& layer) {
  return absl::StrCat("layer '", layer.name, "' of model '", graph.name(), "'");
}

absl::StatusOr<std::shared_ptr<LayerModule>> MakeLayerModule(const planner::ModelGraph& graph,
                                                             const Layer& layer,
                                                             std::uint64_t seed) {
  const std::string where = LayerWhere(graph, layer);
  if (layer.kind == LayerKind::kOpaque) {
    const std::string type = layer.opaque_type.empty() ? "opaque" : layer.opaque_type;
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has type '", type, "', which the runtime cannot execute"));
  }
  const std::string kind(planner::LayerKindName(layer.kind));
  if (const std::string missing = MissingFields(layer); !missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": a ", kind, " needs ", missing,
                                                   "; got input ", layer.input.ToString(),
                                                   ", output ", layer.output.ToString()));
  }
  std::shared_ptr<LayerModule> module;
  try {
    module = MakeOfKind(layer, InitScope(seed, layer.name));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": LibTorch cannot build this ", kind,
                                                   ": ", e.what_without_backtrace()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(where, ": out of memory allocating its ", layer.params, " parameters"));
  }
  const std::int64_t count = CountParameters(*module);
  if (count != layer.params) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the runtime's ", kind, " has ", count,
                                                   " parameters, the graph says ", layer.params));
  }
  return module;
}

}  // namespace wavepool::runtime::internal
