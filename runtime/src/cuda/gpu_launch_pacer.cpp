#include "wavepool/runtime/gpu_launch_pacer.h"

#include <utility>

#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {

absl::StatusOr<std::unique_ptr<GpuLaunchPacer>> GpuLaunchPacer::Create(LaunchPacer& paced,
                                                                       cudaStream_t stream,
                                                                       std::size_t max_pending) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<PieceLauncher> launcher,
                            PieceLauncher::Create(paced, stream, max_pending));
  return std::unique_ptr<GpuLaunchPacer>(new GpuLaunchPacer(paced, std::move(launcher)));
}

absl::Status GpuLaunchPacer::Run(OpGroup group, const std::function<void()>& work) {
  return launcher_->LaunchWork(group, [&work] {
    work();
    return absl::OkStatus();
  });
}

absl::Status GpuLaunchPacer::Drain() { return launcher_->Drain(); }

}  // namespace wavepool::runtime
