#include "binary_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::cli {
namespace {

// "<what>: <errno text>" with the codes binary_file.h promises: NotFound for a missing path,
// PermissionDenied for a denied or read-only one, ResourceExhausted for a full disk or quota and
// DataLoss for any other failed read or write.
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
  // Closes now, reporting close's error (a delayed write error shows up here).
  int Close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

// Creates a file nobody else has opened next to `path`; returns its name and descriptor.
absl::StatusOr<std::string> CreateTemporary(const std::string& path, int* fd) {
  const std::string stem = absl::StrCat(path, ".tmp-", ::getpid());
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = attempt == 0 ? stem : absl::StrCat(stem, "-", attempt);
    *fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (*fd >= 0) return name;
    if (errno != EEXIST) return FileError(errno, absl::StrCat("write ", path, ": create ", name));
  }
  return absl::AlreadyExistsError(
      absl::StrCat("write ", path, ": 100 temporary files ", stem, "-* already exist"));
}

absl::Status WriteAll(int fd, absl::Span<const std::uint8_t> bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError(errno, absl::StrCat("write ", path));
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return FileError(errno, absl::StrCat("write ", path, ": fsync"));
  return absl::OkStatus();
}

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
  int raw_fd = -1;
  WAVEPOOL_ASSIGN_OR_RETURN(std::string temporary, CreateTemporary(path, &raw_fd));
  FileDescriptor fd(raw_fd);
  absl::Status status = WriteAll(fd.get(), bytes, path);
  if (status.ok() && fd.Close() != 0) status = FileError(errno, absl::StrCat("write ", path));
  if (status.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
    status = FileError(errno, absl::StrCat("write ", path, ": rename ", temporary));
  }
  if (!status.ok()) ::unlink(temporary.c_str());
  return status;
}

}  // namespace wavepool::cli
