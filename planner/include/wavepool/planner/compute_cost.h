// Compute cost: how long one GPU takes to run a layer forward and backward on a batch.
// Two sources: a measured profile (profile.h) or the analytical model below.
#ifndef WAVEPOOL_PLANNER_COMPUTE_COST_H_
#define WAVEPOOL_PLANNER_COMPUTE_COST_H_

#include <cstdint>
#include <memory>
#include <string>

#include "wavepool/planner/device.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

struct LayerTime {
  Seconds forward{0};
  Seconds backward{0};
  Seconds Total() const { return forward + backward; }
};

// A ComputeCostModel is immutable after construction and safe for concurrent use.
class ComputeCostModel {
 public:
  virtual ~ComputeCostModel() = default;
  // Forward and backward time of `layer` on one GPU holding `per_gpu_batch` samples.
  // REQUIRES: per_gpu_batch >= 1.
  virtual LayerTime Time(const Layer& layer, std::int64_t per_gpu_batch) const = 0;
  // One line for reports, e.g. "analytical, a100-40gb, mixed precision".
  virtual std::string Description() const = 0;
};
using ComputeCostModelPtr = std::unique_ptr<ComputeCostModel>;

enum class Precision { kFp32, kMixed };

// Roofline with a utilisation curve: time = launches * launch overhead
//   + max(flops / (peak * u(w)), bytes moved / memory bandwidth),
// where w = batch * output elements is the work available to the GPU's threads and
// u(w) = kPeakUtilisation * w / (w + sm_count * kThreadsPerSm) falls off for small batches
// (the poor small-batch utilisation of deeppool-burst-parallel §2, Figure 4). A layer with a
// measured per-sample time (a layer table) costs that time times the batch instead.
ComputeCostModelPtr MakeAnalyticCostModel(const DeviceSpec& device,
                                          Precision precision = Precision::kMixed);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_COMPUTE_COST_H_
