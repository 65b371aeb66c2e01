// The codec's bulk loops over whole groups of three values: one pass, no allocation, no branch
// per value. The stream layer (weight_codec.cpp) handles the header, the last partial group and
// turns the loops' summaries into errors.
#ifndef WAVEPOOL_RUNTIME_SRC_CODEC_CODEC_KERNELS_H_
#define WAVEPOOL_RUNTIME_SRC_CODEC_CODEC_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace wavepool::runtime::codec {

// Little-endian 32-bit loads and stores at any alignment.
std::uint32_t LoadLittleEndian32(const std::uint8_t* bytes);
void StoreLittleEndian32(std::uint32_t value, std::uint8_t* bytes);

// Encodes values[0, 3 * groups) into `groups` little-endian words at `words`. Returns the largest
// magnitude bits seen (FloatBits(x) & kAbsMask): the caller rejects the input when it is
// >= kLimitBits, and the words are then meaningless.
std::uint32_t EncodeGroups(const float* values, std::size_t groups, std::uint8_t* words);

// Decodes `count` little-endian words at `words` into values[0, 3 * count). Returns the OR of
// every word, so that the caller can check the reserved bit once.
std::uint32_t DecodeGroups(const std::uint8_t* words, std::size_t count, float* values);

}  // namespace wavepool::runtime::codec

#endif  // WAVEPOOL_RUNTIME_SRC_CODEC_CODEC_KERNELS_H_
