#include "wavepool/base/scoped_fd.h"

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace wavepool {

ScopedFd::~ScopedFd() {
  // A destructor has no one to report to: a caller that needs close's result calls Close().
  if (fd_ >= 0) ::close(fd_);
}

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.Release();
  }
  return *this;
}

int ScopedFd::Release() { return std::exchange(fd_, -1); }

int ScopedFd::Close() {
  if (fd_ < 0) return 0;
  const int result = ::close(std::exchange(fd_, -1));
  return result == 0 ? 0 : errno;
}

}  // namespace wavepool
