// The simulation's random numbers: SplitMix64 (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014) and the few distributions a trace needs, written
// out so that a seed gives the same draws with any standard library (std::*_distribution may
// differ between implementations). Not thread-safe; a plain value.
#ifndef WAVEPOOL_SIMULATE_SRC_RANDOM_H_
#define WAVEPOOL_SIMULATE_SRC_RANDOM_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace wavepool::simulate::internal {

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), 53 bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Exponential with the given rate (> 0): the gap between Poisson arrivals.
  double Exponential(double rate) { return -std::log1p(-Uniform()) / rate; }

  // Uniform in [0, n). REQUIRES: n >= 1.
  std::size_t Index(std::size_t n) {
    const auto i = static_cast<std::size_t>(Uniform() * static_cast<double>(n));
    return i < n ? i : n - 1;
  }

  // Log-uniform integer in [lo, hi]. REQUIRES: 1 <= lo <= hi.
  std::int64_t LogUniform(std::int64_t lo, std::int64_t hi) {
    const double a = std::log(static_cast<double>(lo));
    const double b = std::log(static_cast<double>(hi) + 1.0);
    const auto v = static_cast<std::int64_t>(std::floor(std::exp(a + Uniform() * (b - a))));
    return v < lo ? lo : (v > hi ? hi : v);
  }

 private:
  std::uint64_t state_;
};

}  // namespace wavepool::simulate::internal

#endif  // WAVEPOOL_SIMULATE_SRC_RANDOM_H_
