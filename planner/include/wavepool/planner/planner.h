// The planner's front door: a model, a device and a job's request in, the Plan the runtime will
// execute out, with every prediction behind the decision (burst-parallel search, data-parallel
// baseline, ParaDL oracle ranking, tick-tock and data-movement analyses).
#ifndef WAVEPOOL_PLANNER_PLANNER_H_
#define WAVEPOOL_PLANNER_PLANNER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/burst_evaluate.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/data_movement.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/oracle.h"
#include "wavepool/planner/ticktock.h"

namespace wavepool::planner {

// What a job asks for (the planning half of a TrainingJob's spec).
struct PlanRequest {
  std::string job;  // "namespace/name", or empty outside a cluster
  int gpus = 1;
  std::int64_t global_batch = 1;
  double amplification_limit = 2.0;
  api::GpuCounts gpu_counts = api::GpuCounts::kPowersOfTwo;
  api::Strategy strategy = api::Strategy::kAuto;
  api::Toggle tick_tock = api::Toggle::kAuto;
  api::Toggle cpu_split = api::Toggle::kAuto;
  api::Toggle preload = api::Toggle::kAuto;
  api::Toggle weight_compression = api::Toggle::kAuto;
  api::Optimizer optimizer = api::Optimizer::kSgd;  // its state per parameter: OptimizerMoments
  std::int64_t dataset_samples = 1'280'000;         // for per-epoch predictions
  Seconds amplification_exempt_below = Microseconds(300);
};

// The optimizer state each parameter keeps, in items of kBytesPerItem (memory_timeline.h): SGD
// (with momentum, as the workers train) 1, Adam and AdamW 2 (first and second moments). Every
// memory figure of a plan counts the optimizer through this one mapping.
int OptimizerMoments(api::Optimizer optimizer);

// What the planner plans on. Borrowed: everything must outlive the MakePlan call.
struct PlanContext {
  const ModelGraph& model;
  const DeviceSpec& device;
  const ComputeCostModel& compute;
  const CommModel& comm;
};

// A plan of the burst search counted the way the Plan's predictions count it, so that candidates
// compare with the plan and with each other.
struct CandidateFigures {
  int gpus = 0;              // GPUs it uses
  Seconds iteration{0};      // the search's iteration (compute, all-reduces, transfers) + input
  Seconds compute{0};        // compute on its critical path
  Seconds input{0};          // the input copy left on its critical path (data_movement.h)
  double gpu_seconds = 0;    // GPU time per iteration: sum over layers of work x GPUs
  Bytes memory_per_gpu = 0;  // the busiest GPU's weights, gradients, optimizer state, activations
                             // and input batch (MaxMemoryPerGpu), as the plan's figure
  bool fits_memory = true;   // memory_per_gpu within the device's memory less the reserve

  // GPU time per iteration its GPUs leave idle: gpus x iteration - gpu_seconds.
  double IdleGpuSeconds() const;
};

struct PlanReport {
  api::Plan plan;
  // The burst-parallel optimum and the data-parallel plan on every GPU, both under the burst
  // search's cost model (so their times compare directly). When the optimum did not fit the
  // device, `burst` is the optimum among plans that fit (memory_bound_gpus below).
  BurstEvaluation burst;
  BurstEvaluation data_parallel;
  CandidateFigures burst_figures;          // `burst`, counted as the plan is
  CandidateFigures data_parallel_figures;  // `data_parallel`, likewise
  // Set when the search's optimum needed more memory than the device has: the search was re-run
  // with every layer on at least this many GPUs (the smallest GPU count whose per-GPU batch fits),
  // and `unbounded_burst` keeps the optimum that did not fit. 0 and nullopt otherwise.
  int memory_bound_gpus = 0;
  std::optional<CandidateFigures> unbounded_burst;
  // The plan's input copy per iteration (host to GPUs, and the scatter from GPU 0 without the CPU
  // split) and the part of it left on the critical path; predictions.iteration_seconds and
  // communication_seconds include the latter (pre-loading hides the rest behind compute).
  Seconds input_copy{0};
  Seconds input_exposed{0};
  std::vector<int> burst_gpus;     // GPUs per layer in the burst plan, by LayerId
  std::vector<Prediction> oracle;  // ParaDL strategies, ranked
  std::optional<TickTockAnalysis> tick_tock;
  std::optional<ModelParallelWavesAnalysis> model_parallel;
  std::optional<DataMovementReport> data_movement;
  std::string compute_source;          // ComputeCostModel::Description()
  std::vector<std::string> decisions;  // why the strategy and switches were chosen, for people
};

// Plans one job. When the burst search's optimum (strategy Auto or BurstParallel) needs more
// memory than the device has, the search is re-run on GPU counts whose per-GPU batch fits (the
// amplification limit lifted if no plan meets it there), and only when no count fits is the model
// split into model-parallel stages (Auto); `decisions` says which. The predicted iteration counts
// compute, gradient all-reduces, sample transfers and the input copy left on the critical path.
// InvalidArgument names a bad request field, or the model and batch of a job whose activations
// and parameter state pass 1 EiB (beyond the planner's 64-bit byte counts and any cluster's
// memory), or the layer where the burst search's times pass its range; FailedPrecondition explains
// a request that cannot be planned: a global batch smaller than the GPUs, a model whose plan does
// not fit the device's memory, a strategy forced on that cannot work (tick-tock waves that do not
// fit).
absl::StatusOr<PlanReport> MakePlan(const PlanContext& context, const PlanRequest& request);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_PLANNER_H_
