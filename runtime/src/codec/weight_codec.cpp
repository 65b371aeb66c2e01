// The codec's stream layer: header, sizes, the last partial group and every error message. The
// per-value work is in codec_kernels.cpp; the format is described in weight_codec.h.
#include "wavepool/runtime/weight_codec.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "codec_kernels.h"
#include "codec_word.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

using codec::kAbsMask;
using codec::kCodeMask;
using codec::kLimitBits;
using codec::kReservedBit;
using codec::kValueShift;

constexpr char kMagic[4] = {'W', 'P', 'W', 'C'};
constexpr std::size_t kVersionOffset = 4;
constexpr std::size_t kReservedOffset = 6;
constexpr std::size_t kCountOffset = 8;
constexpr std::size_t kWordBytes = 4;

std::size_t WordsFor(std::size_t count) {
  return (count + kWeightCodecValuesPerWord - 1) / kWeightCodecValuesPerWord;
}

std::uint16_t Load16(const std::uint8_t* bytes) {
  return static_cast<std::uint16_t>(bytes[0] | (bytes[1] << 8));
}

std::uint64_t Load64(const std::uint8_t* bytes) {
  return codec::LoadLittleEndian32(bytes) |
         (static_cast<std::uint64_t>(codec::LoadLittleEndian32(bytes + 4)) << 32);
}

void WriteHeader(std::size_t count, std::uint8_t* bytes) {
  for (std::size_t i = 0; i < sizeof kMagic; ++i) bytes[i] = static_cast<std::uint8_t>(kMagic[i]);
  bytes[kVersionOffset] = static_cast<std::uint8_t>(kWeightCodecVersion & 0xFF);
  bytes[kVersionOffset + 1] = static_cast<std::uint8_t>(kWeightCodecVersion >> 8);
  bytes[kReservedOffset] = 0;
  bytes[kReservedOffset + 1] = 0;
  const std::uint64_t wide_count = count;
  codec::StoreLittleEndian32(static_cast<std::uint32_t>(wide_count), bytes + kCountOffset);
  codec::StoreLittleEndian32(static_cast<std::uint32_t>(wide_count >> 32),
                             bytes + kCountOffset + 4);
}

// The error for the first value of `values` that cannot be encoded.
absl::Status UnencodableValueError(absl::Span<const float> values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float value = values[i];
    if ((codec::FloatBits(value) & kAbsMask) < kLimitBits) continue;
    if (std::isnan(value)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("weight codec: value %d is nan: NaN cannot be encoded", i));
    }
    if (std::isinf(value)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("weight codec: value %d is %s: infinities cannot be encoded", i,
                          value > 0 ? "inf" : "-inf"));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "weight codec: value %d is %.9g: magnitudes of 2 or more cannot be encoded (exponent "
        "bases 0111 and 0110 reach %g)",
        i, value, kWeightCodecLargest));
  }
  return absl::InternalError("weight codec: a value was out of range but none was found");
}

absl::Status ReservedBitError(absl::Span<const std::uint8_t> stream, std::size_t words) {
  for (std::size_t w = 0; w < words; ++w) {
    const std::size_t offset = kWeightCodecHeaderBytes + kWordBytes * w;
    if ((codec::LoadLittleEndian32(stream.data() + offset) & kReservedBit) != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weight codec stream: offset %d: word %d has its reserved bit 0 set", offset, w));
    }
  }
  return absl::InternalError("weight codec stream: a reserved bit was set but none was found");
}

// Encodes the last `values.size()` (1 or 2) values, the rest of the word as +0 padding.
std::uint32_t EncodeTail(absl::Span<const float> values, std::uint8_t* word) {
  std::uint32_t bits[kWeightCodecValuesPerWord] = {0, 0, 0};
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = codec::FloatBits(values[i]);
  std::uint32_t largest;
  codec::StoreLittleEndian32(codec::EncodeGroup(bits[0], bits[1], bits[2], &largest), word);
  return largest;
}

// Decodes the last word's `values.size()` (1 or 2) values; its other slots must be zero codes.
absl::Status DecodeTail(std::uint32_t word, std::size_t offset, std::size_t count,
                        absl::Span<float> values) {
  const std::uint32_t base = codec::WordBase(word);
  for (std::size_t slot = 0; slot < kWeightCodecValuesPerWord; ++slot) {
    if (slot < values.size()) {
      values[slot] = codec::BitsFloat(codec::DecodeValue(word, kValueShift[slot], base));
    } else if (((word >> kValueShift[slot]) & kCodeMask) != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weight codec stream: offset %d: unused slot %d of the last word is not zero (the "
          "stream holds %d values)",
          offset, slot, count));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::size_t MaxWeightCodecCount() {
  // A decoded vector of that many floats must be addressable.
  return static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / sizeof(float);
}

std::size_t EncodedWeightBytes(std::size_t count) {
  return kWeightCodecHeaderBytes + kWordBytes * WordsFor(count);
}

absl::Status EncodeWeightsInto(absl::Span<const float> values, absl::Span<std::uint8_t> stream) {
  if (values.size() > MaxWeightCodecCount()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight codec: %d values exceed the most a stream holds (%d)",
                        values.size(), MaxWeightCodecCount()));
  }
  const std::size_t need = EncodedWeightBytes(values.size());
  if (stream.size() != need) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight codec: output buffer has %d bytes; %d values need exactly %d",
                        stream.size(), values.size(), need));
  }
  WriteHeader(values.size(), stream.data());
  const std::size_t groups = values.size() / kWeightCodecValuesPerWord;
  std::uint8_t* words = stream.data() + kWeightCodecHeaderBytes;
  std::uint32_t largest = codec::EncodeGroups(values.data(), groups, words);
  const std::size_t tail = values.size() - groups * kWeightCodecValuesPerWord;
  if (tail > 0) {
    const std::uint32_t tail_largest =
        EncodeTail(values.subspan(groups * kWeightCodecValuesPerWord), words + kWordBytes * groups);
    largest = tail_largest > largest ? tail_largest : largest;
  }
  if (largest >= kLimitBits) return UnencodableValueError(values);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::uint8_t>> EncodeWeights(absl::Span<const float> values) {
  if (values.size() > MaxWeightCodecCount()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight codec: %d values exceed the most a stream holds (%d)",
                        values.size(), MaxWeightCodecCount()));
  }
  std::vector<std::uint8_t> stream(EncodedWeightBytes(values.size()));
  WAVEPOOL_RETURN_IF_ERROR(EncodeWeightsInto(values, absl::MakeSpan(stream)));
  return stream;
}

absl::StatusOr<std::size_t> EncodedWeightCount(absl::Span<const std::uint8_t> stream) {
  if (stream.size() < kWeightCodecHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight codec stream: truncated at offset %d: the header needs %d bytes",
                        stream.size(), kWeightCodecHeaderBytes));
  }
  const std::uint8_t* bytes = stream.data();
  if (std::memcmp(bytes, kMagic, sizeof kMagic) != 0) {
    const std::string seen(reinterpret_cast<const char*>(bytes), sizeof kMagic);
    return absl::InvalidArgumentError(absl::StrFormat(
        "weight codec stream: offset 0: magic is \"%s\", not \"WPWC\": not a weight codec stream",
        absl::CHexEscape(seen)));
  }
  const std::uint16_t version = Load16(bytes + kVersionOffset);
  if (version != kWeightCodecVersion) {
    return absl::UnimplementedError(
        absl::StrFormat("weight codec stream: offset %d: version %d; this build reads version %d",
                        kVersionOffset, version, kWeightCodecVersion));
  }
  const std::uint16_t reserved = Load16(bytes + kReservedOffset);
  if (reserved != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight codec stream: offset %d: reserved header field is %d, must be 0",
                        kReservedOffset, reserved));
  }
  const std::uint64_t count = Load64(bytes + kCountOffset);
  if (count > MaxWeightCodecCount()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "weight codec stream: offset %d: count %d exceeds the most this machine holds (%d)",
        kCountOffset, count, MaxWeightCodecCount()));
  }
  const std::size_t need = EncodedWeightBytes(static_cast<std::size_t>(count));
  if (stream.size() < need) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "weight codec stream: truncated at offset %d: %d values need %d bytes (%d words after "
        "the header)",
        stream.size(), count, need, WordsFor(static_cast<std::size_t>(count))));
  }
  if (stream.size() > need) {
    const std::size_t extra = stream.size() - need;
    return absl::InvalidArgumentError(absl::StrFormat(
        "weight codec stream: offset %d: %d trailing %s after the last word of the %d values", need,
        extra, extra == 1 ? "byte" : "bytes", count));
  }
  return static_cast<std::size_t>(count);
}

absl::Status DecodeWeightsInto(absl::Span<const std::uint8_t> stream, absl::Span<float> values) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::size_t count, EncodedWeightCount(stream));
  if (values.size() != count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "weight codec: output buffer holds %d values; the stream has %d", values.size(), count));
  }
  const std::size_t groups = count / kWeightCodecValuesPerWord;
  const std::uint8_t* words = stream.data() + kWeightCodecHeaderBytes;
  std::uint32_t seen = codec::DecodeGroups(words, groups, values.data());
  const std::size_t tail = count - groups * kWeightCodecValuesPerWord;
  if (tail > 0) {
    const std::uint32_t word = codec::LoadLittleEndian32(words + kWordBytes * groups);
    seen |= word;
    if ((seen & kReservedBit) != 0) return ReservedBitError(stream, groups + 1);
    return DecodeTail(word, kWeightCodecHeaderBytes + kWordBytes * groups, count,
                      values.subspan(groups * kWeightCodecValuesPerWord));
  }
  if ((seen & kReservedBit) != 0) return ReservedBitError(stream, groups);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> DecodeWeights(absl::Span<const std::uint8_t> stream) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::size_t count, EncodedWeightCount(stream));
  std::vector<float> values(count);
  WAVEPOOL_RETURN_IF_ERROR(DecodeWeightsInto(stream, absl::MakeSpan(values)));
  return values;
}

}  // namespace wavepool::runtime
