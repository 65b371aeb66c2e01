// Plan rules (docs/api.md lists them with their messages).
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "validation_util.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/object_key.h"
#include "wavepool/api/validation.h"

namespace wavepool::api {
namespace {

// "stage 9 does not exist, must be in [0, 4)" unless 0 <= stage < count.
absl::Status CheckStageExists(const FieldPath& path, std::int64_t stage, std::size_t count) {
  if (stage >= 0 && static_cast<std::size_t>(stage) < count) return absl::OkStatus();
  return path.Invalid(
      absl::StrCat("stage ", stage, " does not exist, must be in [0, ", count, ")"));
}

// Ranks within [0, gpus), strictly ascending.
absl::Status CheckRanks(const std::vector<std::int64_t>& ranks, std::int64_t gpus,
                        const FieldPath& path) {
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= gpus) {
      return path.Index(i).Invalid(absl::StrCat("rank ", ranks[i], " is outside [0, ", gpus, ")"));
    }
    if (i > 0 && ranks[i] <= ranks[i - 1]) {
      return path.Index(i).Invalid(absl::StrCat("rank ", ranks[i],
                                                " must be greater than the rank before it (",
                                                ranks[i - 1], "): ranks are ascending"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckStageLinks(const PlanStage& stage, std::size_t index, std::size_t count,
                             const FieldPath& path) {
  for (std::size_t i = 0; i < stage.depends_on.size(); ++i) {
    const std::int64_t other = stage.depends_on[i];
    if (other < 0 || static_cast<std::size_t>(other) >= index) {
      return path.Child("dependsOn")
          .Index(i)
          .Invalid(absl::StrCat("stage ", other, " is not an earlier stage, must be in [0, ", index,
                                ")"));
    }
  }
  for (std::size_t i = 0; i < stage.concurrent_with.size(); ++i) {
    const FieldPath item = path.Child("concurrentWith").Index(i);
    WAVEPOOL_RETURN_IF_ERROR(CheckStageExists(item, stage.concurrent_with[i], count));
    if (static_cast<std::size_t>(stage.concurrent_with[i]) == index) {
      return item.Invalid(absl::StrCat("stage ", index, " is the stage itself"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateStage(const Plan& plan, std::size_t index, const FieldPath& path) {
  const PlanStage& stage = plan.stages[index];
  if (stage.index != static_cast<std::int64_t>(index)) {
    return path.Child("index").Invalid(
        absl::StrCat("must be ", index, " (stages are listed in order), got ", stage.index));
  }
  if (stage.layers.empty()) return path.Child("layers").Invalid("must list at least one layer");
  if (stage.gpus < 1 || stage.gpus > plan.gpus) {
    return path.Child("gpus").Invalid(
        absl::StrCat("must be in [1, gpus (", plan.gpus, ")], got ", stage.gpus));
  }
  if (static_cast<std::int64_t>(stage.ranks.size()) != stage.gpus) {
    return path.Child("ranks").Invalid(absl::StrCat(
        "must list ", stage.gpus, " ranks (", path.str(), ".gpus), got ", stage.ranks.size()));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckRanks(stage.ranks, plan.gpus, path.Child("ranks")));
  const FieldPath batch = path.Child("perGpuBatch");
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(batch, stage.per_gpu_batch, 1));
  if (stage.per_gpu_batch > plan.global_batch_size) {
    return batch.Invalid(absl::StrCat("must be <= globalBatchSize (", plan.global_batch_size,
                                      "), got ", stage.per_gpu_batch));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckStageLinks(stage, index, plan.stages.size(), path));
  return CheckAtLeast(path.Child("predictedSeconds"), stage.predicted_seconds, 0.0);
}

absl::Status ValidateStages(const Plan& plan) {
  const FieldPath path("stages");
  if (plan.stages.empty()) return path.Invalid("must list at least one stage");
  std::map<std::string, std::size_t> stage_of_layer;  // Each layer runs in exactly one stage.
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateStage(plan, i, path.Index(i)));
    const std::vector<std::string>& layers = plan.stages[i].layers;
    for (std::size_t j = 0; j < layers.size(); ++j) {
      const FieldPath layer = path.Index(i).Child("layers").Index(j);
      WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(layer, layers[j]));
      auto [it, inserted] = stage_of_layer.emplace(layers[j], i);
      if (!inserted) {
        return layer.Invalid(absl::StrCat("layer ", Quote(layers[j]), " is already in ",
                                          path.Index(it->second).str()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTransfers(const Plan& plan) {
  const std::size_t count = plan.stages.size();
  for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
    const SampleTransfer& transfer = plan.transfers[i];
    const FieldPath path = FieldPath("transfers").Index(i);
    WAVEPOOL_RETURN_IF_ERROR(CheckStageExists(path.Child("fromStage"), transfer.from_stage, count));
    WAVEPOOL_RETURN_IF_ERROR(CheckStageExists(path.Child("toStage"), transfer.to_stage, count));
    // Stages are in execution order, so forward activations move to a later stage.
    if (transfer.to_stage <= transfer.from_stage) {
      return path.Child("toStage").Invalid(absl::StrCat("must be a later stage than fromStage (",
                                                        transfer.from_stage, "), got ",
                                                        transfer.to_stage));
    }
    WAVEPOOL_RETURN_IF_ERROR(
        CheckAtLeast(path.Child("bytesPerSample"), transfer.bytes_per_sample, 0));
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("samples"), transfer.samples, 0));
    WAVEPOOL_RETURN_IF_ERROR(
        CheckAtLeast(path.Child("predictedSeconds"), transfer.predicted_seconds, 0.0));
  }
  return absl::OkStatus();
}

absl::Status ValidateSyncGroups(const Plan& plan) {
  for (std::size_t i = 0; i < plan.sync_groups.size(); ++i) {
    const SyncGroup& group = plan.sync_groups[i];
    const FieldPath path = FieldPath("syncGroups").Index(i);
    WAVEPOOL_RETURN_IF_ERROR(
        CheckStageExists(path.Child("stage"), group.stage, plan.stages.size()));
    WAVEPOOL_RETURN_IF_ERROR(CheckRanks(group.ranks, plan.gpus, path.Child("ranks")));
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("bytes"), group.bytes, 0));
    WAVEPOOL_RETURN_IF_ERROR(
        CheckAtLeast(path.Child("predictedSeconds"), group.predicted_seconds, 0.0));
  }
  return absl::OkStatus();
}

absl::Status ValidatePredictions(const PlanPredictions& p) {
  const FieldPath path("predictions");
  const std::pair<const char*, double> seconds[] = {
      {"iterationSeconds", p.iteration_seconds},
      {"computeSeconds", p.compute_seconds},
      {"communicationSeconds", p.communication_seconds},
      {"gpuSeconds", p.gpu_seconds},
      {"amplification", p.amplification},
      {"backgroundIdleGpuSeconds", p.background_idle_gpu_seconds},
      {"samplesPerSecond", p.samples_per_second},
  };
  for (const auto& [name, value] : seconds) {
    WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child(name), value, 0.0));
  }
  return CheckAtLeast(path.Child("memoryPerGpuBytes"), p.memory_per_gpu_bytes, 0);
}

absl::Status ValidateJobName(std::string_view job) {
  if (job.empty()) return absl::OkStatus();
  const absl::StatusOr<ObjectKey> key = ObjectKey::Parse(job);
  if (!key.ok() || !IsDns1123Label(key->namespace_) || !IsDns1123Subdomain(key->name)) {
    return FieldPath("job").Invalid("must be \"<namespace>/<name>\" or empty, got " + Quote(job));
  }
  return absl::OkStatus();
}

// wavelet-tick-tock §3.2: data-parallel tick-tock runs 1 or 2 waves; §3.3.3: model-parallel
// round-robin runs up to N waves on N GPUs (1 tick + N-1 tock waves).
absl::Status ValidateWaves(const Plan& plan) {
  const FieldPath waves("waves");
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(waves, plan.waves, 1));
  if (plan.strategy == Strategy::kModelParallelWaves) {
    if (plan.waves > plan.gpus) {
      return waves.Invalid(absl::StrCat("must be <= gpus (", plan.gpus,
                                        ") for ModelParallelWaves, got ", plan.waves));
    }
  } else if (plan.waves > 2) {
    return waves.Invalid(absl::StrCat("must be 1 or 2 for ", std::string(ToString(plan.strategy)),
                                      ", got ", plan.waves));
  }
  const double offset = plan.wave_offset_fraction;
  if (!(offset >= 0.0 && offset < 1.0)) {
    return FieldPath("waveOffsetFraction")
        .Invalid("must be in [0.0, 1.0) of an iteration, got " + FormatDouble(offset));
  }
  return absl::OkStatus();
}

absl::Status ValidateTraining(const PlanTraining& training) {
  const FieldPath path("training");
  if (!(training.learning_rate > 0.0 && std::isfinite(training.learning_rate))) {
    return path.Child("learningRate")
        .Invalid("must be a finite number > 0, got " + FormatDouble(training.learning_rate));
  }
  WAVEPOOL_RETURN_IF_ERROR(
      CheckLearningRateFitsFloat32(path.Child("learningRate"), training.learning_rate));
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("steps"), training.steps, 0));
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("seed"), training.seed, 0));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("checkpointIntervalSteps"), training.checkpoint_interval_steps, 0));
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("datasetSamples"), training.dataset_samples, 0));
  return CheckAtLeast(path.Child("checkpointIntervalSeconds"), training.checkpoint_interval_seconds,
                      0.0);
}

absl::Status ValidatePlan(const Plan& plan) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateJobName(plan.job));
  if (plan.strategy == Strategy::kAuto) {
    return FieldPath("strategy")
        .Invalid(
            "must be the strategy the planner chose (DataParallel, BurstParallel, TickTock, "
            "ModelParallelWaves), got Auto");
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(FieldPath("globalBatchSize"), plan.global_batch_size, 1));
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(FieldPath("gpus"), plan.gpus, 1));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(FieldPath("amplificationLimit"), plan.amplification_limit, 1.0));
  WAVEPOOL_RETURN_IF_ERROR(ValidateWaves(plan));
  WAVEPOOL_RETURN_IF_ERROR(ValidateStages(plan));
  WAVEPOOL_RETURN_IF_ERROR(ValidateTransfers(plan));
  WAVEPOOL_RETURN_IF_ERROR(ValidateSyncGroups(plan));
  WAVEPOOL_RETURN_IF_ERROR(ValidateTraining(plan.training));
  return ValidatePredictions(plan.predictions);
}

}  // namespace

absl::Status Validate(const Plan& plan) {
  return WithContext(ValidatePlan(plan), plan.job.empty() ? std::string(kPlanKind)
                                                          : ObjectContext(kPlanKind, plan.job));
}

}  // namespace wavepool::api
