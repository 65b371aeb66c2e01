// The memory timeline of one training iteration on one GPU: how many bytes are allocated at each
// moment, as a periodic step function (wavelet-tick-tock §2.2.1, Figure 1: the memory usage is
// "highly predictable with well-defined peak and valley in each training iteration").
//
// Model (BuildMemoryTimeline):
//   resident  = params * 4 * (2 + optimizer_moments)   weights, gradients, optimizer moments
//   input     = per_gpu_batch * input elements * 4      held from forward start to backward end
//   a_i       = per_gpu_batch * 4 * (output elements, or 0 for an in-place layer,
//                                    + internal activation items)
// Layer i's activation is allocated when its forward starts and freed when its backward ends;
// forward runs layers 0..L-1, backward L-1..0, then an optional optimizer update at resident
// memory. Durations come from the ComputeCostModel. Activation gradients, cuDNN workspaces and
// allocator caching are not modelled: callers reserve headroom for them.
#ifndef WAVEPOOL_PLANNER_MEMORY_TIMELINE_H_
#define WAVEPOOL_PLANNER_MEMORY_TIMELINE_H_

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

enum class MemoryPhase { kForward, kBackward, kUpdate, kOther };
std::string_view MemoryPhaseName(MemoryPhase phase);  // "forward", "backward", "update", "other"

// One step of a timeline: `bytes` are in use from `start` until the next step's start (the last
// step lasts until the period ends). `layer` and `phase` say what runs then; a timeline that was
// not built from a model (measured, or two waves summed) may carry kNoLayer / kOther.
struct MemoryStep {
  static constexpr LayerId kNoLayer = -1;

  Seconds start{0};
  Bytes bytes = 0;
  LayerId layer = kNoLayer;
  MemoryPhase phase = MemoryPhase::kOther;
};

struct MemorySample {
  Seconds time{0};
  Bytes bytes = 0;
};

// A periodic step function of allocated bytes over one iteration. Immutable and safe for
// concurrent use. Invariants: steps() is non-empty, steps()[0].start == 0, starts strictly
// increase and stay below period() > 0, bytes >= 0, and no step has zero duration.
class MemoryTimeline {
 public:
  // Validates the invariants; InvalidArgument names the field ("steps[2].start: ...").
  static absl::StatusOr<MemoryTimeline> FromSteps(std::vector<MemoryStep> steps, Seconds period);

  const std::vector<MemoryStep>& steps() const { return steps_; }
  Seconds period() const { return period_; }
  // How long step i lasts.
  Seconds Duration(size_t i) const;

  Bytes Peak() const;
  Bytes Trough() const;
  // Time-weighted mean over one period.
  double MeanBytes() const;
  // The first step at the peak: where (which layer, which phase) and when it occurs.
  const MemoryStep& PeakStep() const;
  // Bytes in use at time t; t is taken modulo the period (negative t wraps too).
  Bytes At(Seconds t) const;
  // Samples at a fixed rate, as a memory sampler would see the running job: times
  // phase + k / rate_hz for k = 0 .. floor(duration * rate_hz) - 1 (at most 10,000,000 samples).
  // InvalidArgument when rate_hz <= 0, duration < 0 or there would be too many samples.
  absl::StatusOr<std::vector<MemorySample>> Sample(double rate_hz, Seconds duration,
                                                   Seconds phase = Seconds(0)) const;

 private:
  MemoryTimeline(std::vector<MemoryStep> steps, Seconds period)
      : steps_(std::move(steps)), period_(period) {}

  std::vector<MemoryStep> steps_;
  Seconds period_{0};
};

struct TrainingMemoryOptions {
  // Optimizer state per parameter, in parameter-sized tensors: 0 for plain SGD, 1 for SGD with
  // momentum, 2 for Adam/AdamW.
  int optimizer_moments = 1;
  // Whether the per-GPU input mini-batch (fp32) is counted from forward start to backward end.
  bool hold_input_batch = true;
  // Duration of the optimizer step after the backward pass (memory at the resident level).
  Seconds update_time{0};
};

// Weights, gradients and optimizer moments of `params` parameters: params * 4 * (2 + moments).
Bytes ResidentStateBytes(std::int64_t params, int optimizer_moments);
// Activation bytes layer `layer` keeps for the backward pass at batch `batch` (0 if in place).
Bytes LayerActivationBytes(const Layer& layer, std::int64_t batch);
// Bytes of `batch` model inputs (fp32).
Bytes InputBatchBytes(const ModelGraph& graph, std::int64_t batch);

// The timeline of one iteration of `graph` on one GPU at `per_gpu_batch` samples.
// InvalidArgument: per_gpu_batch < 1, optimizer_moments < 0, update_time < 0, or the cost
// model returns a negative time (names the layer). FailedPrecondition: the iteration takes no time.
absl::StatusOr<MemoryTimeline> BuildMemoryTimeline(const ModelGraph& graph,
                                                   const ComputeCostModel& cost,
                                                   std::int64_t per_gpu_batch,
                                                   const TrainingMemoryOptions& options = {});

// Forward + backward time of every layer at `per_gpu_batch` (the timeline's period without the
// update). REQUIRES: per_gpu_batch >= 1.
Seconds IterationComputeTime(const ModelGraph& graph, const ComputeCostModel& cost,
                             std::int64_t per_gpu_batch);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_MEMORY_TIMELINE_H_
