// Which layers each model split divides, the per-layer sizes the oracle counts, and the
// bookkeeping shared by every strategy.
#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "oracle/oracle_internal.h"

namespace wavepool::planner::oracle_internal {
namespace {

bool IsChannelMixing(const Layer& layer) {
  return layer.kind == LayerKind::kConv2d || layer.kind == LayerKind::kLinear;
}

// Weight items of a convolution or linear layer without its bias (and fused BatchNorm): the
// part channel parallelism divides.
std::int64_t KernelItems(const Layer& layer) {
  std::int64_t items = layer.in_channels * layer.out_channels;
  if (layer.kind == LayerKind::kConv2d) {
    items = layer.in_channels / std::max(layer.window.groups, 1) * layer.out_channels *
            layer.window.kernel_h * layer.window.kernel_w;
  }
  return std::clamp<std::int64_t>(items, 0, layer.params);
}

// paradl-oracle §3.3: filter parallelism splits F (and the bias with it); channel parallelism
// splits C, so the bias is added once after the all-reduce and stays whole.
Split PlanChannelMixing(SplitKind kind, const ModelGraph& model, int p2) {
  Split split;
  split.kind = kind;
  split.p2 = p2;
  split.split.assign(static_cast<size_t>(model.size()), false);
  split.sharded_params.assign(static_cast<size_t>(model.size()), 0);
  const bool filter = kind == SplitKind::kFilter;
  const Layer* narrowest = nullptr;
  for (const Layer& layer : model.layers()) {
    if (!IsChannelMixing(layer) || (!filter && layer.inputs.empty())) continue;
    const std::int64_t width = filter ? layer.out_channels : layer.in_channels;
    split.split[static_cast<size_t>(layer.id)] = true;
    split.sharded_params[static_cast<size_t>(layer.id)] =
        filter ? layer.params : KernelItems(layer);
    const std::int64_t narrowest_width =
        narrowest == nullptr ? std::numeric_limits<std::int64_t>::max()
                             : (filter ? narrowest->out_channels : narrowest->in_channels);
    if (width < narrowest_width) narrowest = &layer;
  }
  if (p2 <= 1) return split;
  if (narrowest == nullptr) {
    split.infeasible_reason = filter ? "the model has no convolution or linear layer to split"
                                     : "the model has no convolution or linear layer past the "
                                       "input layers to split";
    return split;
  }
  const std::int64_t width = filter ? narrowest->out_channels : narrowest->in_channels;
  if (p2 > width) {
    split.infeasible_reason = absl::StrCat("a split over ", p2, " GPUs exceeds the ", width,
                                           filter ? " filters" : " input channels", " of layer ",
                                           narrowest->name, " (the smallest split layer)");
  }
  return split;
}

// Why `layer` cannot be split by rows over p2 GPUs, or "" when it can.
std::string SpatialObstacle(const Layer& layer, int p2) {
  if (layer.input.dims.size() != 3 || layer.output.dims.size() != 3) {
    return absl::StrCat("layer ", layer.name,
                        " is not a (C,H,W) layer and cannot be split by rows");
  }
  const std::int64_t rows_in = layer.input.dims[1];
  const std::int64_t rows_out = layer.output.dims[1];
  if (rows_out < p2) {
    return absl::StrCat("layer ", layer.name, " has ", rows_out, " output rows, fewer than ", p2,
                        " GPUs");
  }
  const int halo = HaloRows(layer);
  if (rows_in / p2 < std::max(1, halo)) {
    return absl::StrCat("layer ", layer.name, " has ", rows_in, " input rows: ", p2, " GPUs leave ",
                        rows_in / p2, " rows each, fewer than max(1, its halo of ", halo, ")");
  }
  return "";
}

// paradl-oracle §4.5.1: the spatial split covers the first layers "until adequate parallelism is
// exposed"; here, as far as every GPU keeps whole rows and its halo.
Split PlanSpatial(const ModelGraph& model, int p2) {
  Split split;
  split.kind = SplitKind::kSpatial;
  split.p2 = p2;
  split.split.assign(static_cast<size_t>(model.size()), false);
  split.sharded_params.assign(static_cast<size_t>(model.size()), 0);
  for (const Layer& layer : model.layers()) {
    const std::string obstacle = SpatialObstacle(layer, p2);
    if (!obstacle.empty()) {
      if (layer.id == 0 && p2 > 1) split.infeasible_reason = obstacle;
      break;
    }
    split.split[static_cast<size_t>(layer.id)] = true;
  }
  return split;
}

}  // namespace

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::int64_t InputItems(const ModelGraph& model, const Layer& layer) {
  if (layer.inputs.empty()) return model.input_shape().Elements();
  std::int64_t items = 0;
  for (LayerId in : layer.inputs) items += model.layer(in).output.Elements();
  return items;
}

std::int64_t StoredItems(const ModelGraph& model, const Layer& layer, bool reuse) {
  if (reuse && layer.reuses_input_memory) return 0;
  return InputItems(model, layer) + layer.output.Elements() + layer.internal_activation_items;
}

int HaloRows(const Layer& layer) {
  return layer.window.kernel_h > 1 ? (layer.window.kernel_h - 1) / 2 : 0;
}

int Split::SplitCount() const {
  return static_cast<int>(std::count(split.begin(), split.end(), true));
}

Split PlanSplit(SplitKind kind, const ModelGraph& model, int p2) {
  switch (kind) {
    case SplitKind::kFilter:
    case SplitKind::kChannel:
      return PlanChannelMixing(kind, model, p2);
    case SplitKind::kSpatial:
      return PlanSpatial(model, p2);
    case SplitKind::kNone:
      break;
  }
  Split none;
  none.split.assign(static_cast<size_t>(model.size()), false);
  none.sharded_params.assign(static_cast<size_t>(model.size()), 0);
  return none;
}

Prediction Infeasible(Strategy strategy, const OracleConfig& config, std::string reason) {
  Prediction prediction;
  prediction.strategy = strategy;
  prediction.gpus = config.gpus;
  prediction.global_batch = config.global_batch;
  prediction.feasible = false;
  prediction.infeasible_reason =
      absl::StrCat(std::string(StrategyName(strategy)), ": ", std::move(reason));
  return prediction;
}

void Finish(const OracleConfig& config, Prediction& prediction) {
  auto sum = [](const std::vector<std::pair<std::string, Seconds>>& parts) {
    Seconds total(0);
    for (const auto& part : parts) total += part.second;
    return total;
  };
  prediction.compute_per_iteration = sum(prediction.compute_parts);
  prediction.communication_per_iteration = sum(prediction.communication_parts);
  prediction.iteration = prediction.compute_per_iteration + prediction.communication_per_iteration;
  prediction.iterations_per_epoch = CeilDiv(config.dataset_samples, config.global_batch);
  const double iterations = static_cast<double>(prediction.iterations_per_epoch);
  prediction.compute_per_epoch = iterations * prediction.compute_per_iteration;
  prediction.communication_per_epoch = iterations * prediction.communication_per_iteration;
  prediction.epoch = iterations * prediction.iteration;
  prediction.memory_per_gpu = prediction.memory.Total();
  prediction.fits_memory = prediction.feasible && prediction.memory_per_gpu <= config.device_memory;
}

}  // namespace wavepool::planner::oracle_internal
