// GPUNode (wavepool.dev/v1alpha1, cluster-scoped): what one node's agent reports about its GPUs,
// their occupancy and memory waves, and the tasks on them. One per managed node, named after the
// node and written only by that node's agent; `kubectl get gpunodes` shows the fleet.
//
// All types are plain values: copyable, not synchronised.
#ifndef WAVEPOOL_API_GPU_NODE_H_
#define WAVEPOOL_API_GPU_NODE_H_

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

inline constexpr std::string_view kGpuNodeKind = "GPUNode";

// Share of the GPU's streaming multiprocessors busy with each role, in [0, 1].
struct GpuOccupancy {
  double foreground = 0;
  double background = 0;
};

// The periodic memory use of the tasks on a GPU (wavelet-tick-tock §3.2: tick and tock waves
// interleave their peaks).
struct MemoryWave {
  std::int64_t peak_bytes = 0;
  std::int64_t trough_bytes = 0;
  double period_seconds = 0;
  double phase_offset_seconds = 0;  // Tock wave's peak after the tick wave's.
  std::int64_t headroom_bytes = 0;  // GPU memory left free at the peak.
};

// One training process on a GPU.
struct GpuTask {
  std::string namespace_;  // "namespace" on the wire.
  std::string job;
  std::string pod;
  Role role = Role::kForeground;
  std::int64_t pid = 0;  // In the agent's PID namespace.
  // What the worker last reported to the agent; absent before its first iteration.
  std::optional<TrainingProgress> progress;
};

struct GpuStatus {
  std::int64_t index = 0;  // NVML index on the node.
  std::string uuid;        // "GPU-..." as NVIDIA_VISIBLE_DEVICES takes it.
  std::string model;       // e.g. "NVIDIA A100-SXM4-80GB".
  std::int64_t memory_bytes = 0;
  GpuOccupancy occupancy;
  std::optional<MemoryWave> memory_wave;  // Absent until the agent has seen a full period.
  std::vector<GpuTask> tasks;
};

struct GpuNodeSpec {
  std::string node_name;  // "nodeName": the Kubernetes Node this object describes.
};

struct GpuNodeStatus {
  std::vector<GpuStatus> gpus;
  std::string agent_version;
  std::string heartbeat_time;  // RFC 3339.
  std::vector<Condition> conditions;
  std::string message;  // e.g. "NVML not found: no GPUs reported".
};

struct GpuNode {
  ObjectMeta metadata;
  GpuNodeSpec spec;
  GpuNodeStatus status;

  // Strict like TrainingJob::FromJson: apiVersion wavepool.dev/v1alpha1, kind GPUNode.
  static absl::StatusOr<GpuNode> FromJson(const nlohmann::json& json);
};

nlohmann::json ToJson(const GpuNode& node);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_GPU_NODE_H_
