// The part of NVML's C ABI that the agent uses, declared here because NVML is loaded with dlopen
// at run time (no nvml.h or libnvidia-ml at build time), and the function table that
// OpenNvmlDevices fills from the library. Public so that tests can hand OpenNvmlDevicesWithApi a
// fake table; the rest of the agent uses OpenNvmlDevices (wavepool/agent/gpu_device.h).
//
// Every declaration below copies the documented definition in nvml.h / the NVML API Reference
// Guide (docs.nvidia.com/deploy/nvml-api): same field order, types and sizes, checked by
// static_asserts in nvml_api.cpp. Type names keep NVML's spelling so that they can be grepped
// against the reference.
#ifndef WAVEPOOL_AGENT_NVML_API_H_
#define WAVEPOOL_AGENT_NVML_API_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/base/clock.h"

namespace wavepool::agent::nvml {

// nvmlReturn_t: a C enum (4 bytes, passed as int). Only the codes the agent tells apart.
using nvmlReturn_t = int;
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// typedef struct nvmlDevice_st* nvmlDevice_t;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;

// Buffer sizes: NVML_DEVICE_UUID_V2_BUFFER_SIZE and NVML_DEVICE_NAME_V2_BUFFER_SIZE are 96 (the
// v1 sizes, 80 and 64, are smaller); NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE and
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE are 80. One 96-byte buffer fits them all.
inline constexpr unsigned int kNvmlStringBufferSize = 96;

// nvmlMemory_t (v1, what nvmlDeviceGetMemoryInfo fills), bytes:
//   unsigned long long total; unsigned long long free; unsigned long long used;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlUtilization_t, percent over the past sample period (1/6 s to 1 s depending on the product):
//   unsigned int gpu;     // time during which one or more kernels was executing
//   unsigned int memory;  // time during which global memory was being read or written
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

// nvmlProcessUtilizationSample_t:
//   unsigned int pid; unsigned long long timeStamp (CPU timestamp, microseconds);
//   unsigned int smUtil; unsigned int memUtil; unsigned int encUtil; unsigned int decUtil;
struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

// GPU Performance Monitoring (Hopper or newer; NVML R520 and later).
// typedef struct nvmlGpmSample_st* nvmlGpmSample_t;
struct nvmlGpmSample_st;
using nvmlGpmSample_t = nvmlGpmSample_st*;

// nvmlGpmMetricId_t: NVML_GPM_METRIC_SM_OCCUPANCY = 3, "Percentage of warps that were active vs
// theoretical maximum. 0.0 - 100.0."
inline constexpr unsigned int NVML_GPM_METRIC_SM_OCCUPANCY = 3;

// nvmlGpmMetric_t:
//   unsigned int metricId; nvmlReturn_t nvmlReturn; double value;
//   struct { char* shortName; char* longName; char* unit; } metricInfo;
struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

// nvmlGpmMetricsGet_t declares `nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX]`; the constant grew
// across releases (98 in R520's header, over 300 in recent ones) while
// NVML_GPM_METRICS_GET_VERSION stayed 1. NVML reads `numMetrics` entries; the agent asks for one
// and reserves more room than any published header so the struct is never smaller than the
// library's.
inline constexpr std::size_t kGpmMetricCapacity = 512;
inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;

// nvmlGpmMetricsGet_t:
//   unsigned int version; unsigned int numMetrics; nvmlGpmSample_t sample1;
//   nvmlGpmSample_t sample2; nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricCapacity];
};

// nvmlGpmSupport_t: unsigned int version (NVML_GPM_SUPPORT_VERSION); unsigned int
// isSupportedDevice.
inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

// NVML's documented interval floor between the two nvmlGpmSampleGet calls of one metric window
// ("should be greater than 100ms due to the internal sample refresh rate").
inline constexpr std::chrono::milliseconds kGpmMinInterval{100};

// The functions, with NVML's signatures. Required entries must be non-null; an optional one may
// be null (an older driver), which turns its feature into a GpuInfo limitation.
struct NvmlApi {
  // Required.
  nvmlReturn_t (*nvmlInit_v2)() = nullptr;
  nvmlReturn_t (*nvmlShutdown)() = nullptr;
  const char* (*nvmlErrorString)(nvmlReturn_t result) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetCount_v2)(unsigned int* deviceCount) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2)(unsigned int index, nvmlDevice_t* device) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetUUID)(nvmlDevice_t device, char* uuid, unsigned int length) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetName)(nvmlDevice_t device, char* name, unsigned int length) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetMemoryInfo)(nvmlDevice_t device, nvmlMemory_t* memory) = nullptr;
  // Optional.
  nvmlReturn_t (*nvmlSystemGetNVMLVersion)(char* version, unsigned int length) = nullptr;
  nvmlReturn_t (*nvmlSystemGetDriverVersion)(char* version, unsigned int length) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetUtilizationRates)(nvmlDevice_t device,
                                                nvmlUtilization_t* utilization) = nullptr;
  // Call with utilization == nullptr to learn the count; NVML_ERROR_NOT_FOUND when no sample is
  // newer than lastSeenTimeStamp (microseconds).
  nvmlReturn_t (*nvmlDeviceGetProcessUtilization)(nvmlDevice_t device,
                                                  nvmlProcessUtilizationSample_t* utilization,
                                                  unsigned int* processSamplesCount,
                                                  unsigned long long lastSeenTimeStamp) = nullptr;
  nvmlReturn_t (*nvmlGpmQueryDeviceSupport)(nvmlDevice_t device,
                                            nvmlGpmSupport_t* gpmSupport) = nullptr;
  nvmlReturn_t (*nvmlGpmSampleAlloc)(nvmlGpmSample_t* gpmSample) = nullptr;
  nvmlReturn_t (*nvmlGpmSampleFree)(nvmlGpmSample_t gpmSample) = nullptr;
  nvmlReturn_t (*nvmlGpmSampleGet)(nvmlDevice_t device, nvmlGpmSample_t gpmSample) = nullptr;
  nvmlReturn_t (*nvmlGpmMetricsGet)(nvmlGpmMetricsGet_t* metricsGet) = nullptr;
};

// A loaded library: the table and the dlopen handle that keeps its functions valid.
struct NvmlLibrary {
  NvmlApi api;
  std::shared_ptr<void> handle;  // dlclose when the last copy goes
};

// dlopen(`library`, RTLD_NOW | RTLD_LOCAL) and dlsym of every entry. Unavailable naming the
// library (and dlerror's text) when it cannot be loaded, or the first missing required symbol.
absl::StatusOr<NvmlLibrary> LoadNvmlLibrary(const std::string& library);

// The name of the first required entry of `api` that is null, or nullptr when none is.
const char* MissingRequiredFunction(const NvmlApi& api);

// Initialises NVML through `api` and enumerates its GPUs, as OpenNvmlDevices does after loading.
// `clock` (borrowed; nullptr: the real clock) stamps samples and paces GPM. `keep_loaded` is
// released after nvmlShutdown. InvalidArgument when a required entry of `api` is null.
// With `limit_process_lookback`, process utilisation is never read further back than a second
// before clock->WallNow(), the CPU clock NVML stamps process samples with (tests whose fake NVML
// stamps its own times leave it off).
inline constexpr std::chrono::microseconds kProcessLookback = std::chrono::seconds(1);
absl::StatusOr<GpuDevicesPtr> OpenNvmlDevicesWithApi(const NvmlApi& api, Clock* clock,
                                                     std::shared_ptr<void> keep_loaded = nullptr,
                                                     bool limit_process_lookback = false);

// "nvmlErrorString's text (code)", e.g. "Not Supported (3)"; safe when nvmlErrorString is null
// or returns null.
std::string NvmlErrorText(const NvmlApi& api, nvmlReturn_t code);

// Per-process SM utilisation from one nvmlDeviceGetProcessUtilization answer: samples not newer
// than `last_seen_timestamp_us` are dropped (NVML may repeat them), a pid's remaining samples are
// averaged, percentages become 0..1 ratios (values over 100 are clamped), pids ascend.
struct MergedProcessUtilization {
  std::vector<ProcessUtilization> processes;
  unsigned long long last_seen_timestamp_us = 0;  // the newest timeStamp seen, for the next call
};
MergedProcessUtilization MergeProcessSamples(const nvmlProcessUtilizationSample_t* samples,
                                             std::size_t count,
                                             unsigned long long last_seen_timestamp_us);

// A GPM percentage (0..100) as a 0..1 ratio; nullopt for NaN or a value outside [0, 100.5]
// (a tiny overshoot from counter skew is clamped to 1).
std::optional<double> GpmPercentToRatio(double percent);

}  // namespace wavepool::agent::nvml

#endif  // WAVEPOOL_AGENT_NVML_API_H_
