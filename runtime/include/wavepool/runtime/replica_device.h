// Where one replica of a model trains (docs/runtime.md, "On a GPU"): the CPU, or one CUDA device.
// On a GPU the replica launches on a stream of its own with its role's priority (role_stream.h:
// a foreground's kernels get the device's greatest priority, a background's its least), and its
// per-layer launch groups are paced by their completion on the GPU (gpu_launch_pacer.h). On the
// CPU both are the caller's: the current thread's work and the pacer given.
//
// Thread safety: one thread at a time uses a replica's device (tick-tock's waves each own one);
// Enter makes its stream current for that thread. Ownership: borrows the pacer, which must
// outlive it; owns its stream.
#ifndef WAVEPOOL_RUNTIME_REPLICA_DEVICE_H_
#define WAVEPOOL_RUNTIME_REPLICA_DEVICE_H_

#include <c10/core/StreamGuard.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/runtime/launch_pacer.h"

namespace wavepool::runtime {

// "cpu"; "cuda" (cuda:0) or "cuda:N"; "auto": cuda:0 when LibTorch sees a CUDA device, else the
// CPU. InvalidArgument naming the text for anything else; FailedPrecondition for a CUDA device
// LibTorch does not see (a CPU-only build, no GPU visible, N beyond the visible devices).
absl::StatusOr<torch::Device> ParseDevice(std::string_view name);

class ReplicaDevice {
 public:
  // On the CPU: `pacer` as it is. On a CUDA device: a new stream with `role`'s priority and a
  // GpuLaunchPacer over `pacer`. FailedPrecondition for a CUDA device in a build whose LibTorch
  // has no CUDA; Internal naming the CUDA call that failed.
  static absl::StatusOr<std::unique_ptr<ReplicaDevice>> Create(torch::Device device,
                                                               agent::Role role,
                                                               LaunchPacer* pacer);
  ~ReplicaDevice();
  ReplicaDevice(const ReplicaDevice&) = delete;
  ReplicaDevice& operator=(const ReplicaDevice&) = delete;

  const torch::Device& device() const { return device_; }
  // What the replica's launch groups run through.
  LaunchPacer* pacer() const { return pacer_; }

  // Makes the replica's stream (and its device) current on the calling thread for the guard's
  // life; on the CPU it changes nothing.
  c10::OptionalStreamGuard Enter() const {
    return gpu_.has_value() ? c10::OptionalStreamGuard(gpu_->stream) : c10::OptionalStreamGuard();
  }
  // Blocks until the work the replica launched so far is done and every launch group reported:
  // before another thread or another stream reads its tensors. Internal naming the failure.
  absl::Status Synchronize();

  // What the CUDA part (replica_device_cuda.cpp) builds.
  struct Gpu {
    c10::Stream stream;
    std::shared_ptr<void> stream_owner;   // destroys the CUDA stream
    std::unique_ptr<LaunchPacer> pacer;   // a GpuLaunchPacer; destroyed first
    std::function<absl::Status()> drain;  // its Drain
  };

 private:
  ReplicaDevice(torch::Device device, LaunchPacer* pacer) : device_(device), pacer_(pacer) {}

  const torch::Device device_;
  LaunchPacer* pacer_;
  std::optional<Gpu> gpu_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_REPLICA_DEVICE_H_
