#include "codec_kernels.h"

#include <algorithm>
#include <cstring>

#include "codec_word.h"

// The encode loop's stride-3 loads vectorise only with AVX2's shuffles; on x86-64 the loader
// picks that clone when the CPU has it (GCC function multiversioning), the baseline otherwise.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WAVEPOOL_CODEC_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WAVEPOOL_CODEC_CLONES
#endif

namespace wavepool::runtime::codec {
namespace {

constexpr bool kLittleEndianHost = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// A float's 32 bits, readable through a float pointer (GCC and Clang's may_alias).
typedef std::uint32_t __attribute__((may_alias)) AliasingBits;
static_assert(sizeof(AliasingBits) == sizeof(float) && alignof(AliasingBits) == alignof(float));

}  // namespace

std::uint32_t LoadLittleEndian32(const std::uint8_t* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, sizeof value);
  if constexpr (!kLittleEndianHost) value = __builtin_bswap32(value);
  return value;
}

void StoreLittleEndian32(std::uint32_t value, std::uint8_t* bytes) {
  if constexpr (!kLittleEndianHost) value = __builtin_bswap32(value);
  std::memcpy(bytes, &value, sizeof value);
}

WAVEPOOL_CODEC_CLONES std::uint32_t EncodeGroups(const float* values, std::size_t groups,
                                                 std::uint8_t* words) {
  // The float bits, read as integers through a may_alias type: GCC vectorises plain strided
  // integer loads, not memcpy-based ones. The largest magnitude is folded in with max, not tested
  // per group, so that the common case (every value encodable) has no data-dependent branch.
  const auto* bits = reinterpret_cast<const AliasingBits*>(values);
  std::int32_t largest = 0;  // signed, as in EncodeGroup
  for (std::size_t g = 0; g < groups; ++g) {
    std::uint32_t group_largest;
    const std::uint32_t word =
        EncodeGroup(bits[3 * g], bits[3 * g + 1], bits[3 * g + 2], &group_largest);
    largest = std::max(largest, AsSigned(group_largest));
    StoreLittleEndian32(word, words + 4 * g);
  }
  return static_cast<std::uint32_t>(largest);
}

WAVEPOOL_CODEC_CLONES std::uint32_t DecodeGroups(const std::uint8_t* words, std::size_t count,
                                                 float* values) {
  std::uint32_t seen = 0;
  for (std::size_t g = 0; g < count; ++g) {
    const std::uint32_t word = LoadLittleEndian32(words + 4 * g);
    seen |= word;
    const std::uint32_t base = WordBase(word);
    float* group = values + 3 * g;
    group[0] = BitsFloat(DecodeValue(word, kValueShift[0], base));
    group[1] = BitsFloat(DecodeValue(word, kValueShift[1], base));
    group[2] = BitsFloat(DecodeValue(word, kValueShift[2], base));
  }
  return seen;
}

}  // namespace wavepool::runtime::codec
