#include "server/unix_listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "host_dir/no_follow_fs.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent::internal {
namespace {

absl::Status SyscallError(const std::string& path, const char* syscall, int err) {
  return ErrnoError(err, absl::StrCat("agent socket ", path, ": ", syscall));
}

absl::StatusOr<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("agent socket path \"", path, "\": must be 1..",
                                                   sizeof(address.sun_path) - 1, " bytes, got ",
                                                   path.size()));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// Removes `path` if it is a socket nobody listens on (an agent that died without cleaning up).
absl::Status RemoveStale(const std::string& path, const sockaddr_un& address) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? absl::OkStatus() : SyscallError(path, "lstat", errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("agent socket ", path, ": exists and is not a socket; not replacing it"));
  }
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return SyscallError(path, "socket", errno);
  const int connected = connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int err = errno;
  close(probe);
  // EAGAIN: a listener whose backlog is full is still a listener.
  if (connected == 0 || err == EAGAIN) {
    return absl::FailedPreconditionError(
        absl::StrCat("agent socket ", path, ": another process is listening on it"));
  }
  if (err != ECONNREFUSED) return SyscallError(path, "connect (stale check)", err);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return SyscallError(path, "unlink", errno);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<UnixListener> UnixListener::Listen(const std::string& path, mode_t mode,
                                                  gid_t group) {
  WAVEPOOL_ASSIGN_OR_RETURN(sockaddr_un address, AddressOf(path));
  WAVEPOOL_RETURN_IF_ERROR(RemoveStale(path, address));
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return SyscallError(path, "socket", errno);
  // bind creates the file with the socket inode's mode less the umask: setting it first means the
  // file is never more permissive than `mode` before the chmod below.
  (void)fchmod(fd, mode);
  const auto fail = [&](const char* syscall) {
    const int err = errno;
    close(fd);
    return SyscallError(path, syscall, err);
  };
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return fail("bind");
  }
  UnixListener listener(fd, path, 0, 0);  // from here on, the destructor cleans up
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return SyscallError(path, "lstat", err);
  }
  listener.device_ = st.st_dev;
  listener.inode_ = st.st_ino;
  // Never through a link: the directory is writable by pods (no_follow_fs.h).
  if (absl::Status changed = ChmodChownNoFollow(path, mode, group, FileId{st.st_dev, st.st_ino});
      !changed.ok()) {
    return absl::Status(changed.code(), absl::StrCat("agent socket: ", changed.message()));
  }
  if (listen(fd, SOMAXCONN) != 0) return SyscallError(path, "listen", errno);
  return listener;
}

UnixListener::UnixListener(UnixListener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      device_(other.device_),
      inode_(other.inode_) {}

UnixListener::~UnixListener() {
  if (fd_ < 0) return;
  close(fd_);
  // Another agent may have replaced the file since (after deciding ours was stale): keep it.
  struct stat st;
  if (lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) {
    unlink(path_.c_str());
  }
}

}  // namespace wavepool::agent::internal
