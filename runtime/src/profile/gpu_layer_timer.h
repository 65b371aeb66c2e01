// A layer's forward and backward GPU time for ProfileLayers (layer_profiler.h).
#ifndef WAVEPOOL_RUNTIME_PROFILE_GPU_LAYER_TIMER_H_
#define WAVEPOOL_RUNTIME_PROFILE_GPU_LAYER_TIMER_H_

#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/layer_profiler.h"

namespace wavepool::runtime::internal {

// The median of `times` (the mean of the middle two for an even count). REQUIRES: non-empty.
inline planner::Seconds MedianSeconds(std::vector<planner::Seconds> times) {
  std::sort(times.begin(), times.end());
  const size_t mid = times.size() / 2;
  return times.size() % 2 == 1 ? times[mid] : (times[mid - 1] + times[mid]) / 2.0;
}

// Times `layer` of `model` (on a CUDA device, as are `inputs` and the context's labels): after
// the warm-up runs (at least one: cuDNN and cuBLAS choose their algorithms and workspaces), its
// forward and its backward are each captured as a CUDA graph and replayed `options.repeats` times
// between CUDA events; the medians. A layer whose work cannot be captured (a dropout's host-made
// masks, a host synchronisation inside an op) is timed eagerly between events instead.
// FailedPrecondition in a build whose LibTorch has no CUDA. Throws c10::Error as LibTorch does.
absl::StatusOr<planner::LayerTime> TimeLayerOnGpu(ExecutableModel& model,
                                                  const planner::Layer& layer,
                                                  const std::vector<torch::Tensor>& inputs,
                                                  const ForwardContext& context,
                                                  const ProfileOptions& options);

}  // namespace wavepool::runtime::internal

#endif  // WAVEPOOL_RUNTIME_PROFILE_GPU_LAYER_TIMER_H_
