// Turns a searched assignment into the Plan document the runtime executes: stages, the sample
// transfers between them, their gradient all-reduces, memory per GPU and the predictions.
#ifndef WAVEPOOL_PLANNER_SRC_PLAN_PLAN_ASSEMBLY_H_
#define WAVEPOOL_PLANNER_SRC_PLAN_PLAN_ASSEMBLY_H_

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/burst_evaluate.h"
#include "wavepool/planner/burst_problem.h"
#include "wavepool/planner/planner.h"
#include "wavepool/planner/ticktock.h"

namespace wavepool::planner {

// The parts of a Plan that follow from an evaluated assignment. Stages are maximal runs of layers,
// in execution order, on the same GPUs; the branches of a fork that run side by side get stages
// of their own. Fills stages, transfers, sync_groups, gpus and predictions (not the
// strategy, waves or data movement).
api::Plan AssembleBurstPlan(const PlanContext& context, const PlanRequest& request,
                            const BurstProblem& problem, const BurstAssignment& assignment,
                            const BurstEvaluation& evaluation);

// A model-parallel plan (wavelet-tick-tock §3.3): stage s on rank s with the whole batch (the
// tick wave's GPUs), the 1 + analysis.tock_waves waves placed as `placement` says (the runtime
// maps each wave's stages to GPUs from plan.wave_placement). Round-robin keeps a replica of
// stage s on every GPU (s + w) mod N that runs it, so the plan gets one gradient all-reduce per
// stage over those GPUs (§3.3.3); stationary waves accumulate on one GPU and need none. Fills
// stages, transfers, sync groups, gpus, waves, wave placement and predictions (memory and
// compute from `analysis`, which must be of `placement`).
api::Plan AssembleModelParallelPlan(const PlanContext& context, const PlanRequest& request,
                                    const std::vector<LayerId>& stage_starts,
                                    const ModelParallelWavesAnalysis& analysis,
                                    WavePlacement placement);

// The most memory any GPU of the plan holds: weights, gradients and optimizer state of every layer
// it runs, and the activations of its share of the samples.
Bytes MaxMemoryPerGpu(const PlanContext& context, const PlanRequest& request,
                      const BurstProblem& problem, const BurstAssignment& assignment,
                      const BurstEvaluation& evaluation);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_SRC_PLAN_PLAN_ASSEMBLY_H_
