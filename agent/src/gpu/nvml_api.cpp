// Loading NVML at run time, and the pure helpers around its answers.
#include "wavepool/agent/nvml_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavepool::agent::nvml {
namespace {

// The declarations must match NVML's x86-64 / aarch64 LP64 layout exactly (nvml.h).
static_assert(sizeof(nvmlReturn_t) == 4, "nvmlReturn_t is a 4-byte C enum");
static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t: three unsigned long long");
static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t: two unsigned int");
static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8 &&
                  offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16 &&
                  sizeof(nvmlProcessUtilizationSample_t) == 32,
              "nvmlProcessUtilizationSample_t: pid, (pad), timeStamp, smUtil, memUtil, encUtil, "
              "decUtil");
static_assert(offsetof(nvmlGpmMetric_t, value) == 8 &&
                  offsetof(nvmlGpmMetric_t, metricInfo) == 16 && sizeof(nvmlGpmMetric_t) == 40,
              "nvmlGpmMetric_t: metricId, nvmlReturn, value, metricInfo{3 pointers}");
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8 &&
                  offsetof(nvmlGpmMetricsGet_t, sample2) == 16 &&
                  offsetof(nvmlGpmMetricsGet_t, metrics) == 24,
              "nvmlGpmMetricsGet_t: version, numMetrics, sample1, sample2, metrics[]");
static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t: two unsigned int");

// dlsym into a typed function pointer. POSIX guarantees that a data pointer returned by dlsym
// converts to a function pointer; the memcpy keeps -Wpedantic quiet about the cast.
template <typename Fn>
void Resolve(void* handle, const char* symbol, Fn*& out) {
  void* address = dlsym(handle, symbol);
  static_assert(sizeof(address) == sizeof(out), "function and data pointers differ in size");
  std::memcpy(&out, &address, sizeof(out));
}

void ResolveAll(void* handle, NvmlApi& api) {
  Resolve(handle, "nvmlInit_v2", api.nvmlInit_v2);
  Resolve(handle, "nvmlShutdown", api.nvmlShutdown);
  Resolve(handle, "nvmlErrorString", api.nvmlErrorString);
  Resolve(handle, "nvmlDeviceGetCount_v2", api.nvmlDeviceGetCount_v2);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api.nvmlDeviceGetHandleByIndex_v2);
  Resolve(handle, "nvmlDeviceGetUUID", api.nvmlDeviceGetUUID);
  Resolve(handle, "nvmlDeviceGetName", api.nvmlDeviceGetName);
  Resolve(handle, "nvmlDeviceGetMemoryInfo", api.nvmlDeviceGetMemoryInfo);
  Resolve(handle, "nvmlSystemGetNVMLVersion", api.nvmlSystemGetNVMLVersion);
  Resolve(handle, "nvmlSystemGetDriverVersion", api.nvmlSystemGetDriverVersion);
  Resolve(handle, "nvmlDeviceGetUtilizationRates", api.nvmlDeviceGetUtilizationRates);
  Resolve(handle, "nvmlDeviceGetProcessUtilization", api.nvmlDeviceGetProcessUtilization);
  Resolve(handle, "nvmlGpmQueryDeviceSupport", api.nvmlGpmQueryDeviceSupport);
  Resolve(handle, "nvmlGpmSampleAlloc", api.nvmlGpmSampleAlloc);
  Resolve(handle, "nvmlGpmSampleFree", api.nvmlGpmSampleFree);
  Resolve(handle, "nvmlGpmSampleGet", api.nvmlGpmSampleGet);
  Resolve(handle, "nvmlGpmMetricsGet", api.nvmlGpmMetricsGet);
}

}  // namespace

const char* MissingRequiredFunction(const NvmlApi& api) {
  if (api.nvmlInit_v2 == nullptr) return "nvmlInit_v2";
  if (api.nvmlShutdown == nullptr) return "nvmlShutdown";
  if (api.nvmlErrorString == nullptr) return "nvmlErrorString";
  if (api.nvmlDeviceGetCount_v2 == nullptr) return "nvmlDeviceGetCount_v2";
  if (api.nvmlDeviceGetHandleByIndex_v2 == nullptr) return "nvmlDeviceGetHandleByIndex_v2";
  if (api.nvmlDeviceGetUUID == nullptr) return "nvmlDeviceGetUUID";
  if (api.nvmlDeviceGetName == nullptr) return "nvmlDeviceGetName";
  if (api.nvmlDeviceGetMemoryInfo == nullptr) return "nvmlDeviceGetMemoryInfo";
  return nullptr;
}

absl::StatusOr<NvmlLibrary> LoadNvmlLibrary(const std::string& library) {
  dlerror();  // clear any stale error
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrCat("dlopen ", library, ": ",
                                               why != nullptr ? why : "unknown error",
                                               " (is the NVIDIA driver installed?)"));
  }
  NvmlLibrary loaded;
  loaded.handle = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  ResolveAll(handle, loaded.api);
  if (const char* missing = MissingRequiredFunction(loaded.api); missing != nullptr) {
    return absl::UnavailableError(absl::StrCat(library, ": missing symbol ", missing,
                                               " (not NVML, or a driver older than "
                                               "the agent supports)"));
  }
  return loaded;
}

std::string NvmlErrorText(const NvmlApi& api, nvmlReturn_t code) {
  const char* text = api.nvmlErrorString != nullptr ? api.nvmlErrorString(code) : nullptr;
  return absl::StrCat(text != nullptr ? text : "NVML error", " (", code, ")");
}

MergedProcessUtilization MergeProcessSamples(const nvmlProcessUtilizationSample_t* samples,
                                             std::size_t count,
                                             unsigned long long last_seen_timestamp_us) {
  MergedProcessUtilization merged;
  merged.last_seen_timestamp_us = last_seen_timestamp_us;
  std::map<unsigned int, std::pair<double, int>> by_pid;  // pid -> (sum of ratios, samples)
  for (std::size_t i = 0; i < count; ++i) {
    const nvmlProcessUtilizationSample_t& s = samples[i];
    if (s.timeStamp <= last_seen_timestamp_us) continue;
    auto& [sum, n] = by_pid[s.pid];
    sum += std::min(s.smUtil, 100u) / 100.0;
    ++n;
    merged.last_seen_timestamp_us = std::max(merged.last_seen_timestamp_us, s.timeStamp);
  }
  for (const auto& [pid, sum_and_count] : by_pid) {
    merged.processes.push_back(
        {static_cast<std::int32_t>(pid), sum_and_count.first / sum_and_count.second});
  }
  return merged;
}

std::optional<double> GpmPercentToRatio(double percent) {
  if (std::isnan(percent) || percent < 0 || percent > 100.5) return std::nullopt;
  return std::min(percent, 100.0) / 100.0;
}

}  // namespace wavepool::agent::nvml
