// One codec word: three float32 values in 32 bits (scalednn-data-movement §IV-C, Figure 8(b)
// packs, 8(c) unpacks). Branch-free bit arithmetic, shared by the bulk loops and the tail.
//
// Invariants of a word written by EncodeGroup:
//   - bit 31 is the flag: 1 selects exponent base 0111 (biased exponents 112..127), 0 base 0110
//     (96..111); it is 1 exactly when the group's largest magnitude is >= 2^-15.
//   - bits 30..21, 20..11 and 10..1 hold values 0, 1 and 2 as sign | delta (4) | mantissa (5).
//   - bit 0 is 0.
//   - the payload (delta, mantissa) = (0, 0) is a signed zero and nothing else.
#ifndef WAVEPOOL_RUNTIME_SRC_CODEC_CODEC_WORD_H_
#define WAVEPOOL_RUNTIME_SRC_CODEC_CODEC_WORD_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace wavepool::runtime::codec {

inline constexpr std::uint32_t kSignBit = 0x8000'0000u;
inline constexpr std::uint32_t kAbsMask = 0x7FFF'FFFFu;
// float32 bits of 2^-15 (biased exponent 112 = 0111'0000) and 2^-31 (96 = 0110'0000): the
// smallest exponents bases 0111 and 0110 express, i.e. the two floors.
inline constexpr std::uint32_t kWideFloorBits = 0x3800'0000u;
inline constexpr std::uint32_t kNarrowFloorBits = 0x3000'0000u;
inline constexpr int kBaseStep = 27;  // kWideFloorBits - kNarrowFloorBits == 1 << 27
// float32 bits of 2.0 (biased exponent 128 = 1000'0000): no base expresses it. Every NaN and
// infinity has larger magnitude bits, so one comparison rejects all three.
inline constexpr std::uint32_t kLimitBits = 0x4000'0000u;
inline constexpr int kDroppedMantissaBits = 18;
inline constexpr std::uint32_t kPayloadMask = 0x1FFu;  // delta (4) | mantissa (5)
inline constexpr std::uint32_t kCodeSignBit = 0x200u;
inline constexpr int kSignToCode = 22;  // float32 bit 31 <-> code bit 9
inline constexpr std::uint32_t kCodeMask = 0x3FFu;
inline constexpr int kFlagShift = 31;
inline constexpr int kValueShift[3] = {21, 11, 1};
inline constexpr std::uint32_t kReservedBit = 1u;

inline std::uint32_t FloatBits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float BitsFloat(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Magnitude bits (< 2^31) as a signed integer; see EncodeValue for why.
inline std::int32_t AsSigned(std::uint32_t magnitude) {
  return static_cast<std::int32_t>(magnitude);
}

// The 10-bit code of one value in a group whose floor is `floor_bits`. REQUIRES: the value's
// magnitude bits are below kLimitBits and, for the narrow floor, below kWideFloorBits.
inline std::uint32_t EncodeValue(std::uint32_t bits, std::uint32_t floor_bits) {
  const std::uint32_t magnitude = bits & kAbsMask;
  // The exponent's low 4 bits (the delta to the base) and the top 5 mantissa bits.
  std::uint32_t payload = (magnitude >> kDroppedMantissaBits) & kPayloadMask;
  // (0, 0) is reserved for zero: [floor, floor * (1 + 2^-5)) rounds up to mantissa 1.
  payload |= static_cast<std::uint32_t>(payload == 0);
  // Below the floor: a signed zero. Magnitudes fit 31 bits, so the comparison can be signed:
  // x86 vectors compare signed 32-bit lanes in one instruction and emulate unsigned compares
  // (about 8% of the encode loop's time with AVX2).
  payload = AsSigned(magnitude) >= AsSigned(floor_bits) ? payload : 0u;
  return ((bits & kSignBit) >> kSignToCode) | payload;
}

// The group's largest magnitude bits (compared against kLimitBits by the caller) and its word.
inline std::uint32_t EncodeGroup(std::uint32_t a, std::uint32_t b, std::uint32_t c,
                                 std::uint32_t* max_magnitude) {
  const std::int32_t largest =
      std::max({AsSigned(a & kAbsMask), AsSigned(b & kAbsMask), AsSigned(c & kAbsMask)});
  *max_magnitude = static_cast<std::uint32_t>(largest);
  // Base 0111 when any value needs it; smaller values in the group fall below its floor.
  const std::uint32_t wide = static_cast<std::uint32_t>(largest >= AsSigned(kWideFloorBits));
  const std::uint32_t floor_bits = kNarrowFloorBits + (wide << kBaseStep);
  return (wide << kFlagShift) | (EncodeValue(a, floor_bits) << kValueShift[0]) |
         (EncodeValue(b, floor_bits) << kValueShift[1]) |
         (EncodeValue(c, floor_bits) << kValueShift[2]);
}

// float32 bits of the code at `shift` in `word`, whose base is `base_bits` (a floor).
inline std::uint32_t DecodeValue(std::uint32_t word, int shift, std::uint32_t base_bits) {
  const std::uint32_t code = (word >> shift) & kCodeMask;
  const std::uint32_t payload = code & kPayloadMask;
  // base | delta concatenated into the exponent, mantissa on top of 18 zero bits; the base's
  // low 4 exponent bits are 0, so adding is concatenating.
  const std::uint32_t magnitude = payload == 0 ? 0u : base_bits + (payload << kDroppedMantissaBits);
  return ((code & kCodeSignBit) << kSignToCode) | magnitude;
}

inline std::uint32_t WordBase(std::uint32_t word) {
  return kNarrowFloorBits + ((word >> kFlagShift) << kBaseStep);
}

}  // namespace wavepool::runtime::codec

#endif  // WAVEPOOL_RUNTIME_SRC_CODEC_CODEC_WORD_H_
