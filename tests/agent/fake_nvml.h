// A fake NVML behind the same C function table the agent fills with dlsym, so that tests run
// NvmlDevices without a GPU. NVML's functions carry no context, so the table's trampolines reach
// the one FakeNvml that is installed (a test installs one at a time).
//
// GPM is modelled as counters: each GPU integrates occupancy (percent x ns) over its own time,
// which the test advances with Run(); nvmlGpmMetricsGet divides the integral's growth by the time
// between the two samples, and reports NVML_ERROR_INVALID_ARGUMENT for a metric whose samples
// are not in time order, as a real rate over a negative interval would be meaningless.
#ifndef WAVEPOOL_TESTS_AGENT_FAKE_NVML_H_
#define WAVEPOOL_TESTS_AGENT_FAKE_NVML_H_

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "wavepool/agent/nvml_api.h"

namespace wavepool::testing {

namespace nv = ::wavepool::agent::nvml;

struct FakeGpu {
  std::string uuid;
  std::string name;
  unsigned long long total_bytes = 80ull << 30;
  unsigned long long used_bytes = 0;
  unsigned int utilization_percent = 0;
  nv::nvmlReturn_t handle_result = nv::NVML_SUCCESS;
  nv::nvmlReturn_t memory_result = nv::NVML_SUCCESS;
  nv::nvmlReturn_t utilization_result = nv::NVML_SUCCESS;
  nv::nvmlReturn_t process_result = nv::NVML_SUCCESS;  // NOT_SUPPORTED to refuse
  std::vector<nv::nvmlProcessUtilizationSample_t> process_samples;
  std::vector<unsigned long long> last_seen_arguments;  // of each filling call
  bool gpm_supported = true;
  // GPM counters.
  long long gpm_time_ns = 0;
  double gpm_occupancy_integral = 0;  // percent * ns
  // Advances the GPU's own time by `ns` at `percent` occupancy.
  void Run(long long ns, double percent) {
    gpm_time_ns += ns;
    gpm_occupancy_integral += percent * static_cast<double>(ns);
  }
};

struct FakeGpmSample {
  long long time_ns = -1;
  double integral = 0;
};

class FakeNvml {
 public:
  FakeNvml() { Installed() = this; }
  ~FakeNvml() { Installed() = nullptr; }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  nv::nvmlReturn_t init_result = nv::NVML_SUCCESS;
  nv::nvmlReturn_t count_result = nv::NVML_SUCCESS;
  std::string nvml_version = "12.580.159";
  std::string driver_version = "580.159";
  std::vector<FakeGpu> gpus;
  int init_calls = 0;
  int shutdown_calls = 0;
  int live_gpm_samples = 0;
  int metrics_get_calls = 0;

  nv::NvmlApi Api() const {
    nv::NvmlApi api;
    api.nvmlInit_v2 = [] { return ++F().init_calls, F().init_result; };
    api.nvmlShutdown = [] { return ++F().shutdown_calls, nv::NVML_SUCCESS; };
    api.nvmlErrorString = &ErrorString;
    api.nvmlSystemGetNVMLVersion = [](char* out, unsigned int n) {
      return Copy(F().nvml_version, out, n);
    };
    api.nvmlSystemGetDriverVersion = [](char* out, unsigned int n) {
      return Copy(F().driver_version, out, n);
    };
    api.nvmlDeviceGetCount_v2 = [](unsigned int* count) {
      *count = static_cast<unsigned int>(F().gpus.size());
      return F().count_result;
    };
    api.nvmlDeviceGetHandleByIndex_v2 = [](unsigned int index, nv::nvmlDevice_t* device) {
      if (index >= F().gpus.size()) return nv::NVML_ERROR_INVALID_ARGUMENT;
      *device = reinterpret_cast<nv::nvmlDevice_t>(&F().gpus[index]);
      return F().gpus[index].handle_result;
    };
    api.nvmlDeviceGetUUID = [](nv::nvmlDevice_t d, char* out, unsigned int n) {
      return Copy(Gpu(d).uuid, out, n);
    };
    api.nvmlDeviceGetName = [](nv::nvmlDevice_t d, char* out, unsigned int n) {
      return Copy(Gpu(d).name, out, n);
    };
    api.nvmlDeviceGetMemoryInfo = [](nv::nvmlDevice_t d, nv::nvmlMemory_t* memory) {
      const FakeGpu& gpu = Gpu(d);
      *memory = {gpu.total_bytes, gpu.total_bytes - gpu.used_bytes, gpu.used_bytes};
      return gpu.memory_result;
    };
    api.nvmlDeviceGetUtilizationRates = [](nv::nvmlDevice_t d, nv::nvmlUtilization_t* u) {
      *u = {Gpu(d).utilization_percent, 0};
      return Gpu(d).utilization_result;
    };
    api.nvmlDeviceGetProcessUtilization = &ProcessUtilization;
    api.nvmlGpmQueryDeviceSupport = [](nv::nvmlDevice_t d, nv::nvmlGpmSupport_t* support) {
      if (support->version != nv::NVML_GPM_SUPPORT_VERSION) return nv::NVML_ERROR_INVALID_ARGUMENT;
      support->isSupportedDevice = Gpu(d).gpm_supported ? 1 : 0;
      return nv::NVML_SUCCESS;
    };
    api.nvmlGpmSampleAlloc = [](nv::nvmlGpmSample_t* sample) {
      *sample = reinterpret_cast<nv::nvmlGpmSample_t>(new FakeGpmSample);
      ++F().live_gpm_samples;
      return nv::NVML_SUCCESS;
    };
    api.nvmlGpmSampleFree = [](nv::nvmlGpmSample_t sample) {
      delete reinterpret_cast<FakeGpmSample*>(sample);
      --F().live_gpm_samples;
      return nv::NVML_SUCCESS;
    };
    api.nvmlGpmSampleGet = [](nv::nvmlDevice_t d, nv::nvmlGpmSample_t sample) {
      auto* s = reinterpret_cast<FakeGpmSample*>(sample);
      s->time_ns = Gpu(d).gpm_time_ns;
      s->integral = Gpu(d).gpm_occupancy_integral;
      return nv::NVML_SUCCESS;
    };
    api.nvmlGpmMetricsGet = &MetricsGet;
    return api;
  }

 private:
  static FakeNvml*& Installed() {
    static FakeNvml* installed = nullptr;
    return installed;
  }
  static FakeNvml& F() { return *Installed(); }
  static FakeGpu& Gpu(nv::nvmlDevice_t device) { return *reinterpret_cast<FakeGpu*>(device); }

  static nv::nvmlReturn_t Copy(const std::string& text, char* out, unsigned int length) {
    if (text.size() + 1 > length) return nv::NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(out, text.c_str(), text.size() + 1);
    return nv::NVML_SUCCESS;
  }

  static const char* ErrorString(nv::nvmlReturn_t r) {
    switch (r) {
      case nv::NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
      case nv::NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
      case nv::NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
      case nv::NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
      default:
        return "Unknown Error";
    }
  }

  // Documented protocol: NOT_FOUND when nothing is newer than lastSeenTimeStamp; a null or short
  // buffer gets the needed count and INSUFFICIENT_SIZE.
  static nv::nvmlReturn_t ProcessUtilization(nv::nvmlDevice_t d,
                                             nv::nvmlProcessUtilizationSample_t* out,
                                             unsigned int* count, unsigned long long last_seen) {
    FakeGpu& gpu = Gpu(d);
    if (gpu.process_result != nv::NVML_SUCCESS) return gpu.process_result;
    std::vector<nv::nvmlProcessUtilizationSample_t> newer;
    for (const auto& s : gpu.process_samples) {
      if (s.timeStamp > last_seen) newer.push_back(s);
    }
    if (newer.empty()) return nv::NVML_ERROR_NOT_FOUND;
    if (out == nullptr || *count < newer.size()) {
      *count = static_cast<unsigned int>(newer.size());
      return nv::NVML_ERROR_INSUFFICIENT_SIZE;
    }
    gpu.last_seen_arguments.push_back(last_seen);
    std::copy(newer.begin(), newer.end(), out);
    *count = static_cast<unsigned int>(newer.size());
    return nv::NVML_SUCCESS;
  }

  static nv::nvmlReturn_t MetricsGet(nv::nvmlGpmMetricsGet_t* get) {
    ++F().metrics_get_calls;
    if (get->version != nv::NVML_GPM_METRICS_GET_VERSION || get->numMetrics != 1) {
      return nv::NVML_ERROR_INVALID_ARGUMENT;
    }
    const auto* a = reinterpret_cast<const FakeGpmSample*>(get->sample1);
    const auto* b = reinterpret_cast<const FakeGpmSample*>(get->sample2);
    nv::nvmlGpmMetric_t& metric = get->metrics[0];
    if (metric.metricId != nv::NVML_GPM_METRIC_SM_OCCUPANCY || b->time_ns <= a->time_ns) {
      metric.nvmlReturn = nv::NVML_ERROR_INVALID_ARGUMENT;
      return nv::NVML_SUCCESS;
    }
    metric.nvmlReturn = nv::NVML_SUCCESS;
    metric.value = (b->integral - a->integral) / static_cast<double>(b->time_ns - a->time_ns);
    return nv::NVML_SUCCESS;
  }
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_AGENT_FAKE_NVML_H_
