// A LaunchPacer for launch groups whose work runs on a CUDA stream: a replica's layers launched
// eagerly on a GPU (replica_device.h). Run returns once the group's kernels are enqueued; its
// credit comes back, and its GPU time goes to the agent's feedback loop, when a completion event
// after them fires (piece_launcher.h). So the launch gate bounds the work queued on the GPU, not
// the CPU's launching, and a sensitive foreground group holds the pause until its kernels are done.
//
// Thread safety: Run and Drain are called by the thread that launches on the stream; the other
// methods pass through to the wrapped pacer and are as safe as it is. Ownership: borrows the
// wrapped pacer and the stream, which must outlive it.
#ifndef WAVEPOOL_RUNTIME_GPU_LAUNCH_PACER_H_
#define WAVEPOOL_RUNTIME_GPU_LAUNCH_PACER_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/piece_launcher.h"

namespace wavepool::runtime {

class GpuLaunchPacer final : public ForwardingLaunchPacer {
 public:
  // `max_pending`: groups enqueued and not yet complete, at most (PieceLauncher::Create). Internal
  // naming the CUDA call when its events cannot be created.
  static absl::StatusOr<std::unique_ptr<GpuLaunchPacer>> Create(LaunchPacer& paced,
                                                                cudaStream_t stream,
                                                                std::size_t max_pending = 16);
  // Waits for every enqueued group to complete and be reported.
  ~GpuLaunchPacer() override = default;

  // Begin on the wrapped pacer, `work` between two events on the stream, End from the poller.
  // An earlier group's failure (its events could not be read) is returned here, once.
  absl::Status Run(OpGroup group, const std::function<void()>& work) override;
  // Blocks until every group enqueued so far has completed and been reported.
  absl::Status Drain();

  // Groups completed so far, and their GPU time.
  std::int64_t completed() const { return launcher_->completed(); }
  std::chrono::nanoseconds gpu_time() const { return launcher_->gpu_time(); }

 private:
  GpuLaunchPacer(LaunchPacer& paced, std::unique_ptr<PieceLauncher> launcher)
      : ForwardingLaunchPacer(paced), launcher_(std::move(launcher)) {}

  std::unique_ptr<PieceLauncher> launcher_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_GPU_LAUNCH_PACER_H_
