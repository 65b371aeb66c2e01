// JSON form of TrainingJob: Kubernetes camelCase names, strict decoding, omit-empty encoding.
#include <utility>

#include "object_meta_codec.h"
#include "progress_codec.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/training_job.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::api {

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, ConfigMapKeyRef* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, PlanSummary* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, PodPlacement* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, TrainingProgress* out);
nlohmann::json EncodeValue(const ConfigMapKeyRef& value);
nlohmann::json EncodeValue(const PodPlacement& value);

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, ConfigMapKeyRef* out) {
  ObjectReader reader(value, path);
  reader.Read("configMap", &out->config_map);
  reader.Read("key", &out->key);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, ModelSpec* out) {
  ObjectReader reader(value, path);
  reader.Read("name", &out->name);
  reader.Read("layerTable", &out->layer_table);
  reader.Read("profile", &out->profile);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, ParallelismSpec* out) {
  ObjectReader reader(value, path);
  reader.Read("strategy", &out->strategy);
  reader.Read("amplificationLimit", &out->amplification_limit);
  reader.Read("gpuCounts", &out->gpu_counts);
  reader.Read("tickTock", &out->tick_tock);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path,
                         DataMovementSpec* out) {
  ObjectReader reader(value, path);
  reader.Read("cpuSplit", &out->cpu_split);
  reader.Read("preload", &out->preload);
  reader.Read("weightCompression", &out->weight_compression);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, CollocationSpec* out) {
  ObjectReader reader(value, path);
  reader.Read("maxForegroundSlowdown", &out->max_foreground_slowdown);
  reader.Read("allowBackground", &out->allow_background);
  reader.Read("maxBatchSize", &out->max_batch_size);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, CheckpointSpec* out) {
  ObjectReader reader(value, path);
  reader.Read("path", &out->path);
  reader.Read("intervalSteps", &out->interval_steps);
  reader.Read("intervalSeconds", &out->interval_seconds);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, TrainingJobSpec* out) {
  ObjectReader reader(value, path);
  reader.Read("role", &out->role);
  reader.Read("model", &out->model);
  reader.Read("globalBatchSize", &out->global_batch_size);
  reader.Read("gpus", &out->gpus);
  reader.Read("steps", &out->steps);
  reader.Read("epochs", &out->epochs);
  reader.Read("datasetSamples", &out->dataset_samples);
  reader.Read("optimizer", &out->optimizer);
  reader.Read("learningRate", &out->learning_rate);
  reader.Read("parallelism", &out->parallelism);
  reader.Read("dataMovement", &out->data_movement);
  reader.Read("collocation", &out->collocation);
  reader.Read("checkpoint", &out->checkpoint);
  reader.ReadRawObject("template", &out->pod_template);
  reader.Read("suspend", &out->suspend);
  reader.Read("backoffLimit", &out->backoff_limit);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, PlanSummary* out) {
  ObjectReader reader(value, path);
  reader.Read("strategy", &out->strategy);
  reader.Read("predictedIterationSeconds", &out->predicted_iteration_seconds);
  reader.Read("memoryPerGpuBytes", &out->memory_per_gpu_bytes);
  reader.Read("stageGpus", &out->stage_gpus);
  reader.Read("amplification", &out->amplification);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, PodPlacement* out) {
  ObjectReader reader(value, path);
  reader.Read("pod", &out->pod);
  reader.Read("node", &out->node);
  reader.Read("gpuUUIDs", &out->gpu_uuids);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path,
                         TrainingJobStatus* out) {
  ObjectReader reader(value, path);
  reader.Read("phase", &out->phase);
  reader.Read("conditions", &out->conditions);
  reader.Read("observedGeneration", &out->observed_generation);
  reader.Read("plan", &out->plan);
  reader.Read("gpus", &out->gpus);
  reader.Read("placement", &out->placement);
  reader.Read("progress", &out->progress);
  reader.Read("restarts", &out->restarts);
  reader.Read("gangGeneration", &out->gang_generation);
  return reader.Finish();
}

absl::StatusOr<TrainingJob> TrainingJob::FromJson(const nlohmann::json& json) {
  TrainingJob job;
  ObjectReader reader(json, FieldPath());
  reader.Expect("apiVersion", kApiVersion);
  reader.Expect("kind", kTrainingJobKind);
  reader.Read("metadata", &job.metadata);
  reader.Read("spec", &job.spec);
  reader.Read("status", &job.status);
  WAVEPOOL_RETURN_IF_ERROR(reader.Finish());
  return job;
}

nlohmann::json EncodeValue(const ConfigMapKeyRef& value) {
  return ObjectWriter().Put("configMap", value.config_map).Put("key", value.key).Take();
}

nlohmann::json EncodeValue(const PodPlacement& value) {
  return ObjectWriter()
      .Put("pod", value.pod)
      .Put("node", value.node)
      .Put("gpuUUIDs", value.gpu_uuids)
      .Take();
}

namespace {

nlohmann::json EncodeSpec(const TrainingJobSpec& spec) {
  const ParallelismSpec& parallelism = spec.parallelism;
  const DataMovementSpec& data_movement = spec.data_movement;
  const CollocationSpec& collocation = spec.collocation;
  const CheckpointSpec& checkpoint = spec.checkpoint;
  nlohmann::json model = ObjectWriter()
                             .Put("name", spec.model.name)
                             .Put("layerTable", spec.model.layer_table)
                             .Put("profile", spec.model.profile)
                             .Take();
  return ObjectWriter()
      .Put("role", spec.role)
      .OmitEmpty("model", model)
      .Put("globalBatchSize", spec.global_batch_size)
      .Put("gpus", spec.gpus)
      .Put("steps", spec.steps)
      .Put("epochs", spec.epochs)
      .Put("datasetSamples", spec.dataset_samples)
      .Put("optimizer", spec.optimizer)
      .Put("learningRate", spec.learning_rate)
      .OmitEmpty("parallelism", ObjectWriter()
                                    .Put("strategy", parallelism.strategy)
                                    .Put("amplificationLimit", parallelism.amplification_limit)
                                    .Put("gpuCounts", parallelism.gpu_counts)
                                    .Put("tickTock", parallelism.tick_tock)
                                    .Take())
      .OmitEmpty("dataMovement", ObjectWriter()
                                     .Put("cpuSplit", data_movement.cpu_split)
                                     .Put("preload", data_movement.preload)
                                     .Put("weightCompression", data_movement.weight_compression)
                                     .Take())
      .OmitEmpty("collocation",
                 ObjectWriter()
                     .Put("maxForegroundSlowdown", collocation.max_foreground_slowdown)
                     .Put("allowBackground", collocation.allow_background)
                     .Put("maxBatchSize", collocation.max_batch_size)
                     .Take())
      .OmitEmpty("checkpoint", ObjectWriter()
                                   .Put("path", checkpoint.path)
                                   .Put("intervalSteps", checkpoint.interval_steps)
                                   .Put("intervalSeconds", checkpoint.interval_seconds)
                                   .Take())
      .OmitEmpty("template", spec.pod_template)
      .Put("suspend", spec.suspend)
      .Put("backoffLimit", spec.backoff_limit)
      .Take();
}

nlohmann::json EncodePlanSummary(const PlanSummary& plan) {
  return ObjectWriter()
      .Put("strategy", plan.strategy)
      .Put("predictedIterationSeconds", plan.predicted_iteration_seconds)
      .Put("memoryPerGpuBytes", plan.memory_per_gpu_bytes)
      .Put("stageGpus", plan.stage_gpus)
      .Put("amplification", plan.amplification)
      .Take();
}

nlohmann::json EncodeStatus(const TrainingJobStatus& status) {
  ObjectWriter writer;
  writer.Put("phase", status.phase)
      .OmitEmpty("conditions", status.conditions)
      .OmitEmpty("observedGeneration", status.observed_generation);
  if (status.plan.has_value()) writer.Put("plan", EncodePlanSummary(*status.plan));
  writer.Put("gpus", status.gpus);
  writer.OmitEmpty("placement", status.placement);
  writer.Put("progress", status.progress);
  // A job the controller has started (it has a phase) shows its restarts, 0 included.
  if (status.phase.has_value()) {
    writer.Put("restarts", status.restarts);
  } else {
    writer.OmitEmpty("restarts", status.restarts);
  }
  return writer.OmitEmpty("gangGeneration", status.gang_generation).Take();
}

}  // namespace

nlohmann::json ToJson(const TrainingJob& job) {
  return ObjectWriter()
      .Put("apiVersion", std::string(kApiVersion))
      .Put("kind", std::string(kTrainingJobKind))
      .Put("metadata", ToJson(job.metadata))
      .Put("spec", EncodeSpec(job.spec))
      .OmitEmpty("status", EncodeStatus(job.status))
      .Take();
}

}  // namespace wavepool::api
