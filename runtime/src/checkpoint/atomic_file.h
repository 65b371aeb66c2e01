// Durable file primitives for checkpoints: an atomic replace (temporary file, fsync, rename,
// fsync of the directory), whole-file reads and errno-to-Status conversion that names the path.
#ifndef WAVEPOOL_RUNTIME_SRC_CHECKPOINT_ATOMIC_FILE_H_
#define WAVEPOOL_RUNTIME_SRC_CHECKPOINT_ATOMIC_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace wavepool::runtime::checkpoint_internal {

// Temporary files are "<final name>.tmp.XXXXXX" in the final file's directory; the directory
// protocol removes ones a crash left behind (checkpoint_directory.cpp).
inline constexpr std::string_view kTemporaryInfix = ".tmp.";

// "<operation> <path>: <errno text>", with ResourceExhausted for a full disk, quota or file-size
// limit (ENOSPC, EDQUOT, EFBIG) and absl's errno mapping otherwise (wavepool::ErrnoError).
absl::Status IoError(int error_number, std::string_view operation, std::string_view path);

// Replaces `path` with the concatenation of `pieces`, atomically and durably: a crash or error at
// any point leaves either the old file or the new one at `path`, never a mix, and an error
// removes the temporary file. The file gets mode 0644. REQUIRES: the directory exists.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces);

// The whole file. `what` names it in messages ("checkpoint", "LATEST file").
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what);

// fsync of a directory, so that entries created, renamed or removed in it survive a crash.
// Filesystems that cannot sync a directory (EINVAL, ENOTSUP) count as success.
absl::Status SyncDirectory(const std::string& path);

// The directory holding `path` ("." for a bare name).
std::string DirectoryOf(const std::string& path);

}  // namespace wavepool::runtime::checkpoint_internal

#endif  // WAVEPOOL_RUNTIME_SRC_CHECKPOINT_ATOMIC_FILE_H_
