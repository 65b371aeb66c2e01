// TrainingJob (wavepool.dev/v1alpha1, namespaced, short name tj): one DNN training job that the
// controller plans, places on GPUs and watches. docs/api.md describes every field.
//
// Fields that carry a default are std::optional: unset means "not written by the user", and
// SetDefaults (defaults.h) fills them explicitly, as Kubernetes defaulting does; ToJson writes
// only what is set, so a decoded object re-encodes to the same document. Validate (validation.h)
// checks the rules. All types are plain values: copyable, not synchronised.
#ifndef WAVEPOOL_API_TRAINING_JOB_H_
#define WAVEPOOL_API_TRAINING_JOB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/enums.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/api/progress.h"

namespace wavepool::api {

inline constexpr std::string_view kTrainingJobKind = "TrainingJob";

// Condition types a TrainingJob's status uses.
inline constexpr std::string_view kConditionPlanned = "Planned";
inline constexpr std::string_view kConditionPlaced = "Placed";
inline constexpr std::string_view kConditionRunning = "Running";
inline constexpr std::string_view kConditionSucceeded = "Succeeded";
inline constexpr std::string_view kConditionFailed = "Failed";
inline constexpr std::string_view kConditionPreempted = "Preempted";
inline constexpr std::string_view kConditionDegraded = "Degraded";
inline constexpr std::string_view kConditionInvalid = "Invalid";

// A key of a ConfigMap in the job's namespace (a layer table or a measured profile).
struct ConfigMapKeyRef {
  std::string config_map;  // "configMap"
  std::string key;
};

// Exactly one of name and layer_table.
struct ModelSpec {
  std::optional<std::string> name;  // A built-in model ("vgg16"); the planner knows the list.
  std::optional<ConfigMapKeyRef> layer_table;
  std::optional<ConfigMapKeyRef> profile;  // Measured per-layer times (`wavepool profile`).
};

struct ParallelismSpec {
  std::optional<Strategy> strategy;           // Default kAuto.
  std::optional<double> amplification_limit;  // GPU-seconds amplification; default 2.0.
  std::optional<GpuCounts> gpu_counts;        // Default kPowersOfTwo.
  std::optional<Toggle> tick_tock;            // Default kAuto.
};

// scalednn-data-movement: CPU-centric batch split, pre-loading, 3:1 lossy weight compression.
struct DataMovementSpec {
  std::optional<Toggle> cpu_split;           // Default kAuto.
  std::optional<Toggle> preload;             // Default kAuto.
  std::optional<Toggle> weight_compression;  // Default kAuto.
};

// Foreground jobs set the first two, Background jobs the last; never both kinds.
struct CollocationSpec {
  std::optional<double> max_foreground_slowdown;  // Foreground; the SLO, default 1.10.
  std::optional<bool> allow_background;           // Foreground; default true.
  std::optional<std::int64_t> max_batch_size;     // Background.
};

struct CheckpointSpec {
  std::optional<std::string> path;
  std::optional<std::int64_t> interval_steps;
  std::optional<double> interval_seconds;
};

struct TrainingJobSpec {
  std::optional<Role> role;
  ModelSpec model;
  std::optional<std::int64_t> global_batch_size;
  std::optional<std::int64_t> gpus;   // Foreground: the most GPUs; Background: 1.
  std::optional<std::int64_t> steps;  // Exactly one of steps and epochs.
  std::optional<std::int64_t> epochs;
  std::optional<std::int64_t> dataset_samples;  // Required with epochs.
  std::optional<Optimizer> optimizer;           // Default kSgd.
  std::optional<double> learning_rate;          // Default 0.01.
  ParallelismSpec parallelism;
  DataMovementSpec data_movement;
  CollocationSpec collocation;
  CheckpointSpec checkpoint;
  nlohmann::json pod_template;  // "template": a PodTemplateSpec, verbatim; null when absent.
  std::optional<bool> suspend;  // Default false.
  // Gang restarts after failed pods before the job fails; default 6 (as batch/v1 Job's).
  // Restarts caused by the infrastructure (node or agent lost, pod deleted, preemption) do not
  // count.
  std::optional<std::int64_t> backoff_limit;
};

// What the planner chose, summarised for `kubectl get`.
struct PlanSummary {
  Strategy strategy = Strategy::kDataParallel;
  double predicted_iteration_seconds = 0;
  std::int64_t memory_per_gpu_bytes = 0;
  std::vector<std::int64_t> stage_gpus;  // GPU count of each stage, in execution order.
  double amplification = 0;              // GPU-seconds relative to one GPU.
};

struct PodPlacement {
  std::string pod;
  std::string node;
  std::vector<std::string> gpu_uuids;  // "gpuUUIDs"
};

struct TrainingJobStatus {
  std::optional<JobPhase> phase;
  std::vector<Condition> conditions;
  std::int64_t observed_generation = 0;
  std::optional<PlanSummary> plan;
  // GPUs the current plan uses (Plan::gpus): what `kubectl get tj` shows, which may be fewer
  // than spec.gpus (the most a Foreground job may use). Unset until the job is planned.
  std::optional<std::int64_t> gpus;
  std::vector<PodPlacement> placement;
  std::optional<TrainingProgress> progress;
  // Gang restarts after failed pods (counted against backoffLimit). Encoded, 0 included, once
  // the job has a phase, so that `kubectl get tj -o wide` shows 0 rather than a blank.
  std::int64_t restarts = 0;
  // The generation of the job's pods (`<job>-g<gangGeneration>-<rank>`): raised before every
  // gang restart or re-placement, so that the new pods never clash with the old ones.
  std::int64_t gang_generation = 0;
};

struct TrainingJob {
  ObjectMeta metadata;
  TrainingJobSpec spec;
  TrainingJobStatus status;

  // Strict: apiVersion and kind must be wavepool.dev/v1alpha1 TrainingJob; an unknown field
  // outside metadata is an error naming its path; wrong JSON types name the expected type.
  // Unknown metadata fields are kept. Does not default or validate.
  static absl::StatusOr<TrainingJob> FromJson(const nlohmann::json& json);
};

// apiVersion, kind, metadata, spec and (when not empty) status.
nlohmann::json ToJson(const TrainingJob& job);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_TRAINING_JOB_H_
