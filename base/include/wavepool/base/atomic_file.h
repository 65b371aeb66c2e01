// Durable whole-file writes and reads: an atomic replace (temporary file, fsync, rename, fsync of
// the directory) so that a reader or a crash never sees half a file, and whole-file reads with
// errors that name the path. Checkpoints, codec output and run reports are written this way.
#ifndef WAVEPOOL_BASE_ATOMIC_FILE_H_
#define WAVEPOOL_BASE_ATOMIC_FILE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/base/scoped_fd.h"

namespace wavepool {

// Temporary files are "<final name>.tmp.XXXXXX" in the final file's directory, so that whoever
// owns the directory can recognise and remove the ones a crash left behind.
inline constexpr std::string_view kAtomicTemporaryInfix = ".tmp.";

// Replaces `path` with the concatenation of `pieces`, atomically and durably: a crash or error at
// any point leaves either the old file or the new one at `path`, never a mix, and an error
// removes the temporary file. The file gets mode 0644. Errors read "<step> <temporary> for
// <path>: <errno text>" ("rename <temporary> to <path>: ..." for the last step); a full disk,
// quota or file-size limit is ResourceExhausted (ErrnoError).
// REQUIRES: the directory exists.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces);
inline absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  return WriteFileAtomically(path, std::vector<std::string_view>{contents});
}

// The whole regular file `path`. Errors read "read <what> <path>: <problem>", where `what` names
// the file's role ("checkpoint", "LATEST file"; empty: "read <path>: ..."): ErrnoError's codes
// for a failed open, fstat or read; FailedPrecondition for a directory or another file that is
// not regular; DataLoss when the file ends before the size it had when opened (it shrank while
// read: truncated in place, which WriteFileAtomically never does). A file that grows while read
// is read to its end. Not for pseudo-files whose size is a placeholder (sysfs reports 4096).
// The open never waits: a FIFO is refused as not regular instead of blocking until a writer
// comes. With `max_bytes`, a file larger than that when opened is InvalidArgument naming both
// sizes, before anything is read (a file the caller parses whole, whose size a user controls).
absl::StatusOr<std::string> ReadWholeFile(
    const std::string& path, std::string_view what,
    std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// The same for a file the caller opened itself (to report a failed open in its own words), with
// the checks and messages above; `path` only names the file in messages. The caller keeps `fd`.
// REQUIRES: fd.valid(), open for reading and at offset 0 (as open(2) leaves it).
absl::StatusOr<std::string> ReadWholeFile(
    const ScopedFd& fd, const std::string& path, std::string_view what,
    std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// fsync of a directory, so that entries created, renamed or removed in it survive a crash.
// Filesystems that cannot sync a directory (EINVAL, ENOTSUP) count as success.
absl::Status SyncDirectory(const std::string& path);

// The directory holding `path` ("." for a bare name).
std::string DirectoryOf(const std::string& path);

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_ATOMIC_FILE_H_
