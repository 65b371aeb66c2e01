// The burst search's candidate plans counted as a Plan counts them (iteration with the input copy,
// GPU time, the busiest GPU's memory), and the search re-run under a memory bound: MakePlan's
// fallback when the search's optimum does not fit the device.
#ifndef WAVEPOOL_PLANNER_SRC_PLAN_PLAN_CANDIDATES_H_
#define WAVEPOOL_PLANNER_SRC_PLAN_PLAN_CANDIDATES_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/burst_evaluate.h"
#include "wavepool/planner/burst_problem.h"
#include "wavepool/planner/data_movement.h"
#include "wavepool/planner/planner.h"

namespace wavepool::planner {

// Memory of one GPU that runs every layer at `shard` samples: a data-parallel plan's, as
// MaxMemoryPerGpu counts it.
Bytes UniformMemoryPerGpu(const PlanContext& context, const PlanRequest& request,
                          std::int64_t shard);

// A candidate's figures from its assembled plan (AssembleBurstPlan), without the input copy
// (input 0, iteration the plan's). `usable` is the device's memory less the reserve.
CandidateFigures FiguresOf(const api::Plan& plan, Bytes usable);

// The input copy of a plan on `plan_gpus` GPUs whose critical path computes for
// `compute_seconds`, under the data-movement `option`, priced for the GPUs of one node
// (data_movement.h): first the whole copy per iteration, then the part left on the critical path.
struct InputCopy {
  Seconds copy{0};
  Seconds exposed{0};
};
absl::StatusOr<InputCopy> EstimateInputCopy(const PlanContext& context, const PlanRequest& request,
                                            int plan_gpus, double compute_seconds,
                                            const DataMovementOption& option);

// The burst search on `problem` restricted to GPU counts whose per-GPU batch fits `usable` bytes
// on a GPU that runs every layer (the smallest fitting count and every larger one), so that any
// plan it finds fits. When no plan there meets the amplification limit the limit is lifted
// (limit_lifted). nullopt when even the largest count does not fit (the model's weights, gradients
// and optimizer state alone are too large: only splitting the model helps).
struct BoundedSearch {
  BurstProblem problem;
  BurstAssignment assignment;
  BurstEvaluation evaluation;
  int min_gpus = 0;
  bool limit_lifted = false;
};
absl::StatusOr<std::optional<BoundedSearch>> SearchWithinMemory(const PlanContext& context,
                                                                const PlanRequest& request,
                                                                const BurstProblem& problem,
                                                                Bytes usable);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_SRC_PLAN_PLAN_CANDIDATES_H_
