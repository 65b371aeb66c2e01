// The 3:1 lossy float32 weight codec of scalednn-data-movement §IV-C (Figure 8): three float32
// values packed into one 32-bit word, used for the weights GPU 0 broadcasts when a plan enables
// weight compression. docs/runtime.md ("Weight compression") has the diagram.
//
// Every function here is pure: safe to call from any number of threads at once as long as their
// output buffers do not overlap; nothing is cached, and only the vector versions allocate.
//
// Format of one word (bit 31 first; the paper fixes the fields, wavepool fixes their order):
//
//   bit  31      flag: 1 = exponent base 0111 (|x| in [2^-15, 2)), 0 = base 0110 ([2^-31, 2^-15))
//   bits 30..21  value 0  \  each: sign (1 bit) | exponent delta (4 bits: the exponent's low 4) |
//   bits 20..11  value 1   > mantissa (5 bits: the top 5 of 23; the lower 18 are dropped)
//   bits 10..1   value 2  /
//   bit  0       reserved, always 0
//
// A value decodes to sign | (base << 4 | delta) << 23 | mantissa << 18 (float32 bits), except
// the payload delta = 0, mantissa = 0, which means a signed zero.
//
// Stream: a 16-byte little-endian header (magic "WPWC", u16 version 1, u16 reserved = 0, u64
// value count), then ceil(count / 3) words, little-endian; the last word's unused slots are
// zero (+0 payloads). EncodedWeightBytes(n) = 16 + 4 * ceil(n / 3).
//
// Encoding rule, per group of three consecutive values (docs/runtime.md gives the reasons):
//   - The group's flag is 1 when its largest magnitude is >= 2^-15, else 0 (the paper's rule
//     whenever all three values share the base; a group mixing bases keeps its largest values).
//   - A value at or above its group's floor (2^-15 for flag 1, 2^-31 for flag 0) keeps its sign,
//     exponent and top 5 mantissa bits (truncation). If that gives the zero payload (the value
//     is in [floor, floor * (1 + 2^-5))), the mantissa field becomes 1 instead.
//   - A value below its group's floor (zero, -0, subnormals, tiny normals) becomes a zero of the
//     same sign.
//   - NaN, +-Inf and magnitudes >= 2 cannot be encoded: InvalidArgument naming the first such
//     value's index and value. Saturating them would break any error bound.
//
// Error bound: for every value x that encodes, with x' = Decode(Encode(x)),
//   |x - x'| <= 2^-5 * |x|   whenever x' != 0 (always when |x| >= 2^-15): dropping 18 of 23
//                           mantissa bits loses at most (2^18 - 1) * 2^-23 * 2^e < 2^-5 * |x|
//                           for |x| in [2^e, 2^(e+1)); a value lifted to mantissa 1 on a floor
//                           moves by at most 2^-5 * floor <= 2^-5 * |x|;
//   x' = +-0, |x - x'| = |x| < 2^-15 otherwise (below the group's floor);
// so |x - x'| <= max(2^-5 * |x|, 2^-15) for every value, and sign(x') = sign(x).
#ifndef WAVEPOOL_RUNTIME_WEIGHT_CODEC_H_
#define WAVEPOOL_RUNTIME_WEIGHT_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace wavepool::runtime {

// Stream header size and the only version this build reads and writes.
inline constexpr std::size_t kWeightCodecHeaderBytes = 16;
inline constexpr std::uint16_t kWeightCodecVersion = 1;
inline constexpr std::size_t kWeightCodecValuesPerWord = 3;

// The largest magnitude that decodes: (2 - 2^-5) * 2^0. Inputs in [1.96875, 2) truncate to it.
inline constexpr float kWeightCodecLargest = 1.96875f;
// Inputs at or above this magnitude (and NaN, Inf) are rejected.
inline constexpr float kWeightCodecLimit = 2.0f;
// The floor of a flag-1 group (base 0111): below it, a value beside one >= it becomes +-0.
inline constexpr float kWeightCodecWideFloor = 0x1p-15f;
// The floor of a flag-0 group (base 0110): below it a value always becomes +-0.
inline constexpr float kWeightCodecNarrowFloor = 0x1p-31f;
// The bound on |x - x'| / |x| for every value that does not decode to zero.
inline constexpr float kWeightCodecRelativeError = 0x1p-5f;

// Bytes of the stream that holds `count` values: header + 4 * ceil(count / 3).
// REQUIRES: count <= MaxWeightCodecCount().
std::size_t EncodedWeightBytes(std::size_t count);
// The most values a stream may hold on this machine (its size must fit a size_t).
std::size_t MaxWeightCodecCount();

// Encodes `values` into `stream`, the hot-path form: no allocation, one pass over the input.
// InvalidArgument when stream.size() != EncodedWeightBytes(values.size()) (the message gives
// both), or when a value is NaN, infinite or >= 2 in magnitude (the message names the first
// one's index and value; the stream's content is then unspecified). Callers that must send such
// a tensor send it uncompressed.
absl::Status EncodeWeightsInto(absl::Span<const float> values, absl::Span<std::uint8_t> stream);
// The same into a new buffer of EncodedWeightBytes(values.size()) bytes.
absl::StatusOr<std::vector<std::uint8_t>> EncodeWeights(absl::Span<const float> values);

// Checks a stream's header and size and returns the value count it declares. Errors name the
// byte offset of the problem: InvalidArgument for a stream shorter than its header or than the
// words its count needs, trailing bytes, a wrong magic (not a weight stream), a nonzero reserved
// header field, a count too large for this machine; Unimplemented for another version.
absl::StatusOr<std::size_t> EncodedWeightCount(absl::Span<const std::uint8_t> stream);
// Decodes `stream` into `values`, the hot-path form: no allocation, one pass over the words.
// The header errors of EncodedWeightCount, and InvalidArgument (naming the offset) when
// values.size() differs from the stream's count, a word's reserved bit is set, or an unused slot
// of the last word is not zero. On error, `values` holds unspecified data.
absl::Status DecodeWeightsInto(absl::Span<const std::uint8_t> stream, absl::Span<float> values);
// The same into a new vector of the stream's count.
absl::StatusOr<std::vector<float>> DecodeWeights(absl::Span<const std::uint8_t> stream);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_WEIGHT_CODEC_H_
