// The checkpoint file format, version 1 (docs/runtime.md, "Checkpoints", has the table):
//   magic "WAVECKPT" | u32 version | u32 header length H | header (H bytes) | u32 CRC-32C of
//   everything before it | N section records, each: u32 name length L | u64 payload length P |
//   name | payload | u32 CRC-32C of the record's bytes before it.
// Integers are little-endian. The header holds step, data position, rank, world size, the
// section count N, and the fingerprint and metadata JSON as u32-length-prefixed strings.
#include "wavepool/runtime/checkpoint_file.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "byte_codec.h"
#include "crc32c.h"
#include "nlohmann/json.hpp"
#include "wavepool/base/atomic_file.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

using checkpoint_internal::ByteReader;
using checkpoint_internal::ByteWriter;
using checkpoint_internal::Crc32c;
using checkpoint_internal::Crc32cExtend;
using checkpoint_internal::Hex32;
using checkpoint_internal::QuoteBytes;
using checkpoint_internal::View;

// magic, version, header length.
constexpr std::size_t kPreambleBytes = 16;

// The file as pieces to write in order: framing bytes it owns and views of the sections' payloads,
// so that a multi-GB model is not copied once more to be written.
struct EncodedFile {
  std::vector<std::string> framing;
  std::vector<std::string_view> pieces;
};

absl::Status CheckFields(const CheckpointFile& file) {
  if (file.step < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint step ", file.step, ": must be >= 0"));
  if (file.data_position < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint data_position ", file.data_position, ": must be >= 0"));
  }
  if (file.world_size < 1 || file.rank < 0 || file.rank >= file.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint rank ", file.rank, ", world_size ", file.world_size,
                     ": need world_size >= 1 and 0 <= rank < world_size"));
  }
  for (const auto& [name, payload] : file.sections) {
    if (name.empty() || name.size() > kMaxSectionNameBytes) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint section name ", QuoteBytes(name),
                                                     ": must be 1 to ", kMaxSectionNameBytes,
                                                     " bytes"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MetadataJson(const std::map<std::string, std::string>& metadata) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : metadata) object[key] = value;
  try {
    return object.dump();
  } catch (const nlohmann::json::exception& e) {  // invalid UTF-8 in a key or value
    return absl::InvalidArgumentError(absl::StrCat("checkpoint metadata: ", e.what()));
  }
}

absl::StatusOr<std::string> EncodeHeader(const CheckpointFile& file) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string metadata, MetadataJson(file.metadata));
  if (file.fingerprint.size() > UINT32_MAX || metadata.size() > UINT32_MAX) {
    return absl::InvalidArgumentError("checkpoint fingerprint or metadata: over 4 GiB");
  }
  ByteWriter body;
  body.I64(file.step);
  body.I64(file.data_position);
  body.I32(file.rank);
  body.I32(file.world_size);
  body.U32(static_cast<std::uint32_t>(file.sections.size()));
  body.String32(file.fingerprint);
  body.String32(metadata);
  ByteWriter header;
  header.Bytes(kCheckpointMagic);
  header.U32(kCheckpointFormatVersion);
  header.U32(static_cast<std::uint32_t>(body.size()));
  header.Bytes(body.bytes());
  header.U32(Crc32c(header.bytes()));
  return header.Take();
}

absl::StatusOr<EncodedFile> Encode(const CheckpointFile& file) {
  WAVEPOOL_RETURN_IF_ERROR(CheckFields(file));
  WAVEPOOL_ASSIGN_OR_RETURN(std::string header, EncodeHeader(file));
  EncodedFile encoded;
  encoded.framing.reserve(1 + 2 * file.sections.size());
  encoded.framing.push_back(std::move(header));
  for (const auto& [name, payload] : file.sections) {
    ByteWriter prefix;
    prefix.U32(static_cast<std::uint32_t>(name.size()));
    prefix.U64(payload.size());
    prefix.Bytes(name);
    ByteWriter suffix;
    suffix.U32(Crc32cExtend(Crc32c(prefix.bytes()), payload));
    encoded.framing.push_back(prefix.Take());
    encoded.framing.push_back(suffix.Take());
  }
  // Views only once `framing` no longer grows.
  encoded.pieces.push_back(encoded.framing[0]);
  std::size_t next = 1;
  for (const auto& section : file.sections) {
    encoded.pieces.push_back(encoded.framing[next++]);
    encoded.pieces.push_back(section.second);
    encoded.pieces.push_back(encoded.framing[next++]);
  }
  return encoded;
}

// Everything that reads a file carries its name into the message.
class Decoder {
 public:
  Decoder(std::string_view bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  absl::StatusOr<CheckpointFile> Decode();

 private:
  absl::Status Error(absl::StatusCode code, absl::string_view what) const {
    return absl::Status(code, absl::StrCat("checkpoint ", View(source_), ": ", what));
  }
  absl::Status DataLoss(absl::string_view what) const {
    return Error(absl::StatusCode::kDataLoss, what);
  }
  absl::Status CheckPreamble(ByteReader& reader) const;
  absl::Status DecodeHeader(std::string_view body, CheckpointFile& file,
                            std::uint32_t& section_count) const;
  absl::Status DecodeMetadata(std::string_view json, std::size_t offset,
                              CheckpointFile& file) const;
  absl::Status DecodeSection(ByteReader& reader, std::uint32_t index, CheckpointFile& file) const;

  std::string_view bytes_;
  std::string_view source_;
};

absl::Status Decoder::CheckPreamble(ByteReader& reader) const {
  const std::string_view magic = bytes_.substr(0, kCheckpointMagic.size());
  if (magic != kCheckpointMagic) {
    return DataLoss(bytes_.empty() ? std::string("not a wavepool checkpoint: the file is empty")
                                   : absl::StrCat("not a wavepool checkpoint: offset 0 holds ",
                                                  QuoteBytes(magic), ", expected ",
                                                  QuoteBytes(kCheckpointMagic)));
  }
  reader.Bytes(kCheckpointMagic.size(), "magic");
  const std::uint32_t version = reader.U32("format version");
  if (!reader.ok()) return DataLoss(reader.status().message());
  if (version == 0) return DataLoss("format version 0 at offset 8 is not a valid version");
  if (version > kCheckpointFormatVersion) {
    return Error(absl::StatusCode::kFailedPrecondition,
                 absl::StrCat("format version ", version, " (offset 8) is newer than this build ",
                              "reads (1 to ", kCheckpointFormatVersion,
                              "): resume with a newer wavepool-worker"));
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeMetadata(std::string_view json, std::size_t offset,
                                     CheckpointFile& file) const {
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return DataLoss(absl::StrCat("header metadata at offset ", offset,
                                 " is not a JSON object: ", QuoteBytes(json)));
  }
  for (const auto& [key, value] : parsed.items()) {
    if (!value.is_string()) {
      return DataLoss(
          absl::StrCat("header metadata at offset ", offset, ": '", key, "' is not a string"));
    }
    file.metadata[key] = value.get<std::string>();
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeHeader(std::string_view body, CheckpointFile& file,
                                   std::uint32_t& section_count) const {
  ByteReader reader(body, kPreambleBytes);
  file.step = reader.I64("step");
  file.data_position = reader.I64("data position");
  file.rank = reader.I32("rank");
  file.world_size = reader.I32("world size");
  section_count = reader.U32("section count");
  file.fingerprint = std::string(reader.String32("fingerprint"));
  const std::size_t metadata_offset = reader.offset() + 4;
  const std::string_view metadata = reader.String32("metadata");
  if (!reader.ok()) return DataLoss(absl::StrCat("header: ", reader.status().message()));
  if (!reader.AtEnd()) {
    return DataLoss(absl::StrCat("header: ", reader.remaining(), " unexpected bytes at offset ",
                                 reader.offset()));
  }
  if (file.step < 0 || file.data_position < 0 || file.world_size < 1 || file.rank < 0 ||
      file.rank >= file.world_size) {
    return DataLoss(absl::StrCat("header: values out of range: step ", file.step,
                                 ", data position ", file.data_position, ", rank ", file.rank,
                                 ", world size ", file.world_size));
  }
  return DecodeMetadata(metadata, metadata_offset, file);
}

absl::Status Decoder::DecodeSection(ByteReader& reader, std::uint32_t index,
                                    CheckpointFile& file) const {
  const std::size_t begin = reader.position();
  const std::string where = absl::StrCat("section record ", index, " at offset ", begin);
  const std::uint32_t name_bytes = reader.U32("section name length");
  const std::uint64_t payload_bytes = reader.U64("section payload length");
  if (reader.ok() && (name_bytes == 0 || name_bytes > kMaxSectionNameBytes)) {
    return DataLoss(absl::StrCat(where, ": name length ", name_bytes, " is not in [1, ",
                                 kMaxSectionNameBytes, "]"));
  }
  const std::string_view name = reader.Bytes(name_bytes, "section name");
  const std::size_t payload_offset = reader.offset();
  const std::string_view payload = reader.Bytes(payload_bytes, "section payload");
  const std::size_t checked_bytes = reader.position() - begin;
  const std::uint32_t stored = reader.U32("section checksum");
  if (!reader.ok()) {
    return DataLoss(absl::StrCat(where,
                                 name.empty() ? "" : absl::StrCat(" (", QuoteBytes(name), ")"),
                                 ": ", reader.status().message()));
  }
  const std::uint32_t computed = Crc32c(bytes_.substr(begin, checked_bytes));
  if (stored != computed) {
    return DataLoss(absl::StrCat("section ", QuoteBytes(name), " (", where, ", ", payload_bytes,
                                 " payload bytes at offset ", payload_offset,
                                 "): checksum mismatch: stored ", Hex32(stored), ", computed ",
                                 Hex32(computed)));
  }
  if (!file.sections.emplace(std::string(name), std::string(payload)).second) {
    return DataLoss(absl::StrCat(where, ": a second section named ", QuoteBytes(name)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckpointFile> Decoder::Decode() {
  ByteReader reader(bytes_);
  WAVEPOOL_RETURN_IF_ERROR(CheckPreamble(reader));
  const std::uint32_t header_bytes = reader.U32("header length");
  const std::string_view body = reader.Bytes(header_bytes, "header");
  const std::size_t checked_bytes = reader.position();
  const std::uint32_t stored = reader.U32("header checksum");
  if (!reader.ok()) return DataLoss(reader.status().message());
  const std::uint32_t computed = Crc32c(bytes_.substr(0, checked_bytes));
  if (stored != computed) {
    return DataLoss(absl::StrCat("header (offsets 0 to ", checked_bytes,
                                 "): checksum mismatch: stored ", Hex32(stored), ", computed ",
                                 Hex32(computed)));
  }
  CheckpointFile file;
  file.source = std::string(source_);
  std::uint32_t section_count = 0;
  WAVEPOOL_RETURN_IF_ERROR(DecodeHeader(body, file, section_count));
  for (std::uint32_t i = 0; i < section_count; ++i) {
    WAVEPOOL_RETURN_IF_ERROR(DecodeSection(reader, i, file));
  }
  if (!reader.AtEnd()) {
    return DataLoss(absl::StrCat(reader.remaining(), " unexpected bytes after the last of ",
                                 section_count, " sections, at offset ", reader.offset()));
  }
  return file;
}

}  // namespace

absl::StatusOr<std::string_view> CheckpointFile::Section(std::string_view name) const {
  if (auto it = sections.find(name); it != sections.end()) return std::string_view(it->second);
  std::vector<absl::string_view> present;
  for (const auto& section : sections) present.push_back(section.first);
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint ", source.empty() ? "(in memory)" : source, " has no section '", View(name),
      "' (it has: ", present.empty() ? "none" : absl::StrJoin(present, ", "), ")"));
}

absl::StatusOr<std::string> EncodeCheckpoint(const CheckpointFile& file) {
  WAVEPOOL_ASSIGN_OR_RETURN(EncodedFile encoded, Encode(file));
  std::string bytes;
  for (std::string_view piece : encoded.pieces) bytes.append(piece);
  return bytes;
}

absl::StatusOr<CheckpointFile> DecodeCheckpoint(std::string_view bytes, std::string_view source) {
  return Decoder(bytes, source).Decode();
}

absl::Status WriteCheckpointFile(const std::string& path, const CheckpointFile& file) {
  absl::StatusOr<EncodedFile> encoded = Encode(file);
  if (!encoded.ok()) {
    return absl::Status(encoded.status().code(),
                        absl::StrCat("write ", path, ": ", encoded.status().message()));
  }
  return WriteFileAtomically(path, encoded->pieces);
}

absl::StatusOr<CheckpointFile> ReadCheckpointFile(const std::string& path) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path, "checkpoint"));
  return DecodeCheckpoint(bytes, path);
}

}  // namespace wavepool::runtime
