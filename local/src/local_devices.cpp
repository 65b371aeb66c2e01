#include "local_devices.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace wavepool::local {

absl::StatusOr<MachineGpus> OpenMachineGpus(const std::string& spec, Clock& clock) {
  MachineGpus machine;
  if (spec == "simulated") return machine;
  if (spec.rfind("simulated:", 0) == 0) {
    if (!absl::SimpleAtoi(spec.substr(10), &machine.simulated) || machine.simulated < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--devices: simulated:N needs a GPU count >= 1, got '", spec, "'"));
    }
    return machine;
  }
  if (spec != "nvml" && spec != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices: must be simulated, simulated:N, nvml or auto, got '", spec, "'"));
  }
  agent::NvmlOptions options;
  options.clock = &clock;
  absl::StatusOr<agent::GpuDevicesPtr> devices = agent::OpenNvmlDevices(options);
  if (devices.ok() && (*devices)->gpus().empty()) {
    devices = absl::UnavailableError("NVML lists no usable GPU");
  }
  if (devices.ok()) {
    machine.nvml = *std::move(devices);
    return machine;
  }
  if (spec == "nvml") {
    return absl::UnavailableError(absl::StrCat("--devices nvml: ", devices.status().message()));
  }
  return machine;  // auto on a machine without GPUs: simulated ones
}

}  // namespace wavepool::local
