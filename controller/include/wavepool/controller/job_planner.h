// Planning a TrainingJob in the cluster: the planner's one front door (planner/plan_pipeline.h)
// fed from the job's spec, the GPU model its pods will run on, and the layer table / profile
// ConfigMaps it references. Local mode and the simulator plan their jobs here too.
// Pure: the reconciler fetches the ConfigMaps and picks the device, this file turns them into a
// Plan, so the same job and inputs always give the same Plan (a restarted controller re-plans
// identically; the Plan ConfigMap's hash does not change).
#ifndef WAVEPOOL_CONTROLLER_JOB_PLANNER_H_
#define WAVEPOOL_CONTROLLER_JOB_PLANNER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/training_job.h"
#include "wavepool/planner/units.h"

namespace wavepool::controller {

// What planning needs besides the job.
struct PlanInputs {
  // The planner's device name ("h100", "a100", ...): see PlanningDevice.
  std::string device;
  // The text of spec.model.layerTable's ConfigMap key (CSV); nullopt when the spec has none.
  std::optional<std::string> layer_table;
  // The text of spec.model.profile's ConfigMap key (CSV); nullopt when the spec has none.
  std::optional<std::string> profile;
};

struct JobPlan {
  api::Plan plan;
  api::PlanSummary summary;  // For status.plan.
  // Memory each GPU needs (the plan's per-GPU peak), for placement.
  planner::Bytes memory_per_gpu_bytes = 0;
  // Share of its GPU time the plan leaves idle, in [0, 1] (IdleFraction of its predictions).
  double idle_fraction = 0;
  // One line for the Planned condition's message, e.g. "BurstParallel on 8 GPUs, 0.125 s per
  // iteration, 12.0 GiB per GPU".
  std::string description;
};

// The planner's catalog device name for a GPU model as NVML reports it ("NVIDIA H100 80GB HBM3"
// -> "h100", "NVIDIA A100-SXM4-80GB" -> "a100-40gb"); NotFound naming the model and the known
// devices otherwise.
absl::StatusOr<std::string> DeviceForGpuModel(std::string_view gpu_model);

// The device to plan for: the most common GPU model among `nodes` that maps to a known device
// (ties: the device name that sorts first); `fallback` when no GPU maps to one.
std::string PlanningDevice(const std::vector<api::GpuNode>& nodes, std::string_view fallback);

// How the workers of `job` train under `plan` (plan.training): spec.optimizer and
// spec.learningRate as they are, seed 0 (the spec has no field for it), and the step counts
// converted so that the job sees the samples its spec asks for whatever the plan's strategy:
//   samples the job trains  N = spec.steps x spec.globalBatchSize, or
//                               spec.epochs x spec.datasetSamples
//   samples of one plan step S = plan.globalBatchSize, x plan.waves for ModelParallelWaves (one
//                               batch per wave per step); tick-tock's global iterations train
//                               one wave's batch each, so S is the global batch there too
//   steps = ceil(N / S)
// spec.checkpoint.intervalSteps (steps of spec.globalBatchSize samples) converts the same way,
// to at least 1; intervalSeconds is copied. InvalidArgument naming the field for a spec
// without exactly one of steps/epochs (or epochs without datasetSamples), or a sample count past
// 2^63.
// REQUIRES: plan.global_batch_size >= 1 and plan.waves >= 1.
absl::StatusOr<api::PlanTraining> TrainingFor(const api::TrainingJob& job, const api::Plan& plan);

// Plans `job` (defaulted and valid: api::SetDefaults and api::Validate passed). The Plan carries
// TrainingFor(job, plan) and, for a job whose model is a layer table, the table's text
// (plan.layer_table), so that a worker needs nothing but its Plan.
// FailedPrecondition / InvalidArgument as planner::PlanFromSources returns them, with the job's
// field named where one is at fault (e.g. "spec.model.layerTable: line 3: ...",
// "spec.globalBatchSize: global batch 4 is smaller ..."); FailedPrecondition naming
// spec.model.layerTable or spec.model.profile when the spec references a ConfigMap whose text
// `inputs` lacks; NotFound for an unknown device or built-in model (spec.model.name).
absl::StatusOr<JobPlan> PlanJob(const api::TrainingJob& job, const PlanInputs& inputs);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_JOB_PLANNER_H_
