// Synthetic memory waves for the wave-analysis tests: a training iteration's "mountain" (memory
// rises through the forward pass, holds, falls through the backward pass, rests), sampled at a
// fixed rate with optional noise, sample-time jitter, iteration-length jitter, dropped samples, a
// gap and a linear drift. Deterministic for its seeds.
#ifndef WAVEPOOL_TESTS_AGENT_WAVE_TEST_UTIL_H_
#define WAVEPOOL_TESTS_AGENT_WAVE_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "wavepool/agent/memory_wave.h"

namespace wavepool::testing {

inline constexpr double kGiB = 1024.0 * 1024 * 1024;
inline constexpr double kMiB = 1024.0 * 1024;

struct WaveSpec {
  double period_s = 0.8;
  double trough_bytes = 4 * kGiB;
  double peak_bytes = 12 * kGiB;
  double delay_s = 0;  // the pattern runs this much later (a tock wave)
  double start_s = 1.0;
  double duration_s = 10;
  double rate_hz = 100;
  double noise_bytes = 0;    // Gaussian sigma
  double time_jitter_s = 0;  // uniform, +-; keep below half the sample interval
  double period_jitter = 0;  // each iteration's length * (1 + uniform +-this)
  double drop_fraction = 0;  // samples lost at random
  double gap_from_s = -1;    // samples lost in [gap_from_s, gap_to_s)
  double gap_to_s = -1;
  double drift_bytes_per_s = 0;
  std::uint64_t period_seed = 11;  // iteration lengths (shared by tick and tock)
  std::uint64_t seed = 1;          // everything else
};

// The mountain at phase p in [0, 1): rise over 0.3, peak over 0.2, fall over 0.4, rest 0.1.
inline double Mountain(double p, double trough, double peak) {
  const double a = peak - trough;
  if (p < 0.3) return trough + a * p / 0.3;
  if (p < 0.5) return peak;
  if (p < 0.9) return peak - a * (p - 0.5) / 0.4;
  return trough;
}

inline std::vector<agent::MemoryPoint> MakeWave(const WaveSpec& w) {
  // Iteration boundaries from well before the first sample to after the last.
  std::mt19937_64 period_rng(w.period_seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> bounds = {w.start_s + w.delay_s - 3 * w.period_s};
  while (bounds.back() < w.start_s + w.duration_s + w.period_s) {
    bounds.push_back(bounds.back() + w.period_s * (1 + w.period_jitter * unit(period_rng)));
  }
  std::mt19937_64 rng(w.seed);
  std::normal_distribution<double> noise(0, w.noise_bytes > 0 ? w.noise_bytes : 1);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<agent::MemoryPoint> points;
  const int count = static_cast<int>(w.duration_s * w.rate_hz);
  for (int i = 0; i < count; ++i) {
    const double jitter = w.time_jitter_s * unit(rng);
    const double drop = uniform(rng);
    const double n = noise(rng);
    const double t = w.start_s + i / w.rate_hz + jitter;
    if (drop < w.drop_fraction || (t >= w.gap_from_s && t < w.gap_to_s)) continue;
    const auto it = std::upper_bound(bounds.begin(), bounds.end(), t) - 1;
    const double phase = (t - *it) / (*(it + 1) - *it);
    double bytes = Mountain(phase, w.trough_bytes, w.peak_bytes) +
                   w.drift_bytes_per_s * (t - w.start_s) + (w.noise_bytes > 0 ? n : 0);
    points.push_back({MonotonicTimeFromNanos(std::llround(t * 1e9)),
                      static_cast<std::uint64_t>(std::llround(std::max(0.0, bytes)))});
  }
  return points;
}

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_AGENT_WAVE_TEST_UTIL_H_
