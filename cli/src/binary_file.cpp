#include "binary_file.h"

#include <fcntl.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "wavepool/base/atomic_file.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/scoped_fd.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::cli {
namespace {

// "<what>: <errno text>" with the codes binary_file.h promises for a failed open: NotFound for a
// missing path, PermissionDenied for a denied one, ResourceExhausted for a full disk or quota and
// DataLoss for any other failure.
absl::Status FileError(int error, const std::string& what) {
  absl::StatusCode code = absl::StatusCode::kDataLoss;
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      code = absl::StatusCode::kNotFound;
      break;
    case EACCES:
    case EPERM:
    case EROFS:
      code = absl::StatusCode::kPermissionDenied;
      break;
    case ENOSPC:
    case EDQUOT:
      code = absl::StatusCode::kResourceExhausted;
      break;
    default:
      break;
  }
  return ErrnoError(code, error, what);
}

}  // namespace

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  // O_NONBLOCK: a FIFO opens at once (and is then refused as not regular) instead of waiting for
  // a writer; it changes nothing for a regular file.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return FileError(errno, absl::StrCat("open ", path));
  absl::StatusOr<std::string> contents = ReadWholeFile(fd, path, /*what=*/"");
  if (!contents.ok()) {
    // ReadWholeFile's message ("read <path>: ..."), with the codes binary_file.h promises: after
    // a successful open, only a file that is not regular is the user's to fix.
    return absl::Status(absl::IsFailedPrecondition(contents.status())
                            ? absl::StatusCode::kInvalidArgument
                            : absl::StatusCode::kDataLoss,
                        contents.status().message());
  }
  return contents;
}

absl::StatusOr<std::vector<std::uint8_t>> ReadBinaryFile(const std::string& path) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string contents, ReadTextFile(path));
  return std::vector<std::uint8_t>(contents.begin(), contents.end());
}

absl::Status WriteFileAtomically(const std::string& path, absl::Span<const std::uint8_t> bytes) {
  return ::wavepool::WriteFileAtomically(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace wavepool::cli
