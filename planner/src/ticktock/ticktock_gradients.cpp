// Cross-wave gradient averaging (wavelet-tick-tock §3.2.3, Eq. 1-2).
#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/planner/ticktock.h"

namespace wavepool::planner {

absl::StatusOr<std::vector<float>> CrossWaveAverage(const std::vector<float>& current,
                                                    std::int64_t current_batch,
                                                    const std::vector<float>& previous,
                                                    std::int64_t previous_batch) {
  if (current_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("current_batch: must be >= 1, got ", current_batch));
  }
  if (previous_batch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("previous_batch: must be >= 0, got ", previous_batch));
  }
  // m = 0: no other wave has finished a backward pass yet, g^0 = g'^0.
  if (previous.empty() && previous_batch == 0) return current;
  if (previous.empty() || previous_batch == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "previous: an empty previous gradient (the first iteration) goes with previous_batch 0; "
        "got ",
        previous.size(), " values and previous_batch ", previous_batch));
  }
  if (previous.size() != current.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("previous: must have as many values as current (", current.size(), "), got ",
                     previous.size()));
  }
  // Eq. 1, weighted by the samples behind each local gradient (equal batches: the plain mean).
  const double total = static_cast<double>(current_batch + previous_batch);
  const double w_current = static_cast<double>(current_batch) / total;
  const double w_previous = static_cast<double>(previous_batch) / total;
  std::vector<float> averaged(current.size());
  for (size_t k = 0; k < current.size(); ++k) {
    averaged[k] = static_cast<float>(w_current * current[k] + w_previous * previous[k]);
  }
  return averaged;
}

absl::StatusOr<std::vector<float>> GlobalWaveGradient(const std::vector<WaveGradient>& per_gpu) {
  if (per_gpu.empty()) return absl::InvalidArgumentError("per_gpu: must hold at least one GPU");
  const size_t size = per_gpu.front().gradient.size();
  std::int64_t total_samples = 0;
  for (size_t i = 0; i < per_gpu.size(); ++i) {
    if (per_gpu[i].samples < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("per_gpu[", i, "].samples: must be >= 1, got ", per_gpu[i].samples));
    }
    if (per_gpu[i].gradient.size() != size) {
      return absl::InvalidArgumentError(absl::StrCat("per_gpu[", i,
                                                     "].gradient: must have as many values as "
                                                     "per_gpu[0] (",
                                                     size, "), got ", per_gpu[i].gradient.size()));
    }
    total_samples += per_gpu[i].samples;
  }
  // Eq. 2: G_m = sum_i g_i^m / N with equal samples per GPU; the sample-weighted mean in general.
  std::vector<double> sum(size, 0.0);
  for (const WaveGradient& gpu : per_gpu) {
    const double weight = static_cast<double>(gpu.samples) / static_cast<double>(total_samples);
    for (size_t k = 0; k < size; ++k) sum[k] += weight * gpu.gradient[k];
  }
  return std::vector<float>(sum.begin(), sum.end());
}

}  // namespace wavepool::planner
