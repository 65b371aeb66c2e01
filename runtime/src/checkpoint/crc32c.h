// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every checkpoint header
// and section (docs/runtime.md, "Checkpoints"). Chosen over zlib's CRC-32 for its better error
// detection on long messages (Castagnoli 1993) and because storage systems (iSCSI, ext4
// metadata) use it, so its test vectors are easy to check against.
#ifndef WAVEPOOL_RUNTIME_SRC_CHECKPOINT_CRC32C_H_
#define WAVEPOOL_RUNTIME_SRC_CHECKPOINT_CRC32C_H_

#include <cstdint>
#include <string_view>

namespace wavepool::runtime::checkpoint_internal {

// Extends `crc` (the CRC-32C of some prefix; 0 for the empty prefix) with `data`:
//   Crc32c(Crc32c(0, a), b) == Crc32c(0, a + b).
// Table-driven, eight bytes per step ("slicing-by-8"): about 1.5 GB/s on one core. Thread-safe.
std::uint32_t Crc32cExtend(std::uint32_t crc, std::string_view data);

inline std::uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data); }

}  // namespace wavepool::runtime::checkpoint_internal

#endif  // WAVEPOOL_RUNTIME_SRC_CHECKPOINT_CRC32C_H_
