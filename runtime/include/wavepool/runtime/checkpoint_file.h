// One rank's checkpoint file: a versioned header (step, data position, rank, world size, the
// model-and-plan fingerprint, metadata) and named sections of bytes (the model's tensors, the
// optimizer state, the RNG state: checkpoint_state.h), each with a CRC-32C. docs/runtime.md
// ("Checkpoints") has the byte layout. Plain C++: no LibTorch here.
//
// Reading is all-or-nothing: DecodeCheckpoint and ReadCheckpointFile check the magic, the version,
// every length and every checksum before they return anything, so a corrupt file is reported
// before any of its state is applied.
//
// Error codes (every message names the file, and the offset or section where it went wrong):
//   DataLoss            corrupt, truncated or not a checkpoint (wrong magic), a checksum mismatch,
//                       bytes after the last section, a header value out of range.
//   FailedPrecondition  a format version newer than this build reads (resume with a newer
//                       wavepool-worker).
//   ResourceExhausted   writing: the disk or the file-size limit is full (ENOSPC, EDQUOT, EFBIG).
//   the errno's code    other I/O errors (NotFound, PermissionDenied, ...), with the errno text.
#ifndef WAVEPOOL_RUNTIME_CHECKPOINT_FILE_H_
#define WAVEPOOL_RUNTIME_CHECKPOINT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace wavepool::runtime {

// The first 8 bytes of every checkpoint file.
inline constexpr std::string_view kCheckpointMagic = "WAVECKPT";
// The format this build writes; it reads versions 1 to kCheckpointFormatVersion.
inline constexpr std::uint32_t kCheckpointFormatVersion = 1;
// Section names are 1 to this many bytes.
inline constexpr std::size_t kMaxSectionNameBytes = 255;

// One rank's training state. A plain value: copyable, not synchronised.
struct CheckpointFile {
  std::int64_t step = 0;           // optimizer steps completed, >= 0
  std::int64_t data_position = 0;  // the next global iteration to read, >= 0
  std::int32_t rank = 0;           // in [0, world_size)
  std::int32_t world_size = 1;     // >= 1
  // CheckpointFingerprint(model, plan) (checkpoint_fingerprint.h); any text, compared verbatim.
  std::string fingerprint;
  // Free-form facts for people and tools (job, strategy, ...), stored as a JSON object of strings.
  std::map<std::string, std::string> metadata;
  // Section name -> bytes. Names are 1..kMaxSectionNameBytes bytes; stored in name order.
  std::map<std::string, std::string, std::less<>> sections;
  // Where the file was read from, for messages (ReadCheckpointFile sets it; never written).
  std::string source;

  // The section named `name`. FailedPrecondition naming `source`, the section and the sections
  // present when there is none.
  absl::StatusOr<std::string_view> Section(std::string_view name) const;
};

// The file's bytes. InvalidArgument naming the field when a value is out of range (rank outside
// [0, world_size), a negative step or data position, an empty or too long section name).
absl::StatusOr<std::string> EncodeCheckpoint(const CheckpointFile& file);

// Parses and checks `bytes` (see "Error codes" above); `source` names them in messages and
// becomes the result's `source`.
absl::StatusOr<CheckpointFile> DecodeCheckpoint(std::string_view bytes, std::string_view source);

// Writes `file` to `path` atomically: into a temporary file in the same directory, fsync, rename
// over `path`, fsync the directory. On any error (ResourceExhausted for a full disk or a file-size
// limit, naming `path` and the errno text) the temporary file is removed and whatever was at
// `path` before is untouched. The caller's process should ignore SIGXFSZ, so that a file-size
// limit fails the write (EFBIG) instead of killing the process.
// REQUIRES: the directory of `path` exists.
absl::Status WriteCheckpointFile(const std::string& path, const CheckpointFile& file);

// Reads and decodes the file at `path`; errors as DecodeCheckpoint, or the errno's code for
// open/read errors (NotFound when it does not exist), naming `path`.
absl::StatusOr<CheckpointFile> ReadCheckpointFile(const std::string& path);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_CHECKPOINT_FILE_H_
