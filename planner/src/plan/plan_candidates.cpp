#include "plan/plan_candidates.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/burst_search.h"
#include "wavepool/planner/memory_timeline.h"

namespace wavepool::planner {

double CandidateFigures::IdleGpuSeconds() const {
  return std::max(0.0, gpus * iteration.count() - gpu_seconds);
}

Bytes UniformMemoryPerGpu(const PlanContext& context, const PlanRequest& request,
                          std::int64_t shard) {
  Bytes bytes = 0;
  for (const Layer& layer : context.model.layers()) {
    bytes += ResidentStateBytes(layer.params, OptimizerMoments(request.optimizer)) +
             LayerActivationBytes(layer, shard);
    if (layer.inputs.empty()) bytes += InputBatchBytes(context.model, shard);
  }
  return bytes;
}

CandidateFigures FiguresOf(const api::Plan& plan, Bytes usable) {
  CandidateFigures figures;
  figures.gpus = static_cast<int>(plan.gpus);
  figures.iteration = Seconds(plan.predictions.iteration_seconds);
  figures.compute = Seconds(plan.predictions.compute_seconds);
  figures.gpu_seconds = plan.predictions.gpu_seconds;
  figures.memory_per_gpu = plan.predictions.memory_per_gpu_bytes;
  figures.fits_memory = figures.memory_per_gpu <= usable;
  return figures;
}

absl::StatusOr<InputCopy> EstimateInputCopy(const PlanContext& context, const PlanRequest& request,
                                            int plan_gpus, double compute_seconds,
                                            const DataMovementOption& option) {
  // One node's share of the job: its GPUs and their samples (scalednn-data-movement §II-A).
  const int node_gpus = std::max(1, std::min(plan_gpus, context.device.gpus_per_node));
  const std::int64_t node_batch =
      std::max<std::int64_t>(node_gpus, request.global_batch * node_gpus / std::max(plan_gpus, 1));
  const DataMovementRequest movement = DataMovementRequestFor(
      context.model, context.device, node_gpus, node_batch, Seconds(compute_seconds));
  const CommPeerTransfer peers(context.comm);
  WAVEPOOL_ASSIGN_OR_RETURN(DataMovementEstimate estimate,
                            EstimateDataMovement(movement, peers, option));
  // Only the input moves every iteration: the runtime all-reduces gradients, so every replica
  // updates its own weights and GPU 0 broadcasts them once, at the start (docs/runtime.md).
  return InputCopy{estimate.host_to_device + estimate.peer_to_peer,
                   estimate.exposed_host_to_device + estimate.peer_to_peer};
}

absl::StatusOr<std::optional<BoundedSearch>> SearchWithinMemory(const PlanContext& context,
                                                                const PlanRequest& request,
                                                                const BurstProblem& problem,
                                                                Bytes usable) {
  const CountSet& counts = problem.counts;
  int min_count = -1;
  for (int k = 0; k < counts.size() && min_count < 0; ++k) {
    if (UniformMemoryPerGpu(context, request, counts.shard[k]) <= usable) min_count = k;
  }
  if (min_count < 0) return std::optional<BoundedSearch>();
  BoundedSearch bounded{problem, {}, {}, counts.gpus[min_count], false};
  bounded.problem.min_count = min_count;
  absl::StatusOr<BurstSearchResult> search = SearchBurstAssignment(bounded.problem);
  if (!search.ok() && search.status().code() == absl::StatusCode::kFailedPrecondition) {
    // Every plan on that many GPUs amplifies some layer beyond the limit: a plan that runs
    // beats one that does not fit.
    bounded.problem.amp_budget_scale = std::numeric_limits<double>::infinity();
    bounded.limit_lifted = true;
    search = SearchBurstAssignment(bounded.problem);
  }
  if (!search.ok()) return search.status();
  bounded.assignment = search->assignment;
  WAVEPOOL_ASSIGN_OR_RETURN(BurstEvaluation evaluation,
                            EvaluateAssignment(bounded.problem, bounded.assignment));
  bounded.evaluation = std::move(evaluation);
  return std::optional<BoundedSearch>(std::move(bounded));
}

}  // namespace wavepool::planner
