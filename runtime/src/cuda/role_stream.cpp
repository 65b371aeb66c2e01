#include "wavepool/runtime/role_stream.h"

#include "cuda_status.h"

namespace wavepool::runtime {

absl::StatusOr<int> StreamPriorityFor(agent::Role role) {
  int least = 0;
  int greatest = 0;
  if (absl::Status s = CudaStatus(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                                  "cudaDeviceGetStreamPriorityRange");
      !s.ok()) {
    return s;
  }
  return role == agent::Role::kForeground ? greatest : least;
}

absl::StatusOr<OwnedStream> CreateRoleStream(agent::Role role) {
  absl::StatusOr<int> priority = StreamPriorityFor(role);
  if (!priority.ok()) return priority.status();
  cudaStream_t stream = nullptr;
  if (absl::Status s =
          CudaStatus(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, *priority),
                     "cudaStreamCreateWithPriority");
      !s.ok()) {
    return s;
  }
  return OwnedStream(stream);
}

}  // namespace wavepool::runtime
