#include "tests/cli/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/status/statusor.h"
#include "tests/support/spawn.h"

namespace wavepool::cli::testing {

using ::wavepool::testing::ChildStream;
using ::wavepool::testing::Spawn;
using ::wavepool::testing::SpawnOptions;

namespace {

// A pipe whose ends close themselves.
class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_.data(), O_CLOEXEC) != 0) fds_ = {-1, -1};
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  bool ok() const { return fds_[0] >= 0; }
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void CloseRead() { Close(0); }
  void CloseWrite() { Close(1); }

 private:
  void Close(int i) {
    if (fds_[i] >= 0) ::close(fds_[i]);
    fds_[i] = -1;
  }
  std::array<int, 2> fds_{-1, -1};
};

// Reads both pipes until both reach EOF or `deadline` passes; false on timeout.
bool Drain(Pipe& out_pipe, Pipe& err_pipe, std::chrono::steady_clock::time_point deadline,
           ProcessResult* result) {
  std::array<pollfd, 2> fds{{{out_pipe.read_end(), POLLIN, 0}, {err_pipe.read_end(), POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&result->out, &result->err};
  int open = 2;
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;  // timed out, or poll failed: stop the child either way
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // EOF or a read error: this stream is done
        --open;
      }
    }
  }
  return true;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const ProcessResult& r) {
  if (!r.started) return os << "not started: " << r.error;
  if (r.timed_out) os << "timed out; ";
  if (r.exited) os << "exit status " << r.exit_status;
  if (r.signal != 0) os << "killed by signal " << r.signal << " (" << ::strsignal(r.signal) << ")";
  return os << "\n--- stdout ---\n" << r.out << "--- stderr ---\n" << r.err;
}

ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args,
                         std::chrono::seconds limit) {
  ProcessResult result;
  Pipe out_pipe, err_pipe;
  if (!out_pipe.ok() || !err_pipe.ok()) {
    result.error = std::string("pipe2: ") + std::strerror(errno);
    return result;
  }
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions options;
  options.in = ChildStream::File("/dev/null");
  options.out = ChildStream::Descriptor(out_pipe.write_end());
  options.err = ChildStream::Descriptor(err_pipe.write_end());
  const absl::StatusOr<pid_t> spawned = Spawn(argv, options);
  out_pipe.CloseWrite();
  err_pipe.CloseWrite();
  if (!spawned.ok()) {
    result.error = std::string(spawned.status().message());
    return result;
  }
  const pid_t pid = *spawned;
  result.started = true;

  const auto deadline = std::chrono::steady_clock::now() + limit;
  if (!Drain(out_pipe, err_pipe, deadline, &result)) {
    result.timed_out = true;
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && !result.timed_out) {
    result.exited = true;
    result.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace wavepool::cli::testing
