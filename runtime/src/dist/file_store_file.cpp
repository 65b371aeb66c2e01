// Checking a c10d FileStore's file before LibTorch reads it (file_store_file.h).
#include "file_store_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/scoped_fd.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

constexpr std::chrono::milliseconds kLockPoll{10};
constexpr std::size_t kBlockBytes = std::size_t{1} << 20;

// ErrnoError for `operation` ("open") on the store file, with errno read before anything else can
// change it.
absl::Status LastError(const char* operation, const std::string& path) {
  const int error = errno;
  return ErrnoError(error, absl::StrCat(operation, " store file ", path));
}

// Serves 4-byte reads at increasing offsets from 1 MiB blocks, so that a file of many short
// records costs a read per block, not per record.
class LengthReader {
 public:
  LengthReader(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  // The u32 (host order, as c10d writes it) at `offset`. REQUIRES: offset + 4 <= the file's size.
  absl::StatusOr<std::uint32_t> At(std::uint64_t offset) {
    if (offset < start_ || offset + 4 > start_ + block_.size()) {
      block_.resize(kBlockBytes);
      std::size_t filled = 0;
      while (filled < 4) {
        const ssize_t got = ::pread(fd_, block_.data() + filled, block_.size() - filled,
                                    static_cast<off_t>(offset + filled));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return LastError("read", path_);
        if (got == 0) {
          return absl::DataLossError(
              absl::StrCat("read store file ", path_, ": it shrank while read"));
        }
        filled += static_cast<std::size_t>(got);
      }
      block_.resize(filled);
      start_ = offset;
    }
    std::uint32_t value = 0;
    std::memcpy(&value, block_.data() + (offset - start_), sizeof(value));
    return value;
  }

 private:
  const int fd_;
  const std::string path_;
  std::vector<unsigned char> block_;
  std::uint64_t start_ = 0;
};

// Takes a shared flock on `fd`, polling so that a holder that never lets go costs at most
// `timeout`.
absl::Status LockShared(int fd, const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return LastError("lock", path);
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("store file ", path, ": locked by another process for longer than ",
                       timeout.count(), " ms"));
    }
    std::this_thread::sleep_for(kLockPoll);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckFileStoreFile(const std::string& path, std::chrono::milliseconds timeout) {
  // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return absl::OkStatus();
    return LastError("open", path);
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return LastError("stat", path);
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store file ", path, ": not a regular file (a FileStore needs one)"));
  }
  WAVEPOOL_RETURN_IF_ERROR(LockShared(fd.get(), path, timeout));
  // Sized under the lock: no record is being appended now.
  if (::fstat(fd.get(), &info) != 0) return LastError("stat", path);
  const auto size = static_cast<std::uint64_t>(info.st_size);
  LengthReader lengths(fd.get(), path);
  std::uint64_t offset = 0;
  for (std::uint64_t string = 0; offset < size || string % 2 == 1; ++string) {
    const char* what = string % 2 == 0 ? "key" : "value";
    if (size - offset < 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("store file ", path, ": not a c10d FileStore file: the ", what,
                       " length at byte offset ", offset, " needs 4 bytes, ", size - offset,
                       " remain (another file at this path, or a record cut short)"));
    }
    WAVEPOOL_ASSIGN_OR_RETURN(const std::uint32_t length, lengths.At(offset));
    if (length > size - offset - 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "store file ", path, ": not a c10d FileStore file: the ", what, " at byte offset ",
          offset, " claims ", length, " bytes, ", size - offset - 4,
          " follow (another file at this path, or a record cut short)"));
    }
    offset += 4 + std::uint64_t{length};
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime
