// TrainingJob rules (docs/api.md lists them with their messages).
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "progress_codec.h"
#include "validation_util.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/validation.h"

namespace wavepool::api {
namespace {

constexpr std::size_t kMaxModelNameLength = 63;
constexpr std::size_t kMaxConfigMapKeyLength = 253;

// "spec.<field>"
FieldPath SpecField(std::string_view field) { return FieldPath("spec").Child(field); }

// A built-in model name: [a-z0-9]([a-z0-9_.-]*[a-z0-9])? up to 63 characters. The list itself
// belongs to the planner; api checks only the shape.
bool IsModelName(std::string_view name) {
  const auto alnum = [](char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z'); };
  if (name.empty() || name.size() > kMaxModelNameLength) return false;
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name) {
    if (!alnum(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

absl::Status ValidateConfigMapKeyRef(const ConfigMapKeyRef& ref, const FieldPath& path) {
  const FieldPath config_map = path.Child("configMap");
  if (ref.config_map.empty()) return config_map.Invalid("required");
  if (!IsDns1123Subdomain(ref.config_map)) {
    return config_map.Invalid("must be a ConfigMap name (DNS-1123 subdomain), got " +
                              Quote(ref.config_map));
  }
  const FieldPath key = path.Child("key");
  if (ref.key.empty()) return key.Invalid("required");
  if (!IsConfigMapKey(ref.key)) {
    return key.Invalid("must be a ConfigMap key (letters, digits, '-', '_' and '.'), got " +
                       Quote(ref.key));
  }
  return absl::OkStatus();
}

absl::Status ValidateModel(const ModelSpec& model) {
  const FieldPath path = SpecField("model");
  if (model.name.has_value() == model.layer_table.has_value()) {
    return path.Invalid(absl::StrCat("must set exactly one of name or layerTable, got ",
                                     model.name.has_value() ? "both" : "neither"));
  }
  if (model.name.has_value() && !IsModelName(*model.name)) {
    return path.Child("name").Invalid(
        "must be a model name (at most 63 lowercase letters, digits, '_', '-' and '.', starting "
        "and ending with a letter or digit), got " +
        Quote(*model.name));
  }
  if (model.layer_table.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateConfigMapKeyRef(*model.layer_table, path.Child("layerTable")));
  }
  if (model.profile.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateConfigMapKeyRef(*model.profile, path.Child("profile")));
  }
  return absl::OkStatus();
}

// A required integer field with a lower bound.
absl::Status CheckRequiredAtLeast(const FieldPath& path, const std::optional<std::int64_t>& value,
                                  std::int64_t minimum) {
  if (!value.has_value()) return path.Invalid(absl::StrCat("required, an integer >= ", minimum));
  return CheckAtLeast(path, *value, minimum);
}

absl::Status ValidateSizes(const TrainingJobSpec& spec) {
  WAVEPOOL_RETURN_IF_ERROR(
      CheckRequiredAtLeast(SpecField("globalBatchSize"), spec.global_batch_size, 1));
  WAVEPOOL_RETURN_IF_ERROR(CheckRequiredAtLeast(SpecField("gpus"), spec.gpus, 1));
  if (spec.role == Role::kBackground && *spec.gpus != 1) {
    return SpecField("gpus").Invalid(
        absl::StrCat("must be 1 for a Background job, got ", *spec.gpus));
  }
  // Every GPU needs at least one sample of each batch.
  if (*spec.global_batch_size < *spec.gpus) {
    return SpecField("globalBatchSize")
        .Invalid(
            absl::StrCat("must be >= spec.gpus (", *spec.gpus, "), got ", *spec.global_batch_size));
  }
  if (spec.steps.has_value() == spec.epochs.has_value()) {
    return FieldPath("spec").Invalid(absl::StrCat("must set exactly one of steps or epochs, got ",
                                                  spec.steps.has_value() ? "both" : "neither"));
  }
  if (spec.steps.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(SpecField("steps"), *spec.steps, 1));
  } else {
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(SpecField("epochs"), *spec.epochs, 1));
    if (!spec.dataset_samples.has_value()) {
      return SpecField("datasetSamples").Invalid("required when spec.epochs is set");
    }
  }
  if (spec.dataset_samples.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(SpecField("datasetSamples"), *spec.dataset_samples, 1));
    // An epoch must hold at least one full batch.
    if (*spec.dataset_samples < *spec.global_batch_size) {
      return SpecField("datasetSamples")
          .Invalid(absl::StrCat("must be >= spec.globalBatchSize (", *spec.global_batch_size,
                                "), got ", *spec.dataset_samples));
    }
  }
  if (spec.learning_rate.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(CheckPositive(SpecField("learningRate"), *spec.learning_rate));
    WAVEPOOL_RETURN_IF_ERROR(
        CheckLearningRateFitsFloat32(SpecField("learningRate"), *spec.learning_rate));
  }
  return absl::OkStatus();
}

absl::Status ValidateParallelism(const TrainingJobSpec& spec) {
  const FieldPath path = SpecField("parallelism");
  const ParallelismSpec& parallelism = spec.parallelism;
  if (parallelism.amplification_limit.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(
        CheckAtLeast(path.Child("amplificationLimit"), *parallelism.amplification_limit, 1.0));
  }
  const Strategy strategy = parallelism.strategy.value_or(Strategy::kAuto);
  // Burst parallelism varies the GPU count per layer and model-parallel waves rotate
  // partitions over GPUs: both need more than one GPU.
  if ((strategy == Strategy::kBurstParallel || strategy == Strategy::kModelParallelWaves) &&
      *spec.gpus < 2) {
    return path.Child("strategy")
        .Invalid(absl::StrCat(std::string(ToString(strategy)), " needs spec.gpus >= 2, got ",
                              *spec.gpus));
  }
  if (strategy == Strategy::kTickTock && parallelism.tick_tock == Toggle::kOff) {
    return path.Child("tickTock")
        .Invalid(
            "must not be Off when spec.parallelism.strategy is "
            "TickTock");
  }
  return absl::OkStatus();
}

absl::Status ValidateCollocation(const TrainingJobSpec& spec) {
  const FieldPath path = SpecField("collocation");
  const CollocationSpec& collocation = spec.collocation;
  if (*spec.role == Role::kForeground) {
    if (collocation.max_batch_size.has_value()) {
      return path.Child("maxBatchSize").Invalid("only valid for a Background job");
    }
    if (collocation.max_foreground_slowdown.has_value()) {
      WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("maxForegroundSlowdown"),
                                            *collocation.max_foreground_slowdown, 1.0));
    }
    return absl::OkStatus();
  }
  if (collocation.max_foreground_slowdown.has_value()) {
    return path.Child("maxForegroundSlowdown").Invalid("only valid for a Foreground job");
  }
  if (collocation.allow_background.has_value()) {
    return path.Child("allowBackground").Invalid("only valid for a Foreground job");
  }
  if (collocation.max_batch_size.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(
        CheckAtLeast(path.Child("maxBatchSize"), *collocation.max_batch_size, 1));
  }
  return absl::OkStatus();
}

absl::Status ValidateCheckpoint(const TrainingJobSpec& spec) {
  const FieldPath path = SpecField("checkpoint");
  const CheckpointSpec& checkpoint = spec.checkpoint;
  if (checkpoint.path.has_value() && checkpoint.path->empty()) {
    return path.Child("path").Invalid("must not be empty");
  }
  // Background jobs are preempted whenever the foreground needs the GPU, and resume from here.
  if (spec.role == Role::kBackground && !checkpoint.path.has_value()) {
    return path.Child("path").Invalid(
        "required for a Background job (Background jobs are preemptible and resume from their "
        "checkpoint)");
  }
  if (checkpoint.interval_steps.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(
        CheckAtLeast(path.Child("intervalSteps"), *checkpoint.interval_steps, 1));
  }
  if (checkpoint.interval_seconds.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(
        CheckPositive(path.Child("intervalSeconds"), *checkpoint.interval_seconds));
  }
  if (!checkpoint.path.has_value() &&
      (checkpoint.interval_steps.has_value() || checkpoint.interval_seconds.has_value())) {
    return path.Child("path").Invalid("required when an interval is set");
  }
  return absl::OkStatus();
}

absl::Status ValidateSpec(const TrainingJobSpec& spec) {
  if (!spec.role.has_value()) {
    return SpecField("role").Invalid("required, one of " + EnumNames<Role>());
  }
  WAVEPOOL_RETURN_IF_ERROR(ValidateModel(spec.model));
  WAVEPOOL_RETURN_IF_ERROR(ValidateSizes(spec));
  WAVEPOOL_RETURN_IF_ERROR(ValidateParallelism(spec));
  WAVEPOOL_RETURN_IF_ERROR(ValidateCollocation(spec));
  WAVEPOOL_RETURN_IF_ERROR(ValidateCheckpoint(spec));
  if (!spec.pod_template.is_null() && !spec.pod_template.is_object()) {
    return SpecField("template")
        .Invalid("must be an object (a PodTemplateSpec), got " + Describe(spec.pod_template));
  }
  if (spec.backoff_limit.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(SpecField("backoffLimit"), *spec.backoff_limit, 0));
  }
  return absl::OkStatus();
}

absl::Status ValidatePlanSummary(const PlanSummary& plan, const FieldPath& path) {
  if (plan.strategy == Strategy::kAuto) {
    return path.Child("strategy").Invalid("must be the strategy the planner chose, got Auto");
  }
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("predictedIterationSeconds"), plan.predicted_iteration_seconds, 0.0));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("memoryPerGpuBytes"), plan.memory_per_gpu_bytes, 0));
  for (std::size_t i = 0; i < plan.stage_gpus.size(); ++i) {
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("stageGpus").Index(i), plan.stage_gpus[i], 1));
  }
  return CheckAtLeast(path.Child("amplification"), plan.amplification, 0.0);
}

absl::Status ValidatePlacement(const std::vector<PodPlacement>& placement, const FieldPath& path) {
  for (std::size_t i = 0; i < placement.size(); ++i) {
    const FieldPath entry = path.Index(i);
    WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(entry.Child("pod"), placement[i].pod));
    WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(entry.Child("node"), placement[i].node));
    for (std::size_t j = 0; j < placement[i].gpu_uuids.size(); ++j) {
      WAVEPOOL_RETURN_IF_ERROR(
          CheckNonEmpty(entry.Child("gpuUUIDs").Index(j), placement[i].gpu_uuids[j]));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateStatus(const TrainingJobStatus& status) {
  const FieldPath path("status");
  WAVEPOOL_RETURN_IF_ERROR(ValidateConditions(status.conditions, path.Child("conditions")));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("observedGeneration"), status.observed_generation, 0));
  if (status.plan.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(ValidatePlanSummary(*status.plan, path.Child("plan")));
  }
  if (status.gpus.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("gpus"), *status.gpus, 1));
  }
  WAVEPOOL_RETURN_IF_ERROR(ValidatePlacement(status.placement, path.Child("placement")));
  if (status.progress.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateProgress(*status.progress, path.Child("progress")));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("gangGeneration"), status.gang_generation, 0));
  return CheckAtLeast(path.Child("restarts"), status.restarts, 0);
}

absl::Status ValidateTrainingJob(const TrainingJob& job) {
  WAVEPOOL_RETURN_IF_ERROR(CheckObjectNames(job.metadata, /*namespaced=*/true));
  WAVEPOOL_RETURN_IF_ERROR(ValidateSpec(job.spec));
  return ValidateStatus(job.status);
}

}  // namespace

bool IsConfigMapKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxConfigMapKeyLength || key == "." || key == "..") {
    return false;
  }
  for (char c : key) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

absl::Status Validate(const TrainingJob& job) {
  return WithContext(ValidateTrainingJob(job),
                     ObjectContext(kTrainingJobKind, NamespacedName(job.metadata)));
}

}  // namespace wavepool::api
