// GPUNode rules (docs/api.md lists them with their messages).
#include "absl/strings/str_cat.h"
#include "progress_codec.h"
#include "validation_util.h"
#include "wavepool/api/validation.h"

namespace wavepool::api {
namespace {

absl::Status ValidateMemoryWave(const MemoryWave& wave, const FieldPath& path) {
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("peakBytes"), wave.peak_bytes, 0));
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("troughBytes"), wave.trough_bytes, 0));
  if (wave.trough_bytes > wave.peak_bytes) {
    return path.Child("troughBytes")
        .Invalid(
            absl::StrCat("must be <= peakBytes (", wave.peak_bytes, "), got ", wave.trough_bytes));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("periodSeconds"), wave.period_seconds, 0.0));
  // The offset is measured on the tick-tock job's own waves, whose period may differ from the
  // GPU's wave (their sum can repeat every half iteration): no bound from periodSeconds.
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("phaseOffsetSeconds"), wave.phase_offset_seconds, 0.0));
  return CheckAtLeast(path.Child("headroomBytes"), wave.headroom_bytes, 0);
}

absl::Status ValidateTask(const GpuTask& task, const FieldPath& path) {
  WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(path.Child("namespace"), task.namespace_));
  if (!IsDns1123Label(task.namespace_)) {
    return path.Child("namespace")
        .Invalid("must be a namespace name (DNS-1123 label), got " + Quote(task.namespace_));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(path.Child("job"), task.job));
  WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(path.Child("pod"), task.pod));
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("pid"), task.pid, 1));
  if (!task.progress.has_value()) return absl::OkStatus();
  return ValidateProgress(*task.progress, path.Child("progress"));
}

absl::Status ValidateGpu(const GpuStatus& gpu, const FieldPath& path) {
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("index"), gpu.index, 0));
  WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(path.Child("uuid"), gpu.uuid));
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("memoryBytes"), gpu.memory_bytes, 0));
  const FieldPath occupancy = path.Child("occupancy");
  WAVEPOOL_RETURN_IF_ERROR(
      CheckInClosedRange(occupancy.Child("foreground"), gpu.occupancy.foreground, 0.0, 1.0));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckInClosedRange(occupancy.Child("background"), gpu.occupancy.background, 0.0, 1.0));
  if (gpu.memory_wave.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateMemoryWave(*gpu.memory_wave, path.Child("memoryWave")));
  }
  for (std::size_t i = 0; i < gpu.tasks.size(); ++i) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateTask(gpu.tasks[i], path.Child("tasks").Index(i)));
  }
  return absl::OkStatus();
}

absl::Status ValidateGpus(const std::vector<GpuStatus>& gpus, const FieldPath& path) {
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateGpu(gpus[i], path.Index(i)));
    for (std::size_t j = 0; j < i; ++j) {
      if (gpus[j].index == gpus[i].index) {
        return path.Index(i).Child("index").Invalid(
            absl::StrCat("duplicates ", path.Index(j).str(), ".index (", gpus[i].index, ")"));
      }
      if (gpus[j].uuid == gpus[i].uuid) {
        return path.Index(i).Child("uuid").Invalid(
            absl::StrCat("duplicates ", path.Index(j).str(), ".uuid ", Quote(gpus[i].uuid)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateGpuNode(const GpuNode& node) {
  WAVEPOOL_RETURN_IF_ERROR(CheckObjectNames(node.metadata, /*namespaced=*/false));
  const FieldPath node_name("spec.nodeName");
  WAVEPOOL_RETURN_IF_ERROR(CheckNonEmpty(node_name, node.spec.node_name));
  if (!IsDns1123Subdomain(node.spec.node_name)) {
    return node_name.Invalid("must be a Node name (DNS-1123 subdomain), got " +
                             Quote(node.spec.node_name));
  }
  const FieldPath status("status");
  WAVEPOOL_RETURN_IF_ERROR(ValidateGpus(node.status.gpus, status.Child("gpus")));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckRfc3339(status.Child("heartbeatTime"), node.status.heartbeat_time, false));
  return ValidateConditions(node.status.conditions, status.Child("conditions"));
}

}  // namespace

absl::Status Validate(const GpuNode& node) {
  return WithContext(ValidateGpuNode(node), ObjectContext(kGpuNodeKind, node.metadata.name));
}

}  // namespace wavepool::api
