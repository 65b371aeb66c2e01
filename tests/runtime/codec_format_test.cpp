// The weight codec's word format (scalednn-data-movement §IV-C, Figure 8): hand-worked bit
// patterns, the rule for values the two exponent bases cannot hold, and the error bound over
// millions of values against an arithmetic model of the format written independently of the
// codec's bit operations.
//
// Expected words are written field by field with digit separators:
//   0b<flag>'<value 0: sign delta(4) mantissa(5)>'<value 1>'<value 2>'<reserved>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/runtime/weight_codec.h"

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

std::uint32_t Bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float FromBits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// The packed words of `values` (the stream after its 16-byte header).
std::vector<std::uint32_t> Words(const std::vector<float>& values) {
  absl::StatusOr<std::vector<std::uint8_t>> stream = EncodeWeights(values);
  EXPECT_TRUE(stream.ok()) << stream.status();
  std::vector<std::uint32_t> words;
  if (!stream.ok()) return words;
  for (std::size_t at = kWeightCodecHeaderBytes; at + 4 <= stream->size(); at += 4) {
    const std::uint8_t* b = stream->data() + at;
    words.push_back(b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24));
  }
  return words;
}

std::vector<float> RoundTrip(const std::vector<float>& values) {
  absl::StatusOr<std::vector<std::uint8_t>> stream = EncodeWeights(values);
  EXPECT_TRUE(stream.ok()) << stream.status();
  if (!stream.ok()) return {};
  absl::StatusOr<std::vector<float>> decoded = DecodeWeights(*stream);
  EXPECT_TRUE(decoded.ok()) << decoded.status();
  return decoded.ok() ? *decoded : std::vector<float>{};
}

// A word holding `codes` with the given flag, as the format lays it out.
std::uint32_t Word(std::uint32_t flag, std::uint32_t v0, std::uint32_t v1, std::uint32_t v2) {
  return flag << 31 | v0 << 21 | v1 << 11 | v2 << 1;
}

// --- Hand-worked words -----------------------------------------------------------------------

TEST(CodecWord, ThreeValuesOfBase0111SetTheFlagAndKeepFiveMantissaBits) {
  // 1.0      = 0 01111111 000...  -> 0 1111 00000
  // -0.5     = 1 01111110 000...  -> 1 1110 00000
  // 0.15625  = 0 01111100 01000.. -> 0 1100 01000   (1.25 * 2^-3)
  EXPECT_THAT(Words({1.0f, -0.5f, 0.15625f}),
              ::testing::ElementsAre(0b1'0111100000'1111000000'0110001000'0u));
  EXPECT_EQ(0b1'0111100000'1111000000'0110001000'0u, 0xBC1E0310u);
  EXPECT_THAT(RoundTrip({1.0f, -0.5f, 0.15625f}), ::testing::ElementsAre(1.0f, -0.5f, 0.15625f));
}

TEST(CodecWord, DroppingTheLower18MantissaBitsTruncatesTowardZero) {
  // 0.3f        = 0x3E99999A: exponent 0111 1101, mantissa 00110 0110011001100110 1
  // -0.1f       = 0xBDCCCCCD: exponent 0111 1011, mantissa 10011 0011001100110011 01
  // 1.99999988f = 0x3FFFFFFF: exponent 0111 1111, mantissa 11111 (and 18 ones dropped)
  const float just_below_two = std::nextafter(2.0f, 0.0f);
  EXPECT_THAT(Words({0.3f, -0.1f, just_below_two}),
              ::testing::ElementsAre(0b1'0110100110'1101110011'0111111111'0u));
  EXPECT_THAT(RoundTrip({0.3f, -0.1f, just_below_two}),
              ::testing::ElementsAre(1.1875f * 0.25f, -(1.0f + 19.0f / 32) / 16, 1.96875f));
}

TEST(CodecWord, ThreeValuesOfBase0110ClearTheFlag) {
  // 2^-20          = 0 01101011 00000 -> 0 1011 00000
  // -1.5 * 2^-24   = 1 01100111 10000 -> 1 0111 10000
  // 0              ->                    0 0000 00000
  const std::vector<float> values = {0x1p-20f, -0x1.8p-24f, 0.0f};
  EXPECT_THAT(Words(values), ::testing::ElementsAre(0b0'0101100000'1011110000'0000000000'0u));
  EXPECT_THAT(RoundTrip(values), ::testing::ElementsAre(0x1p-20f, -0x1.8p-24f, 0.0f));
}

TEST(CodecWord, AGroupMixingBasesTakesBase0111AndZeroesTheValuesBelowItsFloor) {
  // The paper's "otherwise base 0110" would leave 1.0 with no exponent to stand for; wavepool
  // keeps the group's largest value and flushes 2^-16 and -2^-20 (< 2^-15) to signed zeros.
  const std::vector<float> values = {1.0f, 0x1p-16f, -0x1p-20f};
  EXPECT_THAT(Words(values), ::testing::ElementsAre(0b1'0111100000'0000000000'1000000000'0u));
  const std::vector<float> decoded = RoundTrip(values);
  ASSERT_EQ(decoded.size(), 3u);
  EXPECT_EQ(decoded[0], 1.0f);
  EXPECT_EQ(Bits(decoded[1]), Bits(0.0f));
  EXPECT_EQ(Bits(decoded[2]), Bits(-0.0f));
}

TEST(CodecWord, ValuesOnTheFloorTakeMantissaOneBecauseTheZeroPayloadMeansZero) {
  // 2^-15 = 0 01110000 00000: payload (0000, 00000) is taken by zero, so it becomes
  // 0 0000 00001 = (1 + 2^-5) * 2^-15; (1 + 2^-6) * 2^-15 truncates to the same payload.
  EXPECT_THAT(Words({0x1p-15f, -0x1.04p-15f, 0x1.08p-15f}),
              ::testing::ElementsAre(0b1'0000000001'1000000001'0000000001'0u));
  EXPECT_THAT(RoundTrip({0x1p-15f, -0x1.04p-15f, 0x1.08p-15f}),
              ::testing::ElementsAre(0x1.08p-15f, -0x1.08p-15f, 0x1.08p-15f));
  // The same on base 0110's floor, 2^-31.
  EXPECT_THAT(Words({0x1p-31f, 0.0f, 0.0f}),
              ::testing::ElementsAre(0b0'0000000001'0000000000'0000000000'0u));
  EXPECT_THAT(RoundTrip({0x1p-31f}), ::testing::ElementsAre(0x1.08p-31f));
}

// --- Values the bases cannot hold ------------------------------------------------------------

TEST(CodecSpecialValues, ZeroAndNegativeZeroKeepTheirSign) {
  EXPECT_THAT(Words({0.0f, -0.0f, 0.0f}),
              ::testing::ElementsAre(0b0'0000000000'1000000000'0000000000'0u));
  const std::vector<float> decoded = RoundTrip({0.0f, -0.0f, -0.0f, 0.0f});
  ASSERT_EQ(decoded.size(), 4u);
  EXPECT_EQ(Bits(decoded[0]), 0x0000'0000u);
  EXPECT_EQ(Bits(decoded[1]), 0x8000'0000u);
  EXPECT_EQ(Bits(decoded[2]), 0x8000'0000u);
  EXPECT_EQ(Bits(decoded[3]), 0x0000'0000u);
}

TEST(CodecSpecialValues, SubnormalsAndNormalsBelow2ToTheMinus31FlushToSignedZero) {
  const float min_subnormal = std::numeric_limits<float>::denorm_min();
  const float max_subnormal = std::nextafter(std::numeric_limits<float>::min(), 0.0f);
  const float below_floor = std::nextafter(0x1p-31f, 0.0f);
  const std::vector<float> values = {
      min_subnormal, -max_subnormal, std::numeric_limits<float>::min(),
      -below_floor,  0x1p-32f,       -0x1p-100f};
  EXPECT_THAT(Words(values), ::testing::ElementsAre(0b0'0000000000'1000000000'0000000000'0u,
                                                    0b0'1000000000'0000000000'1000000000'0u));
  const std::vector<float> decoded = RoundTrip(values);
  ASSERT_EQ(decoded.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(decoded[i], 0.0f) << i;
    EXPECT_EQ(std::signbit(decoded[i]), std::signbit(values[i])) << i;
  }
}

TEST(CodecSpecialValues, SmallestAndLargestRepresentableRoundTripExactly) {
  // Smallest decodable magnitude: (1 + 2^-5) * 2^-31; largest: (2 - 2^-5) * 2^0 = 1.96875.
  // (The smallest need a group of their own: beside 1.96875 they would be below its floor.)
  EXPECT_THAT(
      RoundTrip({0x1.08p-31f, -0x1.08p-31f, 0.0f, kWeightCodecLargest, -kWeightCodecLargest}),
      ::testing::ElementsAre(0x1.08p-31f, -0x1.08p-31f, 0.0f, 1.96875f, -1.96875f));
  EXPECT_THAT(Words({kWeightCodecLargest, -kWeightCodecLargest, 0.0f}),
              ::testing::ElementsAre(0b1'0111111111'1111111111'0000000000'0u));
  // Base 0110's largest value, (2 - 2^-5) * 2^-16, stays in a flag-0 group.
  EXPECT_THAT(Words({0x1.f8p-16f, 0.0f, 0.0f}),
              ::testing::ElementsAre(0b0'0111111111'0000000000'0000000000'0u));
}

TEST(CodecSpecialValues, MagnitudesOfTwoAndAboveAreRejectedWithTheirIndexAndValue) {
  EXPECT_THAT(EncodeWeights({0.5f, 0.25f, 2.0f}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("value 2 is 2:"), HasSubstr("magnitudes of 2 or more"))));
  EXPECT_THAT(EncodeWeights({0.5f, -2.5f}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 1 is -2.5:")));
  EXPECT_THAT(EncodeWeights({0.5f, 0.5f, 0.5f, std::nextafter(2.0f, 3.0f)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 3 is 2.00000024")));
  EXPECT_THAT(EncodeWeights({std::numeric_limits<float>::max()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 0 is 3.40282347e+38")));
  // The first offending value is named, in the bulk groups and in the tail alike.
  std::vector<float> many(3000, 0.01f);
  many[1234] = 7.0f;
  many[2999] = 9.0f;
  EXPECT_THAT(EncodeWeights(many),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 1234 is 7:")));
  many[1234] = 0.01f;
  EXPECT_THAT(EncodeWeights(many),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 2999 is 9:")));
}

TEST(CodecSpecialValues, NaNAndInfinitiesAreRejectedWithTheirIndex) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THAT(EncodeWeights({0.5f, std::numeric_limits<float>::quiet_NaN()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 1 is nan")));
  EXPECT_THAT(EncodeWeights({-std::numeric_limits<float>::signaling_NaN()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 0 is nan")));
  EXPECT_THAT(EncodeWeights({0.5f, 0.5f, 0.5f, inf}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 3 is inf")));
  EXPECT_THAT(EncodeWeights({0.5f, 0.5f, 0.5f, 0.5f, -inf}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value 4 is -inf")));
}

// --- Every code, and the error bound ---------------------------------------------------------

// What the format promises, computed with arithmetic rather than bit operations: keep 5
// fraction bits (truncating), flush below the group's floor, lift the floor itself by 2^-5.
float ModelRoundTrip(float x, float group_floor) {
  const double magnitude = std::fabs(x);
  if (magnitude < group_floor) return std::copysign(0.0f, x);
  int exponent;
  std::frexp(magnitude, &exponent);  // magnitude in [2^(exponent-1), 2^exponent)
  const double step = std::ldexp(1.0, exponent - 1 - 5);
  double kept = std::floor(magnitude / step) * step;
  if (kept == group_floor) kept = group_floor * (1.0 + 1.0 / 32);
  return std::copysign(static_cast<float>(kept), x);
}

float GroupFloor(const float* group, std::size_t size) {
  float largest = 0;
  for (std::size_t i = 0; i < size; ++i) largest = std::max(largest, std::fabs(group[i]));
  return largest >= kWeightCodecWideFloor ? kWeightCodecWideFloor : kWeightCodecNarrowFloor;
}

TEST(CodecWord, EveryCodeOfBothBasesDecodesToItsValueAndEncodesBack) {
  for (std::uint32_t flag = 0; flag < 2; ++flag) {
    const int base_exponent = flag == 1 ? -15 : -31;  // biased 0111'0000 or 0110'0000, minus 127
    for (std::uint32_t code = 0; code < 1024; ++code) {
      SCOPED_TRACE(absl::StrFormat("flag %d code %#x", flag, code));
      const std::uint32_t delta = (code >> 5) & 0xF;
      const std::uint32_t mantissa = code & 0x1F;
      const double magnitude = (delta == 0 && mantissa == 0)
                                   ? 0.0
                                   : std::ldexp(1.0 + mantissa / 32.0, base_exponent + delta);
      const float expected = static_cast<float>((code & 0x200) != 0 ? -magnitude : magnitude);
      // Value 1 is 1.0 in a flag-1 word, so that re-encoding keeps the flag.
      const std::uint32_t other = flag == 1 ? 0b0'1111'00000 : 0;
      const std::uint32_t word = Word(flag, code, other, 0);
      std::vector<std::uint8_t> stream = *EncodeWeights({0.0f, 0.0f, 0.0f});
      for (int b = 0; b < 4; ++b) stream[kWeightCodecHeaderBytes + b] = (word >> (8 * b)) & 0xFF;
      absl::StatusOr<std::vector<float>> decoded = DecodeWeights(stream);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      EXPECT_EQ(Bits((*decoded)[0]), Bits(expected));
      EXPECT_THAT(Words(*decoded), ::testing::ElementsAre(word));
    }
  }
}

TEST(CodecErrorBound, MillionsOfValuesAcrossBothBasesMatchTheModelAndTheBound) {
  std::mt19937 random(20240611);
  std::uniform_int_distribution<std::uint32_t> mantissa(0, (1u << 23) - 1);
  std::uniform_int_distribution<std::uint32_t> exponent(96, 127);  // 2^-31 .. 2^0
  std::bernoulli_distribution negative(0.5);
  constexpr std::size_t kValues = 3 * (1 << 20) + 2;  // and a partial last group
  std::vector<float> values(kValues);
  for (float& v : values) {
    v = FromBits((negative(random) ? 0x8000'0000u : 0u) | exponent(random) << 23 |
                 mantissa(random));
  }
  const std::vector<float> decoded = RoundTrip(values);
  ASSERT_EQ(decoded.size(), kValues);
  double worst_relative = 0;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < kValues; ++i) {
    const std::size_t first = i - i % 3;
    const float floor = GroupFloor(&values[first], std::min<std::size_t>(3, kValues - first));
    const float x = values[i];
    const float y = decoded[i];
    ASSERT_EQ(Bits(y), Bits(ModelRoundTrip(x, floor))) << i << ": " << x;
    const double error = std::fabs(static_cast<double>(x) - y);
    if (y == 0) {
      // Flushed: only below the group's floor, and never by more than 2^-15.
      ASSERT_LT(std::fabs(x), floor) << i << ": " << x;
      ASSERT_LT(error, kWeightCodecWideFloor) << i;
    } else {
      ++kept;
      ASSERT_LE(error, kWeightCodecRelativeError * std::fabs(x)) << i << ": " << x << " -> " << y;
      worst_relative = std::max(worst_relative, error / std::fabs(x));
    }
    ASSERT_LE(error, std::max(kWeightCodecRelativeError * std::fabs(x), kWeightCodecWideFloor));
    ASSERT_EQ(std::signbit(x), std::signbit(y)) << i;
  }
  // Half the exponents are base 0110's, so about 7/8 of the groups hold a base-0111 value and
  // flush their base-0110 values: a lot is flushed, and a lot more is kept.
  EXPECT_GT(kept, kValues / 2);
  // The bound is tight: truncation loses up to (2^18 - 1) / (2^23 + 2^18 - 1) = 0.0303.
  EXPECT_GT(worst_relative, 0.0302);
}

TEST(CodecErrorBound, WeightLikeValuesStayWithinThreePercent) {
  // Weights as trained networks hold them: mostly 1e-4 .. 1e-1, centred on zero (§IV-C,
  // Figure 9: exponents 112..124).
  std::mt19937 random(7);
  std::normal_distribution<float> weight(0.0f, 0.05f);
  std::vector<float> values(3 * 1000 * 1000);
  for (float& v : values) v = weight(random);
  const std::vector<float> decoded = RoundTrip(values);
  ASSERT_EQ(decoded.size(), values.size());
  std::size_t flushed = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double error = std::fabs(static_cast<double>(values[i]) - decoded[i]);
    if (decoded[i] == 0) {
      ++flushed;
      ASSERT_LT(std::fabs(values[i]), kWeightCodecWideFloor);
    } else {
      ASSERT_LE(error, kWeightCodecRelativeError * std::fabs(values[i]));
    }
  }
  // |x| < 2^-15 has probability about 5e-4 under N(0, 0.05).
  EXPECT_LT(flushed, values.size() / 1000);
}

}  // namespace
}  // namespace wavepool::runtime
