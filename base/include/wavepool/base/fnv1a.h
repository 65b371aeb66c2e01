// 64-bit FNV-1a of a byte string: tiny, and the same on every platform and release (std::hash is
// neither), for names and content hashes that must stay stable: the pod names the controller
// derives, the UUIDs of simulated GPUs, the test API server's OpenAPI document hashes.
#ifndef WAVEPOOL_BASE_FNV1A_H_
#define WAVEPOOL_BASE_FNV1A_H_

#include <cstdint>
#include <string_view>

namespace wavepool {

constexpr std::uint64_t Fnv1a64(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_FNV1A_H_
