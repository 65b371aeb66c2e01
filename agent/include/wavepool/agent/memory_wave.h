// Memory waves: training memory climbs during the forward pass and falls during the backward
// pass, once per iteration (wavelet-tick-tock §2.2, Figure 1). From high-rate samples of one GPU
// or one task (device samples at 100 Hz or more, or a worker's allocator samples) this finds the
// iteration period, the wave's peak and trough, the headroom under the peak, and for two waves on
// one GPU (tick and tock, wavelet-tick-tock §3.2.1) the phase offset between them, which tick-tock
// wants at half a period.
//
// Method (docs/agent.md, "Memory waves"):
//   1. Bin the samples onto a uniform grid (the median sample interval, coarsened so the grid has
//      at most max_grid_points); fill short gaps linearly, mark gaps longer than max_gap missing.
//   2. Remove a least-squares linear trend (allocator growth, a slow leak).
//   3. Period: the normalised autocorrelation over valid pairs only; the shortest lag whose local
//      maximum is within 15% of the best one (so a multiple of the period is not taken for it),
//      refined by parabolic interpolation and by the peak near the largest usable multiple.
//   4. Peak and trough: in each whole period (counted back from the last sample) the maximum and
//      minimum of the samples around the trend; the medians over periods, so one spike or one
//      odd iteration does not move them, reported at the trend's value at the last sample.
//   5. Phase offset: the cross-correlation of the two detrended grids over lags in one period.
// Anything that makes a number meaningless (too few samples or periods, a flat line, no
// periodicity, different periods) is a FailedPrecondition saying what is missing.
//
// Thread-compatible: pure functions of their arguments.
#ifndef WAVEPOOL_AGENT_MEMORY_WAVE_H_
#define WAVEPOOL_AGENT_MEMORY_WAVE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/base/clock.h"
#include "wavepool/base/seconds.h"

namespace wavepool::agent {

struct MemoryPoint {
  MonotonicTime time;
  std::uint64_t bytes = 0;
};

enum class AllocatorField { kAllocated, kReserved };

// The series of one allocator field of a worker's reports (protocol.h MemorySample).
std::vector<MemoryPoint> PointsFromAllocatorSamples(const std::vector<MemorySample>& samples,
                                                    AllocatorField field);
// The memory used of a GPU's samples.
std::vector<MemoryPoint> PointsFromGpuSamples(const std::vector<GpuSample>& samples);

struct MemoryWaveOptions {
  Seconds min_period{0.02};  // iterations shorter than this are not looked for
  Seconds max_period{120};
  int min_periods = 3;          // whole periods the samples must cover (>= 2)
  double min_confidence = 0.5;  // autocorrelation (or cross-correlation) needed, in (0, 1)
  // A gap between samples longer than this is missing data, not interpolated.
  // 0: five times the median sample interval.
  Seconds max_gap{0};
  std::size_t max_grid_points = 4096;  // bounds the correlation's cost, >= 64
  // A detrended peak-to-trough below this is a flat line, not a wave.
  std::uint64_t min_amplitude_bytes = 8ull << 20;
  std::optional<std::uint64_t> capacity_bytes;  // the GPU's memory, for the headroom
};

struct MemoryWave {
  Seconds period{0};
  double confidence = 0;  // autocorrelation at the period, (min_confidence, 1]
  std::uint64_t peak_bytes = 0;
  std::uint64_t trough_bytes = 0;
  // capacity - peak; negative when the peak exceeds the given capacity. nullopt without one.
  std::optional<std::int64_t> headroom_bytes;
  double drift_bytes_per_second = 0;  // the removed linear trend
  int periods = 0;                    // whole periods the extremes were measured over
  MonotonicTime first;                // the samples analysed
  MonotonicTime last;
};

// capacity - peak, saturated to the int64 range (both may be anything a worker reported).
std::int64_t HeadroomBytes(std::uint64_t capacity_bytes, std::uint64_t peak_bytes);

// `bytes` as the signed count gauges and the GPUNode status hold, saturated at INT64_MAX (a wave
// derived from a worker's allocator reports may claim more).
std::int64_t SaturatedBytes(std::uint64_t bytes);

// InvalidArgument when times do not strictly increase or options are out of range;
// FailedPrecondition when the samples cannot support an answer (the message says why).
absl::StatusOr<MemoryWave> AnalyzeMemoryWave(const std::vector<MemoryPoint>& samples,
                                             const MemoryWaveOptions& options = {});

struct PhaseOffset {
  Seconds period{0};  // the waves' common period (the mean of the two)
  // How much later `second` runs the same pattern: second(t) ~ first(t - offset). In
  // [0, period); tick-tock aims at period / 2.
  Seconds offset{0};
  double fraction = 0;    // offset / period, in [0, 1)
  double confidence = 0;  // cross-correlation at the offset
};

// The offset of `second` behind `first` (two waves sampled on one GPU over overlapping times).
// FailedPrecondition when either is not a wave, their periods differ by more than 5%, their
// overlap covers fewer than min_periods periods, or they do not match at any offset.
absl::StatusOr<PhaseOffset> MeasurePhaseOffset(const std::vector<MemoryPoint>& first,
                                               const std::vector<MemoryPoint>& second,
                                               const MemoryWaveOptions& options = {});

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_MEMORY_WAVE_H_
