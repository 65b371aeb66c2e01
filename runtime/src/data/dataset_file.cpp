#include "dataset_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/base/errno_error.h"

namespace wavepool::runtime::data_internal {

absl::StatusOr<std::unique_ptr<DatasetFile>> DatasetFile::Open(std::string path) {
  // Non-blocking, so that a FIFO in the dataset's place is refused below instead of holding the
  // open until a writer comes; reads of a regular file ignore the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", path));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(error, absl::StrCat("fstat ", path));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  return std::unique_ptr<DatasetFile>(new DatasetFile(std::move(path), fd, info.st_size));
}

DatasetFile::DatasetFile(std::string path, int fd, std::int64_t size)
    : path_(std::move(path)), fd_(fd), size_(size) {}

DatasetFile::~DatasetFile() { ::close(fd_); }

absl::Status DatasetFile::ReadAt(std::int64_t offset, std::int64_t length, void* buffer) const {
  auto* out = static_cast<unsigned char*>(buffer);
  std::int64_t done = 0;
  while (done < length) {
    const ssize_t got = ::pread(fd_, out + done, static_cast<std::size_t>(length - done),
                                static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, absl::StrCat("pread ", path_, " at byte offset ", offset + done));
    }
    if (got == 0) {
      return absl::DataLossError(
          absl::StrCat("pread ", path_, ": the data ends at byte offset ", offset + done,
                       ", short of the ", length, " bytes at offset ", offset, " (the file had ",
                       size_, " bytes when it was opened; was it truncated since?)"));
    }
    done += got;
  }
  return absl::OkStatus();
}

std::uint32_t BigEndian32(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

}  // namespace wavepool::runtime::data_internal
