// The CUDA part of a ReplicaDevice, compiled where LibTorch has CUDA (replica_device_cuda.cpp).
#ifndef WAVEPOOL_RUNTIME_DEVICE_GPU_PARTS_H_
#define WAVEPOOL_RUNTIME_DEVICE_GPU_PARTS_H_

#include "wavepool/runtime/replica_device.h"

namespace wavepool::runtime::internal {

// A stream with `role`'s priority on `device` (a CUDA device with an index), as a LibTorch
// stream, and a GpuLaunchPacer over `pacer` on it.
absl::StatusOr<ReplicaDevice::Gpu> MakeGpu(torch::Device device, agent::Role role,
                                           LaunchPacer& pacer);

}  // namespace wavepool::runtime::internal

#endif  // WAVEPOOL_RUNTIME_DEVICE_GPU_PARTS_H_
