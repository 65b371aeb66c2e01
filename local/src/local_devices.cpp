#include "local_devices.h"

#include "absl/strings/str_cat.h"

namespace wavepool::local {

absl::StatusOr<agent::GpuDevicesPtr> OpenMachineGpus(const std::string& spec, Clock& clock) {
  if (spec == "simulated") return agent::GpuDevicesPtr();
  if (spec != "nvml" && spec != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices: must be simulated, nvml or auto, got '", spec, "'"));
  }
  agent::NvmlOptions options;
  options.clock = &clock;
  absl::StatusOr<agent::GpuDevicesPtr> devices = agent::OpenNvmlDevices(options);
  if (devices.ok() && (*devices)->gpus().empty()) {
    devices = absl::UnavailableError("NVML lists no usable GPU");
  }
  if (devices.ok() || spec == "nvml") {
    if (!devices.ok()) {
      return absl::UnavailableError(absl::StrCat("--devices nvml: ", devices.status().message()));
    }
    return devices;
  }
  return agent::GpuDevicesPtr();  // auto on a machine without GPUs: simulated ones
}

}  // namespace wavepool::local
