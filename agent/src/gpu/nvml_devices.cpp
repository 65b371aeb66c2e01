// GpuDevices over NVML: one NvmlDevices per agent, NVML initialised for its lifetime.
//
// Each feature beyond memory is probed once per GPU when the devices open; a feature that the GPU
// or driver lacks becomes a GpuInfo limitation and is never called again, while a transient
// failure of a supported feature leaves that field of one sample empty.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/agent/nvml_api.h"
#include "wavepool/base/plural.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace nvml {
namespace {

// Reads an NVML string into a std::string, stopping at the first NUL even when the library did
// not terminate the buffer.
template <typename Fn, typename... Args>
nvmlReturn_t ReadString(Fn fn, std::string& out, Args... args) {
  std::array<char, kNvmlStringBufferSize + 1> buffer{};
  const nvmlReturn_t result = fn(args..., buffer.data(), kNvmlStringBufferSize);
  if (result == NVML_SUCCESS) out.assign(buffer.data(), strnlen(buffer.data(), buffer.size()));
  return result;
}

// One GPU: its handle, what it supports (constant after Open) and its sampling state.
struct NvmlGpu {
  GpuInfo info;
  nvmlDevice_t device = nullptr;
  bool has_utilization = false;
  bool has_process_utilization = false;
  bool has_gpm = false;

  absl::Mutex mu;
  unsigned long long last_seen_timestamp_us ABSL_GUARDED_BY(mu) = 0;
  // GPM window: `gpm_previous` was read at `gpm_previous_time`; each rotation reads `gpm_next`,
  // computes the metric over (previous, next) and swaps them.
  nvmlGpmSample_t gpm_previous ABSL_GUARDED_BY(mu) = nullptr;
  nvmlGpmSample_t gpm_next ABSL_GUARDED_BY(mu) = nullptr;
  MonotonicTime gpm_previous_time ABSL_GUARDED_BY(mu);
  std::optional<double> sm_occupancy ABSL_GUARDED_BY(mu);  // over the last completed window
  std::unique_ptr<nvmlGpmMetricsGet_t> metrics_get;
};

class NvmlDevices final : public GpuDevices {
 public:
  NvmlDevices(const NvmlApi& api, Clock* clock, std::shared_ptr<void> keep_loaded,
              bool limit_process_lookback)
      : keep_loaded_(std::move(keep_loaded)),
        limit_process_lookback_(limit_process_lookback),
        api_(api) {
    if (clock == nullptr) {
      owned_clock_ = MakeRealClock();
      clock = owned_clock_.get();
    }
    clock_ = clock;
  }

  ~NvmlDevices() override {
    for (auto& gpu : devices_) {
      absl::MutexLock lock(&gpu->mu);
      FreeGpm(*gpu);
    }
    if (initialized_) api_.nvmlShutdown();
    // keep_loaded_ (the dlopen handle) is released after this body: after nvmlShutdown.
  }

  NvmlDevices(const NvmlDevices&) = delete;
  NvmlDevices& operator=(const NvmlDevices&) = delete;

  absl::Status Open() {
    if (nvmlReturn_t r = api_.nvmlInit_v2(); r != NVML_SUCCESS) {
      return absl::UnavailableError(absl::StrCat("nvmlInit_v2: ", NvmlErrorText(api_, r)));
    }
    initialized_ = true;
    ReadVersions();
    unsigned int count = 0;
    if (nvmlReturn_t r = api_.nvmlDeviceGetCount_v2(&count); r != NVML_SUCCESS) {
      return absl::UnavailableError(
          absl::StrCat("nvmlDeviceGetCount_v2: ", NvmlErrorText(api_, r)));
    }
    if (count == 0) {
      return absl::UnavailableError(
          "nvmlDeviceGetCount_v2: NVML sees no GPU (are the devices visible to this container?)");
    }
    for (unsigned int index = 0; index < count; ++index) {
      auto gpu = OpenGpu(index);
      if (!gpu.ok()) {
        skipped_.push_back(std::string(gpu.status().message()));
        continue;
      }
      gpus_.push_back((*gpu)->info);
      devices_.push_back(*std::move(gpu));
    }
    if (devices_.empty()) {
      return absl::UnavailableError(absl::StrCat(
          "NVML lists ", count, " GPUs and none is usable: ", absl::StrJoin(skipped_, "; ")));
    }
    return absl::OkStatus();
  }

  const std::vector<GpuInfo>& gpus() const override { return gpus_; }

  absl::StatusOr<GpuSample> SampleMemory(GpuIndex index) override {
    NvmlGpu* gpu = nullptr;
    absl::StatusOr<GpuSample> sample = ReadMemory(index, gpu);
    if (sample.ok()) sample->time = clock_->Now();
    return sample;
  }

  absl::StatusOr<GpuSample> Sample(GpuIndex index) override {
    NvmlGpu* gpu = nullptr;
    WAVEPOOL_ASSIGN_OR_RETURN(GpuSample sample, ReadMemory(index, gpu));
    if (gpu->has_utilization) {
      nvmlUtilization_t utilization{};
      if (api_.nvmlDeviceGetUtilizationRates(gpu->device, &utilization) == NVML_SUCCESS) {
        sample.utilization = std::min(utilization.gpu, 100u) / 100.0;
      }
    }
    absl::MutexLock lock(&gpu->mu);
    sample.time = clock_->Now();
    if (gpu->has_process_utilization) sample.processes = ReadProcesses(*gpu);
    if (gpu->has_gpm) sample.sm_occupancy = RotateGpm(*gpu, sample.time);
    return sample;
  }

  std::string Describe() const override {
    int gpm = 0;
    int processes = 0;
    for (const auto& gpu : devices_) {
      gpm += gpu->has_gpm ? 1 : 0;
      processes += gpu->has_process_utilization ? 1 : 0;
    }
    std::string line = absl::StrCat("NVML ", nvml_version_.empty() ? "?" : nvml_version_);
    if (!driver_version_.empty()) absl::StrAppend(&line, " (driver ", driver_version_, ")");
    absl::StrAppend(&line, ", ", Plural(devices_.size(), "GPU"), ", GPM on ", gpm,
                    ", per-process utilisation on ", processes);
    for (const std::string& skipped : skipped_) absl::StrAppend(&line, "; skipped ", skipped);
    return line;
  }

 private:
  // The sample's memory_used_bytes, and the GPU it was read from (for the caller's other reads).
  absl::StatusOr<GpuSample> ReadMemory(GpuIndex index, NvmlGpu*& gpu) {
    gpu = Find(index);
    if (gpu == nullptr) {
      return absl::NotFoundError(absl::StrCat("GPU ", index, ": not among the NVML devices"));
    }
    nvmlMemory_t memory{};
    if (nvmlReturn_t r = api_.nvmlDeviceGetMemoryInfo(gpu->device, &memory); r != NVML_SUCCESS) {
      return absl::UnavailableError(
          absl::StrCat("nvmlDeviceGetMemoryInfo (GPU ", index, "): ", NvmlErrorText(api_, r)));
    }
    GpuSample sample;
    sample.memory_used_bytes = memory.used;
    return sample;
  }

  void ReadVersions() {
    if (api_.nvmlSystemGetNVMLVersion != nullptr) {
      ReadString(api_.nvmlSystemGetNVMLVersion, nvml_version_);
    }
    if (api_.nvmlSystemGetDriverVersion != nullptr) {
      ReadString(api_.nvmlSystemGetDriverVersion, driver_version_);
    }
  }

  absl::StatusOr<std::unique_ptr<NvmlGpu>> OpenGpu(unsigned int index) {
    auto gpu = std::make_unique<NvmlGpu>();
    gpu->info.index = index;
    auto fail = [&](const char* call, nvmlReturn_t r) {
      return absl::UnavailableError(
          absl::StrCat("GPU ", index, ": ", call, ": ", NvmlErrorText(api_, r)));
    };
    if (nvmlReturn_t r = api_.nvmlDeviceGetHandleByIndex_v2(index, &gpu->device);
        r != NVML_SUCCESS) {
      return fail("nvmlDeviceGetHandleByIndex_v2", r);
    }
    if (nvmlReturn_t r = ReadString(api_.nvmlDeviceGetUUID, gpu->info.uuid, gpu->device);
        r != NVML_SUCCESS) {
      return fail("nvmlDeviceGetUUID", r);
    }
    if (nvmlReturn_t r = ReadString(api_.nvmlDeviceGetName, gpu->info.name, gpu->device);
        r != NVML_SUCCESS) {
      gpu->info.name = "unknown";
      gpu->info.limitations.push_back(
          absl::StrCat("name: nvmlDeviceGetName: ", NvmlErrorText(api_, r)));
    }
    nvmlMemory_t memory{};
    if (nvmlReturn_t r = api_.nvmlDeviceGetMemoryInfo(gpu->device, &memory); r != NVML_SUCCESS) {
      return fail("nvmlDeviceGetMemoryInfo", r);
    }
    gpu->info.memory_total_bytes = memory.total;
    ProbeUtilization(*gpu);
    ProbeProcessUtilization(*gpu);
    ProbeGpm(*gpu);
    return gpu;
  }

  void ProbeUtilization(NvmlGpu& gpu) {
    if (api_.nvmlDeviceGetUtilizationRates == nullptr) {
      gpu.info.limitations.push_back(
          "utilization: nvmlDeviceGetUtilizationRates missing from the library");
      return;
    }
    nvmlUtilization_t utilization{};
    const nvmlReturn_t r = api_.nvmlDeviceGetUtilizationRates(gpu.device, &utilization);
    gpu.has_utilization = r == NVML_SUCCESS;
    if (!gpu.has_utilization) {
      gpu.info.limitations.push_back(
          absl::StrCat("utilization: nvmlDeviceGetUtilizationRates: ", NvmlErrorText(api_, r)));
    }
  }

  void ProbeProcessUtilization(NvmlGpu& gpu) {
    if (api_.nvmlDeviceGetProcessUtilization == nullptr) {
      gpu.info.limitations.push_back(
          "processes: nvmlDeviceGetProcessUtilization missing from the library");
      return;
    }
    // The size query: NOT_FOUND (no sample yet) and INSUFFICIENT_SIZE both mean "supported".
    unsigned int count = 0;
    const nvmlReturn_t r = api_.nvmlDeviceGetProcessUtilization(gpu.device, nullptr, &count, 0);
    gpu.has_process_utilization =
        r == NVML_SUCCESS || r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INSUFFICIENT_SIZE;
    if (!gpu.has_process_utilization) {
      gpu.info.limitations.push_back(
          absl::StrCat("processes: nvmlDeviceGetProcessUtilization: ", NvmlErrorText(api_, r)));
    }
  }

  void ProbeGpm(NvmlGpu& gpu) {
    if (api_.nvmlGpmQueryDeviceSupport == nullptr || api_.nvmlGpmSampleAlloc == nullptr ||
        api_.nvmlGpmSampleFree == nullptr || api_.nvmlGpmSampleGet == nullptr ||
        api_.nvmlGpmMetricsGet == nullptr) {
      gpu.info.limitations.push_back(
          "sm_occupancy: the library has no GPM functions (NVML R520 or newer required)");
      return;
    }
    nvmlGpmSupport_t support{};
    support.version = NVML_GPM_SUPPORT_VERSION;
    if (nvmlReturn_t r = api_.nvmlGpmQueryDeviceSupport(gpu.device, &support); r != NVML_SUCCESS) {
      gpu.info.limitations.push_back(
          absl::StrCat("sm_occupancy: nvmlGpmQueryDeviceSupport: ", NvmlErrorText(api_, r)));
      return;
    }
    if (support.isSupportedDevice == 0) {
      gpu.info.limitations.push_back(
          "sm_occupancy: GPM not supported on this GPU (Hopper or newer required)");
      return;
    }
    absl::MutexLock lock(&gpu.mu);  // uncontended: nothing samples before Open returns
    absl::Status started = StartGpm(gpu);
    if (!started.ok()) {
      FreeGpm(gpu);
      gpu.info.limitations.push_back(absl::StrCat("sm_occupancy: ", started.message()));
      return;
    }
    gpu.has_gpm = true;
  }

  // Allocates the two sample buffers and reads the first window's start.
  absl::Status StartGpm(NvmlGpu& gpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.mu) {
    for (nvmlGpmSample_t* sample : {&gpu.gpm_previous, &gpu.gpm_next}) {
      if (nvmlReturn_t r = api_.nvmlGpmSampleAlloc(sample); r != NVML_SUCCESS) {
        *sample = nullptr;
        return absl::UnavailableError(absl::StrCat("nvmlGpmSampleAlloc: ", NvmlErrorText(api_, r)));
      }
    }
    if (nvmlReturn_t r = api_.nvmlGpmSampleGet(gpu.device, gpu.gpm_previous); r != NVML_SUCCESS) {
      return absl::UnavailableError(absl::StrCat("nvmlGpmSampleGet: ", NvmlErrorText(api_, r)));
    }
    gpu.gpm_previous_time = clock_->Now();
    gpu.metrics_get = std::make_unique<nvmlGpmMetricsGet_t>();
    return absl::OkStatus();
  }

  void FreeGpm(NvmlGpu& gpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.mu) {
    for (nvmlGpmSample_t* sample : {&gpu.gpm_previous, &gpu.gpm_next}) {
      if (*sample != nullptr) api_.nvmlGpmSampleFree(*sample);
      *sample = nullptr;
    }
  }

  // Closes the GPM window when it is at least kGpmMinInterval long and returns the
  // occupancy over the last closed window. A failed read or metric clears it until the next
  // window closes. REQUIRES: gpu.has_gpm.
  std::optional<double> RotateGpm(NvmlGpu& gpu, MonotonicTime now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.mu) {
    if (now - gpu.gpm_previous_time < kGpmMinInterval) return gpu.sm_occupancy;
    gpu.sm_occupancy.reset();
    if (api_.nvmlGpmSampleGet(gpu.device, gpu.gpm_next) != NVML_SUCCESS) {
      return std::nullopt;  // keep the old start: the next window is simply longer
    }
    nvmlGpmMetricsGet_t& get = *gpu.metrics_get;
    get.version = NVML_GPM_METRICS_GET_VERSION;
    get.numMetrics = 1;
    get.sample1 = gpu.gpm_previous;  // the older sample first: NVML computes sample2 - sample1
    get.sample2 = gpu.gpm_next;
    get.metrics[0] = nvmlGpmMetric_t{};
    get.metrics[0].metricId = NVML_GPM_METRIC_SM_OCCUPANCY;
    if (api_.nvmlGpmMetricsGet(&get) == NVML_SUCCESS && get.metrics[0].nvmlReturn == NVML_SUCCESS) {
      gpu.sm_occupancy = GpmPercentToRatio(get.metrics[0].value);
    }
    std::swap(gpu.gpm_previous, gpu.gpm_next);
    gpu.gpm_previous_time = now;
    return gpu.sm_occupancy;
  }

  // Samples newer than the last call's, merged by pid.
  std::vector<ProcessUtilization> ReadProcesses(NvmlGpu& gpu)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.mu) {
    // NVML scans every buffered sample newer than lastSeenTimeStamp: from 0 that takes
    // milliseconds (measured on an H100: 27% of a core at 100 Hz), so never look further back
    // than a second of the CPU clock NVML stamps its samples with.
    if (limit_process_lookback_) {
      const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                           clock_->WallNow().time_since_epoch())
                           .count();
      const auto lookback = kProcessLookback.count();
      if (now > lookback) {
        gpu.last_seen_timestamp_us = std::max<unsigned long long>(
            gpu.last_seen_timestamp_us, static_cast<unsigned long long>(now - lookback));
      }
    }
    unsigned int count = 0;
    nvmlReturn_t r = api_.nvmlDeviceGetProcessUtilization(gpu.device, nullptr, &count,
                                                          gpu.last_seen_timestamp_us);
    if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE) return {};  // NOT_FOUND: none
    // Processes can appear between the two calls: leave room, and grow once if still short.
    std::vector<nvmlProcessUtilizationSample_t> buffer;
    for (int attempt = 0; attempt < 2 && count > 0; ++attempt) {
      buffer.assign(count + 8, nvmlProcessUtilizationSample_t{});
      unsigned int written = static_cast<unsigned int>(buffer.size());
      r = api_.nvmlDeviceGetProcessUtilization(gpu.device, buffer.data(), &written,
                                               gpu.last_seen_timestamp_us);
      if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
        count = written;
        continue;
      }
      if (r != NVML_SUCCESS) return {};
      MergedProcessUtilization merged = MergeProcessSamples(
          buffer.data(), std::min<std::size_t>(written, buffer.size()), gpu.last_seen_timestamp_us);
      gpu.last_seen_timestamp_us = merged.last_seen_timestamp_us;
      return std::move(merged.processes);
    }
    return {};
  }

  NvmlGpu* Find(GpuIndex index) const {
    for (const auto& gpu : devices_) {
      if (gpu->info.index == index) return gpu.get();
    }
    return nullptr;
  }

  // Constant after Open.
  std::shared_ptr<void> keep_loaded_;  // declared first: released last, after nvmlShutdown
  const bool limit_process_lookback_;  // off in tests whose fake NVML stamps its own times
  NvmlApi api_;
  ClockPtr owned_clock_;
  Clock* clock_ = nullptr;
  bool initialized_ = false;
  std::string nvml_version_;
  std::string driver_version_;
  std::vector<std::string> skipped_;
  std::vector<GpuInfo> gpus_;
  std::vector<std::unique_ptr<NvmlGpu>> devices_;
};

}  // namespace

absl::StatusOr<GpuDevicesPtr> OpenNvmlDevicesWithApi(const NvmlApi& api, Clock* clock,
                                                     std::shared_ptr<void> keep_loaded,
                                                     bool limit_process_lookback) {
  if (const char* missing = MissingRequiredFunction(api); missing != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("NVML function table: ", missing, " is null, and it is required"));
  }
  auto devices =
      std::make_unique<NvmlDevices>(api, clock, std::move(keep_loaded), limit_process_lookback);
  WAVEPOOL_RETURN_IF_ERROR(devices->Open());
  return devices;
}

}  // namespace nvml

absl::StatusOr<GpuDevicesPtr> OpenNvmlDevices(const NvmlOptions& options) {
  WAVEPOOL_ASSIGN_OR_RETURN(nvml::NvmlLibrary library, nvml::LoadNvmlLibrary(options.library));
  return nvml::OpenNvmlDevicesWithApi(library.api, options.clock, std::move(library.handle),
                                      /*limit_process_lookback=*/true);
}

}  // namespace wavepool::agent
