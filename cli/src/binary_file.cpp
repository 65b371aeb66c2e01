#include "binary_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "wavepool/base/atomic_file.h"
#include "wavepool/base/errno_error.h"

namespace wavepool::cli {
namespace {

// "<what>: <errno text>" with the codes binary_file.h promises: NotFound for a missing path,
// PermissionDenied for a denied or read-only one, ResourceExhausted for a full disk or quota and
// DataLoss for any other failed read.
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

// Closes a descriptor on every path out of a function.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<std::vector<std::uint8_t>> ReadBinaryFile(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return FileError(errno, absl::StrCat("open ", path));
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return FileError(errno, absl::StrCat("stat ", path));
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("read ", path, ": not a regular file"));
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError(errno, absl::StrCat("read ", path));
    if (n == 0) {
      return absl::DataLossError(absl::StrCat("read ", path, ": the file shrank from ",
                                              bytes.size(), " to ", done, " bytes while read"));
    }
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

absl::Status WriteFileAtomically(const std::string& path, absl::Span<const std::uint8_t> bytes) {
  return ::wavepool::WriteFileAtomically(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace wavepool::cli
