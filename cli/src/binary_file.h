// Whole-file reads and all-or-nothing writes for the `wavepool` subcommands: the files they read
// (layer tables, profiles, network files, traces, codec input) and the ones they write.
#ifndef WAVEPOOL_CLI_SRC_BINARY_FILE_H_
#define WAVEPOOL_CLI_SRC_BINARY_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace wavepool::cli {

// The whole content of the regular file `path` (wavepool/base/atomic_file.h's ReadWholeFile).
// Errors name the path and the failed step ("open <path>: ...", "read <path>: ..."): NotFound,
// PermissionDenied, InvalidArgument (a directory or other non-regular file), or DataLoss (a read
// error, or a file that shrank while read).
// A FIFO or device is refused rather than read: /dev/zero would never end, and a FIFO without a
// writer would block the open forever.
absl::StatusOr<std::vector<std::uint8_t>> ReadBinaryFile(const std::string& path);

// The same, as text.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

// Writes `bytes` to `path` so that `path` either keeps its old content (or stays absent) or holds
// all of `bytes` (wavepool/base/atomic_file.h): on any error the temporary file is removed and
// the message names `path`, the failed call and errno's text.
absl::Status WriteFileAtomically(const std::string& path, absl::Span<const std::uint8_t> bytes);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SRC_BINARY_FILE_H_
