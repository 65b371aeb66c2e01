#include "binary_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace wavepool::cli {
namespace {

absl::Status ErrnoError(int error, const std::string& what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::DataLossError(message);
  }
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
    if (errno != EEXIST) return ErrnoError(errno, absl::StrCat("write ", path, ": create ", name));
  }
  return absl::AlreadyExistsError(
      absl::StrCat("write ", path, ": 100 temporary files ", stem, "-* already exist"));
}

absl::Status WriteAll(int fd, absl::Span<const std::uint8_t> bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, absl::StrCat("write ", path));
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return ErrnoError(errno, absl::StrCat("write ", path, ": fsync"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::uint8_t>> ReadBinaryFile(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError(errno, absl::StrCat("open ", path));
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return ErrnoError(errno, absl::StrCat("stat ", path));
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("read ", path, ": not a regular file"));
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, absl::StrCat("read ", path));
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
  absl::StatusOr<std::string> temporary = CreateTemporary(path, &raw_fd);
  if (!temporary.ok()) return temporary.status();
  FileDescriptor fd(raw_fd);
  absl::Status status = WriteAll(fd.get(), bytes, path);
  if (status.ok() && fd.Close() != 0) status = ErrnoError(errno, absl::StrCat("write ", path));
  if (status.ok() && ::rename(temporary->c_str(), path.c_str()) != 0) {
    status = ErrnoError(errno, absl::StrCat("write ", path, ": rename ", *temporary));
  }
  if (!status.ok()) ::unlink(temporary->c_str());
  return status;
}

}  // namespace wavepool::cli
