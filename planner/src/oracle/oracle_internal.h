// Pieces of the ParaDL oracle shared by its source files (not part of the public API).
#ifndef WAVEPOOL_PLANNER_SRC_ORACLE_ORACLE_INTERNAL_H_
#define WAVEPOOL_PLANNER_SRC_ORACLE_ORACLE_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/oracle.h"

namespace wavepool::planner::oracle_internal {

// What one prediction reads; borrowed for the duration of the call.
struct Context {
  const ModelGraph& model;
  const ComputeCostModel& cost;
  const CommModel& comm;
  const OracleConfig& config;
};

std::int64_t CeilDiv(std::int64_t a, std::int64_t b);

// |x| of a layer per sample: the sum of its inputs' outputs (the model input for the first).
std::int64_t InputItems(const ModelGraph& model, const Layer& layer);
// Activation items a layer stores per sample: |x| + |y| + its internal activations, or 0 for an
// in-place layer when `reuse` (paradl-oracle §4.2, the memory reuse factor).
std::int64_t StoredItems(const ModelGraph& model, const Layer& layer, bool reuse);
// Rows a spatially split layer needs from each neighbour: (K - 1) / 2 for a window K > 1.
int HaloRows(const Layer& layer);

// How a model-split group of p2 GPUs divides the layers.
enum class SplitKind { kNone, kFilter, kChannel, kSpatial };

struct Split {
  SplitKind kind = SplitKind::kNone;
  int p2 = 1;
  std::vector<bool> split;                   // per layer: its work is divided by p2
  std::vector<std::int64_t> sharded_params;  // per layer: items each GPU holds 1/p2 of
  std::string infeasible_reason;             // empty when the split is possible

  int SplitCount() const;
};

// Filter: every convolution and linear layer (F divided). Channel: those not reading the model
// input (C divided; a layer reading the model input runs whole on every GPU, as in the paper's
// implementation). Spatial: the longest prefix, in topological order, of (C,H,W) layers whose
// rows divide into at least max(1, halo) input rows and 1 output row per GPU.
Split PlanSplit(SplitKind kind, const ModelGraph& model, int p2);

// The grid strategies: p1 data-parallel groups of p2 GPUs that split the model as `kind`
// (data: kNone with p2 = 1; filter, channel, spatial: p1 = 1).
struct Grid {
  Strategy strategy = Strategy::kData;
  SplitKind kind = SplitKind::kNone;
  int p1 = 1;
  int p2 = 1;
};
Prediction PredictGrid(const Grid& grid, const Context& context);

// GPipe over config.gpus stages and config.pipeline_microbatches micro-batches.
Prediction PredictPipeline(const Context& context);

// A prediction with only the identity fields set and the reason.
Prediction Infeasible(Strategy strategy, const OracleConfig& config, std::string reason);
// Fills the totals, the epoch figures and fits_memory from the parts and the memory.
void Finish(const OracleConfig& config, Prediction& prediction);

}  // namespace wavepool::planner::oracle_internal

#endif  // WAVEPOOL_PLANNER_SRC_ORACLE_ORACLE_INTERNAL_H_
