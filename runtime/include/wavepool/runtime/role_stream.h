// The CUDA stream a task launches on, with the priority of its role (deeppool-burst-parallel §5):
// a foreground task's work gets the device's greatest stream priority, a background task's its
// least, so that when both have blocks waiting the block scheduler picks the foreground's. On an
// MPS node the controller also sets the background pod's CUDA_MPS_CLIENT_PRIORITY, which orders
// the two processes' work the same way.
#ifndef WAVEPOOL_RUNTIME_ROLE_STREAM_H_
#define WAVEPOOL_RUNTIME_ROLE_STREAM_H_

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/statusor.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::runtime {

struct StreamDeleter {
  void operator()(cudaStream_t stream) const { cudaStreamDestroy(stream); }
};
using OwnedStream = std::unique_ptr<CUstream_st, StreamDeleter>;

// The priority for `role` on the current device (lower numbers are higher priorities in CUDA).
absl::StatusOr<int> StreamPriorityFor(agent::Role role);

// A non-blocking stream (it does not synchronise with the legacy default stream) on the current
// device, with StreamPriorityFor(role). Internal naming the CUDA call that failed.
absl::StatusOr<OwnedStream> CreateRoleStream(agent::Role role);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_ROLE_STREAM_H_
