// The agent's listening unix socket file: created safely next to a possibly stale one, given
// the configured mode and group, and removed only while it is still ours. Not thread-safe.
#ifndef WAVEPOOL_AGENT_SRC_SERVER_UNIX_LISTENER_H_
#define WAVEPOOL_AGENT_SRC_SERVER_UNIX_LISTENER_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace wavepool::agent::internal {

class UnixListener {
 public:
  // Binds `path` and listens. A leftover socket file that refuses connections is unlinked first;
  // FailedPrecondition when something listens on it or it is not a socket. The file gets `mode`
  // (never more permissive in between) and, unless group is -1, `group`.
  static absl::StatusOr<UnixListener> Listen(const std::string& path, mode_t mode, gid_t group);

  UnixListener(UnixListener&& other) noexcept;
  UnixListener& operator=(UnixListener&&) = delete;
  UnixListener(const UnixListener&) = delete;
  // Closes the socket and unlinks the file if it is still the one this listener created.
  ~UnixListener();

  int fd() const { return fd_; }

 private:
  UnixListener(int fd, std::string path, dev_t device, ino_t inode)
      : fd_(fd), path_(std::move(path)), device_(device), inode_(inode) {}

  int fd_;
  std::string path_;
  dev_t device_;
  ino_t inode_;
};

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_SRC_SERVER_UNIX_LISTENER_H_
