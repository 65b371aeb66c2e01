#include "wavepool/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/scoped_fd.h"

namespace wavepool {
namespace {

// Debian's abseil has its own string_view type.
absl::string_view Abseil(std::string_view text) { return {text.data(), text.size()}; }

// "<operation> <path>: <errno text>" (ErrnoError's mapping).
absl::Status IoError(int error_number, std::string_view operation, std::string_view path) {
  return ErrnoError(error_number, absl::StrCat(Abseil(operation), " ", Abseil(path)));
}

// "read <what>", or "read" for an unnamed file.
std::string ReadOperation(std::string_view what) {
  return what.empty() ? std::string("read") : absl::StrCat("read ", Abseil(what));
}

// write(2) moves at most this much per call on Linux; larger pieces loop.
constexpr std::size_t kMaxWriteBytes = std::size_t{1} << 30;

// 0 or the errno of the first failed write.
int WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), std::min(bytes.size(), kMaxWriteBytes));
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return 0;
}

// Writes, chmods and fsyncs the temporary file, then closes it.
absl::Status FillTemporary(ScopedFd& fd, const std::vector<std::string_view>& pieces,
                           const std::string& path, const std::string& temporary) {
  const std::string operation = absl::StrCat("write ", temporary, " for");
  for (std::string_view piece : pieces) {
    if (const int err = WriteAll(fd.get(), piece); err != 0) return IoError(err, operation, path);
  }
  if (::fchmod(fd.get(), 0644) != 0) {
    return IoError(errno, absl::StrCat("chmod ", temporary, " for"), path);
  }
  if (::fsync(fd.get()) != 0) {
    return IoError(errno, absl::StrCat("fsync ", temporary, " for"), path);
  }
  if (const int err = fd.Close(); err != 0) {
    return IoError(err, absl::StrCat("close ", temporary, " for"), path);
  }
  return absl::OkStatus();
}

}  // namespace

std::string DirectoryOf(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? std::string(".") : parent;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces) {
  std::string temporary = absl::StrCat(path, Abseil(kAtomicTemporaryInfix), "XXXXXX");
  ScopedFd fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!fd.valid()) return IoError(errno, "create a temporary file for", path);
  absl::Status status = FillTemporary(fd, pieces, path, temporary);
  if (status.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
    status = IoError(errno, absl::StrCat("rename ", temporary, " to"), path);
  }
  if (!status.ok()) {
    ::unlink(temporary.c_str());
    return status;
  }
  return SyncDirectory(DirectoryOf(path));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what,
                                          std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; it changes nothing
  // for a regular file.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return IoError(errno, ReadOperation(what), path);
  return ReadWholeFile(fd, path, what, max_bytes);
}

absl::StatusOr<std::string> ReadWholeFile(const ScopedFd& fd, const std::string& path,
                                          std::string_view what, std::uint64_t max_bytes) {
  const std::string operation = ReadOperation(what);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return IoError(errno, operation, path);
  if (!S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(operation, " ", path, ": not a regular file"));
  }
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(operation, " ", path, ": ", info.st_size,
                                                   " bytes, more than the ", max_bytes,
                                                   " such a file may hold"));
  }
  // Read straight into the result: checkpoints are up to a few GB.
  const auto size = static_cast<std::size_t>(info.st_size);
  std::string contents(size, '\0');
  std::size_t filled = 0;
  for (;;) {
    if (filled == contents.size()) contents.resize(filled + (std::size_t{1} << 16));
    const ssize_t got = ::read(fd.get(), contents.data() + filled, contents.size() - filled);
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError(errno, operation, path);
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  if (filled < size) {
    return absl::DataLossError(absl::StrCat(operation, " ", path, ": the file shrank from ", size,
                                            " to ", filled, " bytes while read"));
  }
  contents.resize(filled);
  return contents;
}

absl::Status SyncDirectory(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return IoError(errno, "open directory", path);
  if (::fsync(fd.get()) != 0 && errno != EINVAL && errno != ENOTSUP) {
    return IoError(errno, "fsync directory", path);
  }
  return absl::OkStatus();
}

}  // namespace wavepool
