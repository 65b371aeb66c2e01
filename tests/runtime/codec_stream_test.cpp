// The weight codec's stream: header bytes, sizes, the padding of a last partial word, the
// in-place API, and an error naming the offset for every truncated, foreign or corrupt stream.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/runtime/weight_codec.h"

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// Values that survive the codec exactly (5 mantissa bits, base 0111).
std::vector<float> ExactValues(std::size_t count) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = (i % 2 == 0 ? 1.0f : -1.0f) * (1.0f + static_cast<float>(i % 32) / 32) / 4;
  }
  return values;
}

std::vector<std::uint8_t> Encode(const std::vector<float>& values) {
  absl::StatusOr<std::vector<std::uint8_t>> stream = EncodeWeights(values);
  EXPECT_THAT(stream, IsOk());
  return stream.ok() ? *stream : std::vector<std::uint8_t>{};
}

TEST(CodecStream, HeaderIsMagicVersionReservedAndCountLittleEndian) {
  const std::vector<std::uint8_t> stream = Encode({1.0f, -0.5f, 0.15625f, 1.0f});
  EXPECT_THAT(stream, ElementsAre('W', 'P', 'W', 'C',        // magic
                                  1, 0, 0, 0,                // version 1, reserved
                                  4, 0, 0, 0, 0, 0, 0, 0,    // count 4
                                  0x10, 0x03, 0x1E, 0xBC,    // word 0xBC1E0310
                                  0x00, 0x00, 0x00, 0xBC));  // 1.0 then padding
}

TEST(CodecStream, SizeIsTheHeaderPlusOneWordPerThreeValuesRoundedUp) {
  EXPECT_EQ(EncodedWeightBytes(0), 16u);
  EXPECT_EQ(EncodedWeightBytes(1), 20u);
  EXPECT_EQ(EncodedWeightBytes(3), 20u);
  EXPECT_EQ(EncodedWeightBytes(4), 24u);
  EXPECT_EQ(EncodedWeightBytes(3'000'000), 16u + 4'000'000u);
}

TEST(CodecStream, EveryCountRoundTripsWithThePaddingRule) {
  for (std::size_t count = 0; count <= 10; ++count) {
    SCOPED_TRACE(absl::StrCat(count, " values"));
    const std::vector<float> values = ExactValues(count);
    const std::vector<std::uint8_t> stream = Encode(values);
    ASSERT_EQ(stream.size(), EncodedWeightBytes(count));
    EXPECT_THAT(EncodedWeightCount(stream), IsOk());
    EXPECT_EQ(*EncodedWeightCount(stream), count);
    absl::StatusOr<std::vector<float>> decoded = DecodeWeights(stream);
    ASSERT_THAT(decoded, IsOk());
    EXPECT_THAT(*decoded, ElementsAreArray(values));
    if (count % 3 != 0) {
      // The last word's unused slots hold the zero code (and so does the reserved bit).
      const std::uint8_t* last = stream.data() + stream.size() - 4;
      const std::uint32_t word =
          last[0] | last[1] << 8 | last[2] << 16 | static_cast<std::uint32_t>(last[3]) << 24;
      const std::uint32_t unused_mask = count % 3 == 1 ? 0x001F'FFFFu : 0x0000'07FFu;
      EXPECT_EQ(word & unused_mask, 0u);
    }
  }
}

TEST(CodecStream, InPlaceFormsWriteTheCallersBuffersWhateverTheyHeld) {
  const std::vector<float> values = ExactValues(1000);
  std::vector<std::uint8_t> stream(EncodedWeightBytes(values.size()), 0xFF);
  ASSERT_THAT(EncodeWeightsInto(values, absl::MakeSpan(stream)), IsOk());
  EXPECT_EQ(stream, Encode(values));
  // A misaligned input is fine: the words are read byte by byte where they lie.
  std::vector<std::uint8_t> shifted(stream.size() + 1);
  std::copy(stream.begin(), stream.end(), shifted.begin() + 1);
  std::vector<float> decoded(values.size(), 123.0f);
  ASSERT_THAT(DecodeWeightsInto(absl::MakeConstSpan(shifted).subspan(1), absl::MakeSpan(decoded)),
              IsOk());
  EXPECT_EQ(decoded, values);
}

TEST(CodecStream, InPlaceFormsRejectBuffersOfTheWrongSize) {
  const std::vector<float> values = ExactValues(7);
  std::vector<std::uint8_t> small(EncodedWeightBytes(7) - 1);
  EXPECT_THAT(
      EncodeWeightsInto(values, absl::MakeSpan(small)),
      StatusIs(kInvalid, HasSubstr("output buffer has 27 bytes; 7 values need exactly 28")));
  std::vector<std::uint8_t> large(EncodedWeightBytes(7) + 4);
  EXPECT_THAT(EncodeWeightsInto(values, absl::MakeSpan(large)),
              StatusIs(kInvalid, HasSubstr("32")));
  const std::vector<std::uint8_t> stream = Encode(values);
  std::vector<float> out(6);
  EXPECT_THAT(DecodeWeightsInto(stream, absl::MakeSpan(out)),
              StatusIs(kInvalid, HasSubstr("output buffer holds 6 values; the stream has 7")));
}

TEST(CodecStream, EveryTruncationIsAnErrorNamingWhereTheStreamEnds) {
  const std::vector<std::uint8_t> stream = Encode(ExactValues(7));  // 16 + 3 words = 28 bytes
  for (std::size_t size = 0; size < stream.size(); ++size) {
    SCOPED_TRACE(absl::StrCat(size, " bytes"));
    const absl::Span<const std::uint8_t> prefix(stream.data(), size);
    EXPECT_THAT(DecodeWeights(prefix),
                StatusIs(kInvalid, HasSubstr(absl::StrCat("truncated at offset ", size, ":"))));
  }
  EXPECT_THAT(DecodeWeights(absl::MakeConstSpan(stream).subspan(0, 24)),
              StatusIs(kInvalid, HasSubstr("7 values need 28 bytes")));
}

TEST(CodecStream, TrailingBytesAreAnErrorNamingTheirOffset) {
  std::vector<std::uint8_t> stream = Encode(ExactValues(7));
  stream.push_back(0);
  EXPECT_THAT(DecodeWeights(stream),
              StatusIs(kInvalid, HasSubstr("offset 28: 1 trailing byte after the last word of "
                                           "the 7 values")));
  stream.push_back(0);
  EXPECT_THAT(DecodeWeights(stream), StatusIs(kInvalid, HasSubstr("offset 28: 2 trailing bytes")));
}

TEST(CodecStream, AForeignStreamIsRejectedByItsMagic) {
  // Raw float32 bytes, as `wavepool codec decode` would see a file that was never encoded.
  std::vector<std::uint8_t> raw(64, 0);
  raw[3] = 0x3F;
  EXPECT_THAT(DecodeWeights(raw),
              StatusIs(kInvalid, AllOf(HasSubstr("offset 0: magic is"),
                                       HasSubstr("not a weight codec stream"))));
}

TEST(CodecStream, OtherVersionsAndReservedHeaderBitsAreRejected) {
  std::vector<std::uint8_t> stream = Encode(ExactValues(3));
  stream[4] = 2;
  EXPECT_THAT(DecodeWeights(stream),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("offset 4: version 2; this build reads version 1")));
  stream[4] = 1;
  stream[7] = 1;
  EXPECT_THAT(DecodeWeights(stream),
              StatusIs(kInvalid, HasSubstr("offset 6: reserved header field is 256, must be 0")));
}

TEST(CodecStream, ACountBeyondTheDataOrTheMachineIsRejected) {
  std::vector<std::uint8_t> stream = Encode(ExactValues(3));
  stream[8] = 4;  // 4 values need a second word
  EXPECT_THAT(DecodeWeights(stream),
              StatusIs(kInvalid, HasSubstr("truncated at offset 20: 4 values need 24 bytes")));
  for (int b = 8; b < 16; ++b) stream[b] = 0xFF;
  EXPECT_THAT(DecodeWeights(stream),
              StatusIs(kInvalid, HasSubstr("offset 8: count 18446744073709551615 exceeds")));
}

TEST(CodecStream, AWordWithItsReservedBitSetIsAnErrorNamingTheWord) {
  std::vector<std::uint8_t> stream = Encode(ExactValues(9));
  stream[16 + 4 * 1] |= 1;  // word 1's bit 0 (little-endian: its first byte)
  EXPECT_THAT(DecodeWeights(stream),
              StatusIs(kInvalid, HasSubstr("offset 20: word 1 has its reserved bit 0 set")));
  std::vector<std::uint8_t> tail = Encode(ExactValues(5));
  tail[16 + 4] |= 1;
  EXPECT_THAT(DecodeWeights(tail), StatusIs(kInvalid, HasSubstr("offset 20: word 1")));
}

TEST(CodecStream, ANonZeroUnusedSlotInTheLastWordIsAnError) {
  std::vector<std::uint8_t> stream = Encode(ExactValues(4));  // last word: slot 0 used
  stream[16 + 4] |= 0x02;                                     // bit 1: slot 2's lowest bit
  EXPECT_THAT(DecodeWeights(stream),
              StatusIs(kInvalid, HasSubstr("offset 20: unused slot 2 of the last word is not zero "
                                           "(the stream holds 4 values)")));
  stream = Encode(ExactValues(5));
  stream[16 + 4 + 1] |= 0x08;  // bit 11: slot 1's lowest bit; slot 1 holds value 4
  EXPECT_THAT(DecodeWeights(stream), IsOk());
  stream = Encode(ExactValues(4));
  stream[16 + 4 + 1] |= 0x08;  // with 4 values slot 1 is unused
  EXPECT_THAT(DecodeWeights(stream), StatusIs(kInvalid, HasSubstr("unused slot 1")));
}

TEST(CodecStream, AnEmptyTensorIsAHeaderAlone) {
  const std::vector<std::uint8_t> stream = Encode({});
  EXPECT_EQ(stream.size(), kWeightCodecHeaderBytes);
  absl::StatusOr<std::vector<float>> decoded = DecodeWeights(stream);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_TRUE(decoded->empty());
}

}  // namespace
}  // namespace wavepool::runtime
