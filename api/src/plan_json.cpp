// JSON form of Plan: every field written, strict decoding.
#include "wavepool/api/json_codec.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/api/plan.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::api {

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, PlanStage* out) {
  ObjectReader reader(value, path);
  reader.Read("index", &out->index);
  reader.Read("layers", &out->layers);
  reader.Read("gpus", &out->gpus);
  reader.Read("ranks", &out->ranks);
  reader.Read("perGpuBatch", &out->per_gpu_batch);
  reader.Read("dependsOn", &out->depends_on);
  reader.Read("concurrentWith", &out->concurrent_with);
  reader.Read("predictedSeconds", &out->predicted_seconds);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, SampleTransfer* out) {
  ObjectReader reader(value, path);
  reader.Read("fromStage", &out->from_stage);
  reader.Read("toStage", &out->to_stage);
  reader.Read("bytesPerSample", &out->bytes_per_sample);
  reader.Read("samples", &out->samples);
  reader.Read("predictedSeconds", &out->predicted_seconds);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, SyncGroup* out) {
  ObjectReader reader(value, path);
  reader.Read("stage", &out->stage);
  reader.Read("ranks", &out->ranks);
  reader.Read("bytes", &out->bytes);
  reader.Read("algorithm", &out->algorithm);
  reader.Read("predictedSeconds", &out->predicted_seconds);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path,
                         DataMovementDecision* out) {
  ObjectReader reader(value, path);
  reader.Read("cpuSplit", &out->cpu_split);
  reader.Read("preload", &out->preload);
  reader.Read("weightCompression", &out->weight_compression);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, PlanPredictions* out) {
  ObjectReader reader(value, path);
  reader.Read("iterationSeconds", &out->iteration_seconds);
  reader.Read("computeSeconds", &out->compute_seconds);
  reader.Read("communicationSeconds", &out->communication_seconds);
  reader.Read("gpuSeconds", &out->gpu_seconds);
  reader.Read("amplification", &out->amplification);
  reader.Read("memoryPerGpuBytes", &out->memory_per_gpu_bytes);
  reader.Read("backgroundIdleGpuSeconds", &out->background_idle_gpu_seconds);
  reader.Read("samplesPerSecond", &out->samples_per_second);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, PlanTraining* out) {
  ObjectReader reader(value, path);
  reader.Read("optimizer", &out->optimizer);
  reader.Read("learningRate", &out->learning_rate);
  reader.Read("steps", &out->steps);
  reader.Read("seed", &out->seed);
  reader.Read("checkpointIntervalSteps", &out->checkpoint_interval_steps);
  reader.Read("checkpointIntervalSeconds", &out->checkpoint_interval_seconds);
  reader.Read("datasetSamples", &out->dataset_samples);
  return reader.Finish();
}

absl::StatusOr<Plan> Plan::FromJson(const nlohmann::json& json) {
  Plan plan;
  ObjectReader reader(json, FieldPath());
  reader.Expect("apiVersion", kApiVersion);
  reader.Expect("kind", kPlanKind);
  for (const char* required : {"strategy", "globalBatchSize", "gpus", "stages"}) {
    reader.Require(required);
  }
  reader.Read("job", &plan.job);
  reader.Read("model", &plan.model);
  reader.Read("device", &plan.device);
  reader.Read("strategy", &plan.strategy);
  reader.Read("globalBatchSize", &plan.global_batch_size);
  reader.Read("gpus", &plan.gpus);
  reader.Read("amplificationLimit", &plan.amplification_limit);
  reader.Read("gpuCounts", &plan.gpu_counts);
  reader.Read("waves", &plan.waves);
  reader.Read("waveOffsetFraction", &plan.wave_offset_fraction);
  reader.Read("wavePlacement", &plan.wave_placement);
  reader.Read("stages", &plan.stages);
  reader.Read("transfers", &plan.transfers);
  reader.Read("syncGroups", &plan.sync_groups);
  reader.Read("dataMovement", &plan.data_movement);
  reader.Read("predictions", &plan.predictions);
  reader.Read("training", &plan.training);
  reader.Read("layerTable", &plan.layer_table);
  WAVEPOOL_RETURN_IF_ERROR(reader.Finish());
  return plan;
}

nlohmann::json EncodeValue(const PlanStage& stage) {
  return ObjectWriter()
      .Put("index", stage.index)
      .Put("layers", stage.layers)
      .Put("gpus", stage.gpus)
      .Put("ranks", stage.ranks)
      .Put("perGpuBatch", stage.per_gpu_batch)
      .Put("dependsOn", stage.depends_on)
      .Put("concurrentWith", stage.concurrent_with)
      .Put("predictedSeconds", stage.predicted_seconds)
      .Take();
}

nlohmann::json EncodeValue(const SampleTransfer& transfer) {
  return ObjectWriter()
      .Put("fromStage", transfer.from_stage)
      .Put("toStage", transfer.to_stage)
      .Put("bytesPerSample", transfer.bytes_per_sample)
      .Put("samples", transfer.samples)
      .Put("predictedSeconds", transfer.predicted_seconds)
      .Take();
}

nlohmann::json EncodeValue(const SyncGroup& group) {
  return ObjectWriter()
      .Put("stage", group.stage)
      .Put("ranks", group.ranks)
      .Put("bytes", group.bytes)
      .Put("algorithm", group.algorithm)
      .Put("predictedSeconds", group.predicted_seconds)
      .Take();
}

nlohmann::json ToJson(const Plan& plan) {
  const PlanPredictions& predictions = plan.predictions;
  return ObjectWriter()
      .Put("apiVersion", std::string(kApiVersion))
      .Put("kind", std::string(kPlanKind))
      .Put("job", plan.job)
      .Put("model", plan.model)
      .Put("device", plan.device)
      .Put("strategy", plan.strategy)
      .Put("globalBatchSize", plan.global_batch_size)
      .Put("gpus", plan.gpus)
      .Put("amplificationLimit", plan.amplification_limit)
      .Put("gpuCounts", plan.gpu_counts)
      .Put("waves", plan.waves)
      .Put("waveOffsetFraction", plan.wave_offset_fraction)
      .Put("wavePlacement", plan.wave_placement)
      .Put("stages", plan.stages)
      .Put("transfers", plan.transfers)
      .Put("syncGroups", plan.sync_groups)
      .Put("dataMovement", ObjectWriter()
                               .Put("cpuSplit", plan.data_movement.cpu_split)
                               .Put("preload", plan.data_movement.preload)
                               .Put("weightCompression", plan.data_movement.weight_compression)
                               .Take())
      .Put("predictions",
           ObjectWriter()
               .Put("iterationSeconds", predictions.iteration_seconds)
               .Put("computeSeconds", predictions.compute_seconds)
               .Put("communicationSeconds", predictions.communication_seconds)
               .Put("gpuSeconds", predictions.gpu_seconds)
               .Put("amplification", predictions.amplification)
               .Put("memoryPerGpuBytes", predictions.memory_per_gpu_bytes)
               .Put("backgroundIdleGpuSeconds", predictions.background_idle_gpu_seconds)
               .Put("samplesPerSecond", predictions.samples_per_second)
               .Take())
      .Put("training",
           ObjectWriter()
               .Put("optimizer", plan.training.optimizer)
               .Put("learningRate", plan.training.learning_rate)
               .Put("steps", plan.training.steps)
               .Put("seed", plan.training.seed)
               .Put("checkpointIntervalSteps", plan.training.checkpoint_interval_steps)
               .Put("checkpointIntervalSeconds", plan.training.checkpoint_interval_seconds)
               .OmitEmpty("datasetSamples", plan.training.dataset_samples)
               .Take())
      .Put("layerTable", plan.layer_table)
      .Take();
}

}  // namespace wavepool::api
