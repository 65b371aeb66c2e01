// The GPUs local mode's in-process agent watches (`wavepool run --devices`).
#ifndef WAVEPOOL_LOCAL_LOCAL_DEVICES_H_
#define WAVEPOOL_LOCAL_LOCAL_DEVICES_H_

#include <string>

#include "absl/status/statusor.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/base/clock.h"

namespace wavepool::local {

// "nvml": this machine's GPUs through NVML (Unavailable, naming why, when NVML finds none);
// "auto": the same when NVML finds a GPU, else null; "simulated": null (the caller makes
// simulated GPUs once it knows how many the jobs need). InvalidArgument naming --devices for
// anything else. `clock` is borrowed and must outlive the devices.
absl::StatusOr<agent::GpuDevicesPtr> OpenMachineGpus(const std::string& spec, Clock& clock);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_LOCAL_DEVICES_H_
