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
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/files.h"

namespace wavepool::runtime::testing {

// A child process whose stdout and stderr go to <dir>/<name>.out and .err.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               const std::string& dir, const std::string& name)
      : out_(dir + "/" + name + ".out"), err_(dir + "/" + name + ".err") {
    pid_ = fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(out_.c_str(), "w", stdout);
      FILE* err = std::freopen(err_.c_str(), "w", stderr);
      if (out == nullptr || err == nullptr) _exit(126);
      for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The exit status (128 + signal when killed), or -1 when it is still running at the deadline.
  int Wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exited_) {
      int status = 0;
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return code_;
  }
  void Signal(int signal) { kill(pid_, signal); }
  // What the child wrote so far; "" before it wrote anything.
  std::string out() const { return ::wavepool::testing::ReadFileOrEmpty(out_); }
  std::string err() const { return ::wavepool::testing::ReadFileOrEmpty(err_); }
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
