// Data, filter, channel and spatial parallelism and their hybrids with data parallelism: p1
// data-parallel groups of p2 GPUs each (paradl-oracle §3.1-3.3, §3.5, Appendix A.1, Table 3).
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "oracle/oracle_internal.h"

namespace wavepool::planner::oracle_internal {
namespace {

using Parts = std::vector<std::pair<std::string, Seconds>>;

std::string_view KindName(SplitKind kind) {
  switch (kind) {
    case SplitKind::kFilter:
      return "filter";
    case SplitKind::kChannel:
      return "channel";
    case SplitKind::kSpatial:
      return "spatial";
    case SplitKind::kNone:
      break;
  }
  return "none";
}

// Per-GPU forward and backward time: the split layers' time divided by p2, the others whole
// (they run redundantly on every GPU of the group, as in the paper's Table 4).
Parts ComputeParts(const Context& context, const Split& split, std::int64_t group_batch) {
  Seconds forward(0), backward(0);
  for (const Layer& layer : context.model.layers()) {
    const LayerTime time = context.cost.Time(layer, group_batch);
    const double share = split.split[static_cast<size_t>(layer.id)] ? 1.0 / split.p2 : 1.0;
    forward += time.forward * share;
    backward += time.backward * share;
  }
  return {{"forward", forward}, {"backward", backward}};
}

// paradl-oracle §3.3, eq. (15) and (19). Filter: all-gather the output (forward), all-reduce
// the input gradient (backward). Channel: all-reduce the partial output (forward), all-gather the
// input-gradient slices (backward). A layer reading the model input needs no input gradient.
void AddChannelMixingComm(const Context& context, const Split& split, std::int64_t group_batch,
                          Parts& parts) {
  const bool filter = split.kind == SplitKind::kFilter;
  Seconds forward(0), backward(0);
  for (const Layer& layer : context.model.layers()) {
    if (!split.split[static_cast<size_t>(layer.id)]) continue;
    const Bytes y = group_batch * layer.output.Elements() * kBytesPerItem;
    const Bytes x =
        layer.inputs.empty() ? 0 : group_batch * InputItems(context.model, layer) * kBytesPerItem;
    forward +=
        filter ? context.comm.AllGather(y, split.p2) : context.comm.FlatAllReduce(y, split.p2);
    backward +=
        filter ? context.comm.FlatAllReduce(x, split.p2) : context.comm.AllGather(x, split.p2);
  }
  if (filter) {
    parts.emplace_back("activation all-gather (forward)", forward);
    parts.emplace_back("input-gradient all-reduce (backward)", backward);
  } else {
    parts.emplace_back("activation all-reduce (forward)", forward);
    parts.emplace_back("input-gradient all-gather (backward)", backward);
  }
}

// paradl-oracle §3.2, eq. (10): every split layer with a window K > 1 swaps (K-1)/2 rows of its
// input (forward) and of its output gradient (backward) with each of its two neighbours, one
// after the other. Where the split ends, the outputs that leave it are all-gathered once.
void AddSpatialComm(const Context& context, const Split& split, std::int64_t group_batch,
                    Parts& parts) {
  const bool cross = context.comm.CrossesNodes(split.p2);
  Seconds halo(0), gather(0);
  for (const Layer& layer : context.model.layers()) {
    if (!split.split[static_cast<size_t>(layer.id)]) continue;
    const int rows = HaloRows(layer);
    if (rows > 0 && split.p2 > 1) {
      const auto& in = layer.input.dims;
      const auto& out = layer.output.dims;
      const Bytes forward = group_batch * rows * in[0] * in[2] * kBytesPerItem;
      const Bytes backward = group_batch * rows * out[0] * out[2] * kBytesPerItem;
      halo += 2.0 * (context.comm.PointToPoint(forward, cross) +
                     context.comm.PointToPoint(backward, cross));
    }
    const auto& next = context.model.successors(layer.id);
    const bool leaves = std::any_of(next.begin(), next.end(), [&](LayerId id) {
      return !split.split[static_cast<size_t>(id)];
    });
    if (leaves) {
      gather +=
          context.comm.AllGather(group_batch * layer.output.Elements() * kBytesPerItem, split.p2);
    }
  }
  parts.emplace_back("halo exchange", halo);
  parts.emplace_back("activation all-gather (split end)", gather);
}

// Pure data parallelism: the flat ring over all p GPUs of paradl-oracle eq. (6), or, when p fills
// whole nodes, the hierarchical exchange the hybrids use (reduce-scatter inside each node, one
// segmented all-reduce per GPU across the nodes, all-gather inside each node), whichever is
// cheaper. The flat ring crosses each node once and so uses one NIC; the segments use them all,
// as NCCL's multi-channel rings do.
void AddDataGradientComm(const Context& context, Bytes bytes, int p, Parts& parts) {
  const CommModel& comm = context.comm;
  const Seconds flat = comm.FlatAllReduce(bytes, p);
  const int g = comm.network().gpus_per_node;
  if (g > 1 && p > g && p % g == 0) {
    const Seconds scatter = comm.ReduceScatter(bytes, g);
    const Seconds across = comm.FlatAllReduce(CeilDiv(bytes, g), p / g, GroupLayout{g, g});
    const Seconds gather = comm.AllGather(bytes, g);
    if (scatter + across + gather < flat) {
      parts.emplace_back("gradient reduce-scatter (node)", scatter);
      parts.emplace_back("gradient all-reduce (across nodes)", across);
      parts.emplace_back("gradient all-gather (node)", gather);
      return;
    }
  }
  parts.emplace_back("gradient all-reduce", flat);
}

// Gradient exchange (paradl-oracle §3.1, §3.5, eq. (6), (22)). Sharded weights (filter/channel)
// need no exchange inside a group; spatial layers' gradients are partial sums inside it;
// replicated layers' gradients are equal inside it. Across groups the exchange is hierarchical:
// reduce-scatter inside the group (spatial), a segmented all-reduce of 1/p2 of the gradients by
// each GPU across the p1 groups (the p2 segments of a node share its NICs: the contention model),
// and an all-gather inside the group of what was not sharded.
void AddGradientComm(const Context& context, const Split& split, int p1, Parts& parts) {
  const int p2 = split.p2;
  std::int64_t partial = 0, total = 0;
  for (const Layer& layer : context.model.layers()) {
    total += layer.params;
    if (!split.split[static_cast<size_t>(layer.id)]) continue;
    partial += split.kind == SplitKind::kSpatial
                   ? layer.params
                   : split.sharded_params[static_cast<size_t>(layer.id)];
  }
  const Bytes partial_bytes = partial * kBytesPerItem;
  const Bytes all_bytes = total * kBytesPerItem;
  const bool spatial = split.kind == SplitKind::kSpatial;
  if (p1 == 1) {
    if (spatial)
      parts.emplace_back("gradient all-reduce", context.comm.FlatAllReduce(partial_bytes, p2));
    return;
  }
  if (p2 == 1) {
    AddDataGradientComm(context, all_bytes, p1, parts);
    return;
  }
  if (spatial) {
    parts.emplace_back("gradient reduce-scatter (group)",
                       context.comm.ReduceScatter(partial_bytes, p2));
  }
  const GroupLayout across{p2, std::min(p2, context.comm.network().gpus_per_node)};
  parts.emplace_back("gradient all-reduce (across groups)",
                     context.comm.FlatAllReduce(CeilDiv(all_bytes, p2), p1, across));
  const Bytes unsharded = spatial ? all_bytes : all_bytes - partial_bytes;
  parts.emplace_back("gradient all-gather (group)", context.comm.AllGather(unsharded, p2));
}

// paradl-oracle eq. (2), (8), (16), (20): 2 delta (b (|x| + |y|) + |w|) summed over the layers,
// with spatially split layers' activations and sharded weights divided by p2, plus optimizer
// state for the weights held.
MemoryBreakdown GridMemory(const Context& context, const Split& split, std::int64_t group_batch,
                           bool reuse) {
  std::int64_t activation_items = 0, weight_items = 0;
  for (const Layer& layer : context.model.layers()) {
    const size_t i = static_cast<size_t>(layer.id);
    const std::int64_t stored = group_batch * StoredItems(context.model, layer, reuse);
    const bool divided = split.split[i] && split.kind == SplitKind::kSpatial;
    activation_items += divided ? CeilDiv(stored, split.p2) : stored;
    const std::int64_t sharded = split.split[i] ? split.sharded_params[i] : 0;
    weight_items += layer.params - sharded + CeilDiv(sharded, split.p2);
  }
  MemoryBreakdown memory;
  memory.activations = 2 * activation_items * kBytesPerItem;  // tensors and their gradients
  memory.weights = weight_items * kBytesPerItem;
  memory.gradients = weight_items * kBytesPerItem;
  memory.optimizer_state = weight_items * context.config.optimizer_state_per_param * kBytesPerItem;
  return memory;
}

std::string Layout(const Grid& grid, const Split& split, int layers, std::int64_t group_batch) {
  if (grid.kind == SplitKind::kNone) {
    return absl::StrCat(grid.p1, " replicas, ", group_batch, " samples each");
  }
  const std::string divided = absl::StrCat(split.SplitCount(), " of ", layers, " layers split");
  if (grid.p1 == 1) {
    return absl::StrCat(std::string(KindName(grid.kind)), " split over ", grid.p2, " GPUs, ",
                        divided, ", ", group_batch, " samples");
  }
  return absl::StrCat(grid.p1, " groups x ", grid.p2, " GPUs (", std::string(KindName(grid.kind)),
                      "), ", divided, ", ", group_batch, " samples per group");
}

}  // namespace

Prediction PredictGrid(const Grid& grid, const Context& context) {
  const OracleConfig& config = context.config;
  if (config.global_batch < grid.p1) {
    return Infeasible(grid.strategy, config,
                      absl::StrCat("global batch ", config.global_batch, " is smaller than ",
                                   grid.p1, grid.kind == SplitKind::kNone ? " GPUs" : " groups",
                                   " (every data-parallel replica needs a sample)"));
  }
  const Split split = PlanSplit(grid.kind, context.model, grid.p2);
  if (!split.infeasible_reason.empty()) {
    return Infeasible(grid.strategy, config, split.infeasible_reason);
  }
  const std::int64_t group_batch = CeilDiv(config.global_batch, grid.p1);
  Prediction prediction;
  prediction.strategy = grid.strategy;
  prediction.gpus = config.gpus;
  prediction.global_batch = config.global_batch;
  prediction.feasible = true;
  prediction.layout = Layout(grid, split, context.model.size(), group_batch);
  prediction.compute_parts = ComputeParts(context, split, group_batch);
  if (grid.kind == SplitKind::kFilter || grid.kind == SplitKind::kChannel) {
    AddChannelMixingComm(context, split, group_batch, prediction.communication_parts);
  } else if (grid.kind == SplitKind::kSpatial) {
    AddSpatialComm(context, split, group_batch, prediction.communication_parts);
  }
  AddGradientComm(context, split, grid.p1, prediction.communication_parts);
  prediction.memory = GridMemory(context, split, group_batch, config.memory_reuse);
  const Bytes naive = GridMemory(context, split, group_batch, false).Total();
  prediction.memory_reuse_factor =
      naive > 0 ? static_cast<double>(GridMemory(context, split, group_batch, true).Total()) / naive
                : 1.0;
  Finish(config, prediction);
  return prediction;
}

}  // namespace wavepool::planner::oracle_internal
