// JSON form of GPUNode.
#include "object_meta_codec.h"
#include "progress_codec.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::api {

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, GpuOccupancy* out) {
  ObjectReader reader(value, path);
  reader.Read("foreground", &out->foreground);
  reader.Read("background", &out->background);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, MemoryWave* out) {
  ObjectReader reader(value, path);
  reader.Read("peakBytes", &out->peak_bytes);
  reader.Read("troughBytes", &out->trough_bytes);
  reader.Read("periodSeconds", &out->period_seconds);
  reader.Read("phaseOffsetSeconds", &out->phase_offset_seconds);
  reader.Read("headroomBytes", &out->headroom_bytes);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, GpuTask* out) {
  ObjectReader reader(value, path);
  reader.Read("namespace", &out->namespace_);
  reader.Read("job", &out->job);
  reader.Read("pod", &out->pod);
  reader.Require("role");
  reader.Read("role", &out->role);
  reader.Read("pid", &out->pid);
  reader.Read("progress", &out->progress);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, GpuStatus* out) {
  ObjectReader reader(value, path);
  reader.Read("index", &out->index);
  reader.Read("uuid", &out->uuid);
  reader.Read("model", &out->model);
  reader.Read("memoryBytes", &out->memory_bytes);
  reader.Read("occupancy", &out->occupancy);
  reader.Read("memoryWave", &out->memory_wave);
  reader.Read("tasks", &out->tasks);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, GpuNodeSpec* out) {
  ObjectReader reader(value, path);
  reader.Read("nodeName", &out->node_name);
  return reader.Finish();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, GpuNodeStatus* out) {
  ObjectReader reader(value, path);
  reader.Read("gpus", &out->gpus);
  reader.Read("agentVersion", &out->agent_version);
  reader.Read("heartbeatTime", &out->heartbeat_time);
  reader.Read("conditions", &out->conditions);
  reader.Read("message", &out->message);
  return reader.Finish();
}

absl::StatusOr<GpuNode> GpuNode::FromJson(const nlohmann::json& json) {
  GpuNode node;
  ObjectReader reader(json, FieldPath());
  reader.Expect("apiVersion", kApiVersion);
  reader.Expect("kind", kGpuNodeKind);
  reader.Read("metadata", &node.metadata);
  reader.Read("spec", &node.spec);
  reader.Read("status", &node.status);
  WAVEPOOL_RETURN_IF_ERROR(reader.Finish());
  return node;
}

nlohmann::json EncodeValue(const GpuTask& task) {
  return ObjectWriter()
      .Put("namespace", task.namespace_)
      .Put("job", task.job)
      .Put("pod", task.pod)
      .Put("role", task.role)
      .Put("pid", task.pid)
      .Put("progress", task.progress)
      .Take();
}

nlohmann::json EncodeValue(const GpuStatus& gpu) {
  ObjectWriter writer;
  writer.Put("index", gpu.index)
      .Put("uuid", gpu.uuid)
      .Put("model", gpu.model)
      .Put("memoryBytes", gpu.memory_bytes)
      .Put("occupancy", ObjectWriter()
                            .Put("foreground", gpu.occupancy.foreground)
                            .Put("background", gpu.occupancy.background)
                            .Take());
  if (gpu.memory_wave.has_value()) {
    const MemoryWave& wave = *gpu.memory_wave;
    writer.Put("memoryWave", ObjectWriter()
                                 .Put("peakBytes", wave.peak_bytes)
                                 .Put("troughBytes", wave.trough_bytes)
                                 .Put("periodSeconds", wave.period_seconds)
                                 .Put("phaseOffsetSeconds", wave.phase_offset_seconds)
                                 .Put("headroomBytes", wave.headroom_bytes)
                                 .Take());
  }
  return writer.Put("tasks", gpu.tasks).Take();
}

nlohmann::json ToJson(const GpuNode& node) {
  const GpuNodeStatus& status = node.status;
  return ObjectWriter()
      .Put("apiVersion", std::string(kApiVersion))
      .Put("kind", std::string(kGpuNodeKind))
      .Put("metadata", ToJson(node.metadata))
      .Put("spec", ObjectWriter().OmitEmpty("nodeName", node.spec.node_name).Take())
      .OmitEmpty("status", ObjectWriter()
                               .OmitEmpty("gpus", status.gpus)
                               .OmitEmpty("agentVersion", status.agent_version)
                               .OmitEmpty("heartbeatTime", status.heartbeat_time)
                               .OmitEmpty("conditions", status.conditions)
                               .OmitEmpty("message", status.message)
                               .Take())
      .Take();
}

}  // namespace wavepool::api
