// The CUDA part of ReplicaDevice: compiled only where LibTorch has CUDA (runtime/CMakeLists.txt).
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <utility>

#include "gpu_parts.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/gpu_launch_pacer.h"
#include "wavepool/runtime/role_stream.h"

namespace wavepool::runtime::internal {

absl::StatusOr<ReplicaDevice::Gpu> MakeGpu(torch::Device device, agent::Role role,
                                           LaunchPacer& pacer) {
  const c10::cuda::CUDAGuard on_device(device.index());  // the stream belongs to `device`
  WAVEPOOL_ASSIGN_OR_RETURN(OwnedStream owned, CreateRoleStream(role));
  cudaStream_t raw = owned.get();
  std::shared_ptr<void> owner(
      owned.release(), [](void* stream) { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); });
  // LibTorch launches on it once it is the current stream (ReplicaDevice::Enter).
  const c10::Stream stream = c10::cuda::getStreamFromExternal(raw, device.index()).unwrap();
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<GpuLaunchPacer> gpu_pacer,
                            GpuLaunchPacer::Create(pacer, raw));
  GpuLaunchPacer* drained = gpu_pacer.get();
  return ReplicaDevice::Gpu{stream, std::move(owner), std::move(gpu_pacer),
                            [drained] { return drained->Drain(); }};
}

}  // namespace wavepool::runtime::internal
