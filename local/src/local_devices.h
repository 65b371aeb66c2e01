// The GPUs local mode's in-process agent watches (`wavepool run --devices`).
#ifndef WAVEPOOL_LOCAL_LOCAL_DEVICES_H_
#define WAVEPOOL_LOCAL_LOCAL_DEVICES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/base/clock.h"

namespace wavepool::local {

struct MachineGpus {
  agent::GpuDevicesPtr nvml;    // this machine's GPUs; null: simulated GPUs
  std::uint32_t simulated = 0;  // how many simulated GPUs were asked for; 0: as the jobs need
};

// `spec` as wavepool-agent's --devices takes it: "simulated" or "simulated:N" (N >= 1);
// "nvml": this machine's GPUs through NVML (Unavailable, naming why, when NVML finds none);
// "auto": NVML's GPUs when it finds one, else simulated. InvalidArgument naming --devices for
// anything else. `clock` is borrowed and must outlive the devices.
absl::StatusOr<MachineGpus> OpenMachineGpus(const std::string& spec, Clock& clock);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_LOCAL_DEVICES_H_
