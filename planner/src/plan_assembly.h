// Turns a searched assignment into the Plan document the runtime executes: stages, the sample
// transfers between them, their gradient all-reduces, memory per GPU and the predictions.
#ifndef WAVEPOOL_PLANNER_SRC_PLAN_ASSEMBLY_H_
#define WAVEPOOL_PLANNER_SRC_PLAN_ASSEMBLY_H_

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/burst_evaluate.h"
#include "wavepool/planner/burst_problem.h"
#include "wavepool/planner/planner.h"

namespace wavepool::planner {

// The parts of a Plan that follow from an evaluated assignment. Stages are maximal runs of layers,
// in execution order, on the same GPUs; the branches of a fork that run side by side get stages
// of their own. Fills stages, transfers, sync_groups, gpus and predictions (not the
// strategy, waves or data movement).
api::Plan AssembleBurstPlan(const PlanContext& context, const PlanRequest& request,
                            const BurstProblem& problem, const BurstAssignment& assignment,
                            const BurstEvaluation& evaluation);

// A model-parallel plan (wavelet-tick-tock §3.3): stage s on rank s with the whole batch, the
// waves of `analysis` crossing the stages one after another. Fills stages, transfers, gpus,
// waves and predictions.
api::Plan AssembleModelParallelPlan(const PlanContext& context, const PlanRequest& request,
                                    const std::vector<LayerId>& stage_starts,
                                    const ModelParallelWavesAnalysis& analysis);

// The most memory any GPU of the plan holds: weights, gradients and optimizer state of every layer
// it runs, and the activations of its share of the samples.
Bytes MaxMemoryPerGpu(const PlanContext& context, const PlanRequest& request,
                      const BurstProblem& problem, const BurstAssignment& assignment,
                      const BurstEvaluation& evaluation);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_SRC_PLAN_ASSEMBLY_H_
