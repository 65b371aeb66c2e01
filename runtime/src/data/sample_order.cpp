// SampleOrder: every epoch a keyed pseudo-random permutation of [0, dataset_size), computed one
// index at a time. A balanced Feistel network permutes [0, 4^h), the smallest such domain that
// holds the dataset; cycle walking (re-encrypting while the value is >= dataset_size) restricts
// that permutation to [0, dataset_size) and keeps it a bijection (Black & Rogaway, "Ciphers with
// Arbitrary Finite Domains", 2002). The domain is < 4 * dataset_size, so a walk takes fewer than
// 4 encryptions on average.
#include <cstdint>

#include "counter_rng.h"
#include "wavepool/runtime/batch_loader.h"

namespace wavepool::runtime {
namespace {

using data_internal::Mix64;
using data_internal::MixPair;

// Six rounds: beyond the three or four that make a Feistel network a pseudo-random permutation
// (Luby-Rackoff), so that neighbouring indices land far apart.
constexpr int kRounds = 6;

// The smallest h >= 1 with 4^h >= n.
int HalfBits(std::uint64_t n) {
  int h = 1;
  while (h < 32 && (std::uint64_t{1} << (2 * h)) < n) ++h;
  return h;
}

std::uint64_t Encrypt(std::uint64_t x, int half_bits, const std::uint64_t (&keys)[kRounds]) {
  const std::uint64_t mask = (std::uint64_t{1} << half_bits) - 1;
  std::uint64_t left = x >> half_bits;
  std::uint64_t right = x & mask;
  for (const std::uint64_t key : keys) {
    const std::uint64_t next = left ^ (Mix64(key ^ right) & mask);
    left = right;
    right = next;
  }
  return (left << half_bits) | right;
}

}  // namespace

SampleOrder::SampleOrder(std::uint64_t seed, std::int64_t dataset_size,
                         std::int64_t samples_per_step)
    : seed_(seed), dataset_size_(dataset_size), samples_per_step_(samples_per_step) {}

std::int64_t SampleOrder::Index(std::int64_t step, std::int64_t position) const {
  const auto n = static_cast<std::uint64_t>(dataset_size_);
  const std::uint64_t global =
      static_cast<std::uint64_t>(step) * static_cast<std::uint64_t>(samples_per_step_) +
      static_cast<std::uint64_t>(position);
  const std::uint64_t epoch = global / n;
  std::uint64_t x = global % n;
  if (n == 1) return 0;
  const std::uint64_t epoch_key = MixPair(seed_, epoch);
  std::uint64_t keys[kRounds];
  for (int r = 0; r < kRounds; ++r) keys[r] = MixPair(epoch_key, static_cast<std::uint64_t>(r));
  const int half_bits = HalfBits(n);
  do {
    x = Encrypt(x, half_bits, keys);
  } while (x >= n);
  return static_cast<std::int64_t>(x);
}

}  // namespace wavepool::runtime
