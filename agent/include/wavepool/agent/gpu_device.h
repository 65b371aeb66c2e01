// The GPUs of one node, as the agent's telemetry sees them: what they are (index, UUID, model,
// memory) and what they are doing now (memory used, kernel-time utilisation, SM occupancy,
// per-process SM utilisation). Two implementations: NVML loaded at run time
// (OpenNvmlDevices, wavepool/agent/nvml_api.h) and a deterministic simulated device for tests and
// local mode (wavepool/agent/simulated_gpu.h).
//
// Every quantity a device cannot measure is absent (std::nullopt or an empty list), never a
// made-up zero; GpuInfo::limitations says why, in words the agent shows in its status.
#ifndef WAVEPOOL_AGENT_GPU_DEVICE_H_
#define WAVEPOOL_AGENT_GPU_DEVICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/base/clock.h"

namespace wavepool::agent {

// A GPU's index as the driver enumerates it (NVML index; CUDA_VISIBLE_DEVICES order may differ).
using GpuIndex = std::uint32_t;

struct GpuInfo {
  GpuIndex index = 0;
  // "GPU-" followed by 32 hex digits in 8-4-4-4-12 groups, as nvidia-smi and dcgm-exporter's UUID
  // label spell it; simulated GPUs use "GPU-sim-...".
  std::string uuid;
  std::string name;  // the product name, e.g. "NVIDIA H100 80GB HBM3"
  std::uint64_t memory_total_bytes = 0;
  // What this GPU's telemetry cannot report and why, e.g.
  // "sm_occupancy: nvmlGpmQueryDeviceSupport: GPM not supported (Hopper or newer required)".
  // Empty when every field of GpuSample is measured.
  std::vector<std::string> limitations;
};

// One process's share of a GPU's SMs over the device's last sampling period.
struct ProcessUtilization {
  std::int32_t pid = 0;       // in the agent's PID namespace (hostPID for the DaemonSet)
  double sm_utilization = 0;  // 0..1
};

struct GpuSample {
  MonotonicTime time;  // when the sample was taken (the device's Clock)
  std::uint64_t memory_used_bytes = 0;
  // Share of time during which at least one kernel ran, 0..1, over the device's own sampling
  // period (NVML: between 1/6 s and 1 s). nullopt when the device cannot say.
  std::optional<double> utilization;
  // Time-averaged ratio of resident warps to the SMs' maximum, 0..1 (NVML GPM
  // NVML_GPM_METRIC_SM_OCCUPANCY over the last >= 100 ms). nullopt without GPM or before two GPM
  // samples exist.
  std::optional<double> sm_occupancy;
  // Processes that used the SMs since the previous sample, by pid ascending. Empty when none did
  // or when the device cannot attribute utilisation to processes.
  std::vector<ProcessUtilization> processes;
};

// All GPUs of the node. Safe for concurrent use by any number of threads; the list of GPUs is
// constant after construction.
class GpuDevices {
 public:
  virtual ~GpuDevices() = default;

  // The GPUs, by index ascending.
  virtual const std::vector<GpuInfo>& gpus() const = 0;

  // Reads GPU `index` now. NotFound for an index not in gpus(); Unavailable when the device
  // fails to report its memory (the GPU fell off the bus, the driver went away).
  virtual absl::StatusOr<GpuSample> Sample(GpuIndex index) = 0;
  // Only time and memory_used_bytes: cheap enough for the memory waves' 100 Hz (one
  // nvmlDeviceGetMemoryInfo on NVML) while the rest is read at the control rate.
  virtual absl::StatusOr<GpuSample> SampleMemory(GpuIndex index) { return Sample(index); }

  // One line for logs and the agent's status: "NVML 12.580.159 (driver 580.159), 8 GPUs, GPM on
  // 8, per-process utilisation on 8" or "simulated, 2 GPUs".
  virtual std::string Describe() const = 0;
};
using GpuDevicesPtr = std::unique_ptr<GpuDevices>;

// NVML's default library name, resolved by the dynamic loader's usual search path.
// Whether `gpu` measures the GpuSample field `field` ("utilization", "sm_occupancy",
// "processes"): no limitation starts with "<field>: ".
bool Measures(const GpuInfo& gpu, std::string_view field);

// A node without usable GPUs: no GPU, and `reason` ("no GPUs: ...") as its description, so that
// an agent there runs and says why instead of failing.
GpuDevicesPtr MakeNoGpuDevices(std::string reason);

inline constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";

struct NvmlOptions {
  std::string library = kNvmlLibrary;
  // Stamps the samples and paces GPM (two GPM samples must be >= 100 ms apart). Borrowed, must
  // outlive the devices; nullptr: the real monotonic clock.
  Clock* clock = nullptr;
};

// Loads NVML with dlopen, initialises it and enumerates the GPUs. Unavailable, naming the library
// or the failing call, when the library is missing, lacks a required symbol, the driver is not
// loaded or no GPU is usable. A GPU that NVML lists but cannot open is skipped and named in
// Describe(). Missing optional features (utilisation, per-process utilisation, GPM) are
// GpuInfo::limitations, never errors.
absl::StatusOr<GpuDevicesPtr> OpenNvmlDevices(const NvmlOptions& options = {});

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_GPU_DEVICE_H_
