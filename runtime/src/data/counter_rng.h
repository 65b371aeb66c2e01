// Counter-based random numbers for the data path: every value is a pure function of a 64-bit key
// and a counter, so that a sample, a teacher weight or a permutation round is the same whichever
// thread computes it and whatever was computed before it. Not cryptographic.
#ifndef WAVEPOOL_RUNTIME_SRC_DATA_COUNTER_RNG_H_
#define WAVEPOOL_RUNTIME_SRC_DATA_COUNTER_RNG_H_

#include <cmath>
#include <cstdint>

namespace wavepool::runtime::data_internal {

// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijection of 64-bit words whose output bits
// each depend on every input bit.
inline std::uint64_t Mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A key for the pair (a, b); different pairs give unrelated keys.
inline std::uint64_t MixPair(std::uint64_t a, std::uint64_t b) {
  return Mix64(Mix64(a) ^ (b + 0x632be59bd9b4e019ULL));
}

// A uniform value in [0, 1) from the top 24 bits of `bits` (exact in float).
inline float UnitFloat(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// The SplitMix64 generator seeded with `key`: word i mixes key + (i + 1) * 0x9e3779b97f4a7c15.
class SplitMixStream {
 public:
  explicit SplitMixStream(std::uint64_t key) : state_(key) {}

  std::uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Two independent N(0, 1) values from one 64-bit word (Box-Muller on two 32-bit uniforms).
  void NextNormalPair(float* first, float* second) {
    const std::uint64_t word = Next();
    // 1 - u lies in (0, 1], so the logarithm is finite.
    const float u1 = 1.0f - UnitFloat(static_cast<std::uint32_t>(word >> 32));
    const float u2 = UnitFloat(static_cast<std::uint32_t>(word));
    const float radius = std::sqrt(-2.0f * std::log(u1));
    constexpr float kTwoPi = 6.28318530717958647692f;
    *first = radius * std::cos(kTwoPi * u2);
    *second = radius * std::sin(kTwoPi * u2);
  }

  // Uniform in [0, bound), bound >= 1. Lemire's multiply-shift on 32 random bits for bounds that
  // fit 32 bits (every vocabulary): its bias, below bound / 2^32, is immaterial for training data.
  std::uint64_t NextBelow(std::uint64_t bound) {
    const std::uint32_t bits = static_cast<std::uint32_t>(Next() >> 32);
    if (bound <= 0xffffffffULL) return (std::uint64_t{bits} * bound) >> 32;
    return Next() % bound;
  }

 private:
  std::uint64_t state_;
};

}  // namespace wavepool::runtime::data_internal

#endif  // WAVEPOOL_RUNTIME_SRC_DATA_COUNTER_RNG_H_
