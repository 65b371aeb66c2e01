#include "wavepool/cli/codec_command.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "binary_file.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/weight_codec.h"

namespace wavepool::cli {
namespace {

constexpr bool kLittleEndianHost = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// Raw float32 files are little-endian whatever the host.
std::vector<float> FloatsFromLittleEndian(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, bytes.data() + sizeof(float) * i, sizeof bits);
    if constexpr (!kLittleEndianHost) bits = __builtin_bswap32(bits);
    std::memcpy(&values[i], &bits, sizeof bits);
  }
  return values;
}

std::vector<std::uint8_t> LittleEndianFromFloats(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(float));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    if constexpr (!kLittleEndianHost) bits = __builtin_bswap32(bits);
    std::memcpy(bytes.data() + sizeof(float) * i, &bits, sizeof bits);
  }
  return bytes;
}

// How far the decoded values are from the originals.
struct RoundTripError {
  double max_absolute = 0;
  std::size_t max_absolute_index = 0;
  double max_relative = 0;  // over values that did not decode to zero
  std::size_t max_relative_index = 0;
  std::size_t kept = 0;     // nonzero values that decoded to nonzero
  std::size_t flushed = 0;  // nonzero values below their group's floor, now zero
  double largest_flushed = 0;
};

RoundTripError MeasureError(const std::vector<float>& original, const std::vector<float>& decoded) {
  RoundTripError e;
  for (std::size_t i = 0; i < original.size(); ++i) {
    const double x = original[i];
    const double error = std::fabs(x - static_cast<double>(decoded[i]));
    if (error > e.max_absolute) {
      e.max_absolute = error;
      e.max_absolute_index = i;
    }
    if (x == 0) continue;
    if (decoded[i] == 0) {
      ++e.flushed;
      e.largest_flushed = std::max(e.largest_flushed, std::fabs(x));
      continue;
    }
    ++e.kept;
    if (error / std::fabs(x) > e.max_relative) {
      e.max_relative = error / std::fabs(x);
      e.max_relative_index = i;
    }
  }
  return e;
}

std::string FormatError(const RoundTripError& e, const std::vector<float>& original,
                        const std::vector<float>& decoded) {
  std::string text = absl::StrFormat("max absolute error: %.6g", e.max_absolute);
  if (e.max_absolute > 0) {
    absl::StrAppendFormat(&text, " (value %d: %.9g -> %.9g)", e.max_absolute_index,
                          original[e.max_absolute_index], decoded[e.max_absolute_index]);
  }
  absl::StrAppendFormat(&text, "\nmax relative error: %.6g", e.max_relative);
  if (e.max_relative > 0) absl::StrAppendFormat(&text, " (value %d)", e.max_relative_index);
  absl::StrAppendFormat(&text, " over %d nonzero values kept; bound %g\n", e.kept,
                        runtime::kWeightCodecRelativeError);
  absl::StrAppendFormat(&text, "flushed to zero: %d nonzero values", e.flushed);
  if (e.flushed > 0) {
    absl::StrAppendFormat(&text,
                          ", largest %.6g (below 2^-15 beside a larger value in their group "
                          "of 3, or below 2^-31)",
                          e.largest_flushed);
  }
  return text + "\n";
}

absl::StatusOr<std::string> Encode(const CodecFlags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::uint8_t> raw, ReadBinaryFile(flags.in));
  if (raw.size() % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d bytes is not a whole number of float32 values (a multiple of 4)",
                        flags.in, raw.size()));
  }
  const std::vector<float> values = FloatsFromLittleEndian(raw);
  absl::StatusOr<std::vector<std::uint8_t>> stream = runtime::EncodeWeights(values);
  if (!stream.ok()) {
    return absl::Status(stream.status().code(),
                        absl::StrCat(flags.in, ": ", stream.status().message()));
  }
  // The stream was just written: decoding it cannot fail.
  WAVEPOOL_ASSIGN_OR_RETURN(const std::vector<float> decoded, runtime::DecodeWeights(*stream));
  WAVEPOOL_RETURN_IF_ERROR(WriteFileAtomically(flags.out, *stream));
  return absl::StrFormat("values: %d\nbytes in: %d\nbytes out: %d\n", values.size(), raw.size(),
                         stream->size()) +
         FormatError(MeasureError(values, decoded), values, decoded);
}

absl::StatusOr<std::string> Decode(const CodecFlags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::uint8_t> stream, ReadBinaryFile(flags.in));
  absl::StatusOr<std::vector<float>> values = runtime::DecodeWeights(stream);
  if (!values.ok()) {
    return absl::Status(values.status().code(),
                        absl::StrCat(flags.in, ": ", values.status().message()));
  }
  const std::vector<std::uint8_t> raw = LittleEndianFromFloats(*values);
  WAVEPOOL_RETURN_IF_ERROR(WriteFileAtomically(flags.out, raw));
  return absl::StrFormat("values: %d\nbytes in: %d\nbytes out: %d\n", values->size(), stream.size(),
                         raw.size());
}

}  // namespace

CLI::App* AddCodecCommand(CLI::App* app, CodecFlags* flags) {
  CLI::App* codec = app->add_subcommand(
      "codec", "The 3:1 lossy float32 weight codec (ScaleDNN) on files: encode or decode");
  codec->require_subcommand(1);
  CLI::App* encode = codec->add_subcommand(
      "encode", "Raw little-endian float32 in, packed stream out; prints the round-trip error");
  CLI::App* decode =
      codec->add_subcommand("decode", "Packed stream in, raw little-endian float32 out");
  for (CLI::App* sub : {encode, decode}) {
    sub->add_option("--in", flags->in, "Input file")->required();
    sub->add_option("--out", flags->out, "Output file (replaced whole, or left untouched)")
        ->required();
  }
  encode->callback([flags] { flags->mode = CodecMode::kEncode; });
  decode->callback([flags] { flags->mode = CodecMode::kDecode; });
  return codec;
}

int RunCodec(const CodecFlags& flags, std::ostream& out, std::ostream& err) {
  if (flags.mode == CodecMode::kNone) {
    err << "wavepool codec: give a subcommand: encode or decode\n";
    return 1;
  }
  const bool encode = flags.mode == CodecMode::kEncode;
  const absl::StatusOr<std::string> report = encode ? Encode(flags) : Decode(flags);
  if (!report.ok()) {
    err << "wavepool codec " << (encode ? "encode" : "decode") << ": " << report.status().message()
        << "\n";
    return 1;
  }
  out << *report;
  return 0;
}

}  // namespace wavepool::cli
