#include "wavepool/runtime/role_stream.h"

#include "cuda_status.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {

absl::StatusOr<int> StreamPriorityFor(agent::Role role) {
  int least = 0;
  int greatest = 0;
  WAVEPOOL_RETURN_IF_ERROR(CudaStatus(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                                      "cudaDeviceGetStreamPriorityRange"));
  return role == agent::Role::kForeground ? greatest : least;
}

absl::StatusOr<OwnedStream> CreateRoleStream(agent::Role role) {
  WAVEPOOL_ASSIGN_OR_RETURN(const int priority, StreamPriorityFor(role));
  cudaStream_t stream = nullptr;
  WAVEPOOL_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority),
                 "cudaStreamCreateWithPriority"));
  return OwnedStream(stream);
}

}  // namespace wavepool::runtime
