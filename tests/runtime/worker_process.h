// Running wavepool-worker (and other programs) as child processes in tests: output to files the
// test reads, an exit status, signals, bounded waits.
#ifndef WAVEPOOL_TESTS_RUNTIME_WORKER_PROCESS_H_
#define WAVEPOOL_TESTS_RUNTIME_WORKER_PROCESS_H_

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/support/files.h"
#include "tests/support/spawn.h"

namespace wavepool::runtime::testing {

// A child process whose stdout and stderr go to <dir>/<name>.out and .err, with `env` set over the
// test process's environment. Started with posix_spawn (tests/support/spawn.h), which is safe
// while the test process has other threads (LibTorch's pools, a rendezvous store).
//
// Thread-compatible. A ChildProcess owns its process: the destructor kills (SIGKILL) and reaps it
// if it has not been seen to exit.
class ChildProcess {
 public:
  // A program that cannot be started exits 127 at once, as from a shell, with the reason in err().
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               const std::string& dir, const std::string& name)
      : out_(dir + "/" + name + ".out"), err_(dir + "/" + name + ".err") {
    ::wavepool::testing::SpawnOptions options;
    options.out = ::wavepool::testing::ChildStream::File(out_);
    options.err = ::wavepool::testing::ChildStream::File(err_);
    options.env = env;
    const absl::StatusOr<pid_t> pid = ::wavepool::testing::Spawn(argv, options);
    if (pid.ok()) {
      pid_ = *pid;
      return;
    }
    (void)::wavepool::testing::WriteFile(err_, std::string(pid.status().message()) + "\n");
    exited_ = true;
    code_ = 127;
  }
  ~ChildProcess() {
    if (pid_ > 0 && !exited_) ::wavepool::testing::KillChild(pid_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The exit status (128 + signal when killed), or -1 when it is still running at the deadline.
  int Wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    if (exited_) return code_;
    const std::optional<int> status = ::wavepool::testing::WaitForExit(pid_, timeout);
    if (!status.has_value()) return -1;
    exited_ = true;
    code_ = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
    return code_;
  }
  void Signal(int signal) {
    if (pid_ > 0 && !exited_) kill(pid_, signal);
  }
  // What the child wrote so far; "" before it wrote anything.
  std::string out() const { return ::wavepool::testing::ReadFileOrEmpty(out_); }
  std::string err() const { return ::wavepool::testing::ReadFileOrEmpty(err_); }
  // -1 when it could not be started.
  pid_t pid() const { return pid_; }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// A TCP port nothing listens on now (bound and released: another process could take it in between,
// which on a test machine does not happen in practice).
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace wavepool::runtime::testing

#endif  // WAVEPOOL_TESTS_RUNTIME_WORKER_PROCESS_H_
