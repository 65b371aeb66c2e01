// Plan (wavepool.dev/v1alpha1, kind Plan): how one job trains, as the controller hands it to the
// workers through a ConfigMap and `wavepool plan --json` prints it. A plan is a list of stages in
// execution order; each stage runs some consecutive layers on a set of GPU ranks with a per-GPU
// batch (deeppool-burst-parallel §4), optionally in several waves offset in time
// (wavelet-tick-tock §3). Samples move between stages whose GPU counts differ (transfers) and
// each stage all-reduces its gradients (sync groups).
//
// Unlike TrainingJob, every field is always written: the plan is a machine-made document.
// All types are plain values: copyable, not synchronised.
#ifndef WAVEPOOL_API_PLAN_H_
#define WAVEPOOL_API_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/enums.h"

namespace wavepool::api {

inline constexpr std::string_view kPlanKind = "Plan";

struct PlanStage {
  std::int64_t index = 0;                // Position in Plan::stages.
  std::vector<std::string> layers;       // Layer names, in execution order.
  std::int64_t gpus = 1;                 // Number of GPUs the stage runs on.
  std::vector<std::int64_t> ranks;       // GPU ranks in [0, Plan::gpus), ascending, size == gpus.
  std::int64_t per_gpu_batch = 1;        // Samples per GPU per iteration.
  std::vector<std::int64_t> depends_on;  // Earlier stages it waits for.
  std::vector<std::int64_t> concurrent_with;  // Stages running at the same time on other ranks.
  double predicted_seconds = 0;               // Forward + backward, per iteration.
};

// Activations of `samples` samples moving from one stage's GPUs to the next's
// (deeppool-burst-parallel §4.2: bytes = 4 x elements that change GPU).
struct SampleTransfer {
  std::int64_t from_stage = 0;
  std::int64_t to_stage = 0;
  std::int64_t bytes_per_sample = 0;
  std::int64_t samples = 0;
  double predicted_seconds = 0;  // Forward and backward together.
};

// The gradient all-reduce of one stage.
struct SyncGroup {
  std::int64_t stage = 0;
  std::vector<std::int64_t> ranks;  // Ascending, in [0, Plan::gpus).
  std::int64_t bytes = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  double predicted_seconds = 0;
};

// The resolved data-movement decisions (scalednn-data-movement).
struct DataMovementDecision {
  bool cpu_split = false;
  bool preload = false;
  bool weight_compression = false;
};

struct PlanPredictions {
  double iteration_seconds = 0;
  double compute_seconds = 0;
  double communication_seconds = 0;
  double gpu_seconds = 0;    // Sum over GPUs of busy time per iteration.
  double amplification = 0;  // gpu_seconds over the one-GPU iteration time.
  std::int64_t memory_per_gpu_bytes = 0;
  double background_idle_gpu_seconds = 0;  // GPU time per iteration left for background jobs.
  double samples_per_second = 0;
};

// How the workers train, copied from the TrainingJob's spec by the controller (or from the flags
// of `wavepool plan`), so that a worker needs nothing but its Plan. Absent from older plans: then
// every field keeps its default.
struct PlanTraining {
  Optimizer optimizer = Optimizer::kSgd;  // SGD with momentum 0.9; Adam and AdamW as in PyTorch.
  double learning_rate = 0.01;
  // Optimizer steps the job runs; 0 when the plan was made without a step count (the worker then
  // needs --steps).
  std::int64_t steps = 0;
  // Seeds the initial weights, the synthetic data and the order the samples are read in.
  std::int64_t seed = 0;
  std::int64_t checkpoint_interval_steps = 0;  // 0: not by steps
  double checkpoint_interval_seconds = 0;      // 0: not by time
  // The samples of one epoch (the job's spec.datasetSamples), 0 when not given. The workers'
  // synthetic data then holds this many samples, and a dataset of another size is refused: the
  // steps were counted from it, so the job's epochs would not be epochs.
  std::int64_t dataset_samples = 0;
};

struct Plan {
  std::string job;  // "namespace/name"; empty for a plan made outside a cluster.
  std::string model;
  std::string device;
  Strategy strategy = Strategy::kDataParallel;  // Never kAuto.
  std::int64_t global_batch_size = 1;
  std::int64_t gpus = 1;  // GPUs the plan uses; ranks are in [0, gpus).
  double amplification_limit = 2.0;
  GpuCounts gpu_counts = GpuCounts::kPowersOfTwo;
  // 1 or 2 (tick-tock); up to gpus for model-parallel waves. In a wave plan every wave trains on
  // its own global_batch_size samples (wavelet-tick-tock §3).
  std::int64_t waves = 1;
  double wave_offset_fraction = 0;  // In [0, 1) of an iteration; 0.5 for tick-tock.
  // ModelParallelWaves only: where each wave runs each stage.
  WavePlacement wave_placement = WavePlacement::kStationary;
  std::vector<PlanStage> stages;
  std::vector<SampleTransfer> transfers;
  std::vector<SyncGroup> sync_groups;
  DataMovementDecision data_movement;
  PlanPredictions predictions;
  PlanTraining training;
  // The model's layer table (planner/layer_table.h) when `model` is not a built-in model; empty
  // otherwise. The workers build the model from it, so that plan and model cannot disagree.
  std::string layer_table;

  // Strict: apiVersion wavepool.dev/v1alpha1, kind Plan, strategy, globalBatchSize, gpus and
  // stages are required; an unknown field is an error naming its path. Does not validate.
  // wavePlacement, training and layerTable may be absent (plans written before them).
  static absl::StatusOr<Plan> FromJson(const nlohmann::json& json);
};

nlohmann::json ToJson(const Plan& plan);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_PLAN_H_
