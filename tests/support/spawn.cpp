#include "tests/support/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/status/status.h"
#include "wavepool/base/exec_args.h"

namespace wavepool::testing {
namespace {

// How long a child killed with SIGKILL may take to be reaped before KillChild gives up on it.
constexpr std::chrono::seconds kReapAfterKill(10);

// Adds the file action that makes `stream` the child's descriptor `target`; 0 or an errno.
int AddStream(posix_spawn_file_actions_t* actions, const ChildStream& stream, int target) {
  switch (stream.kind) {
    case ChildStream::Kind::kInherit:
      return 0;
    case ChildStream::Kind::kFile:
      return target == STDIN_FILENO
                 ? posix_spawn_file_actions_addopen(actions, target, stream.path.c_str(), O_RDONLY,
                                                    0)
                 : posix_spawn_file_actions_addopen(actions, target, stream.path.c_str(),
                                                    O_WRONLY | O_CREAT | O_TRUNC, 0666);
    case ChildStream::Kind::kDescriptor:
      return posix_spawn_file_actions_adddup2(actions, stream.fd, target);
  }
  return EINVAL;
}

// A pipe whose ends close themselves; both are close-on-exec.
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

// The time left until `deadline`, at least zero.
std::chrono::milliseconds Left(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

// Reads both pipes until both reach EOF or `deadline` passes; false on timeout.
bool Drain(Pipe& out_pipe, Pipe& err_pipe, std::chrono::steady_clock::time_point deadline,
           ProcessResult* result) {
  std::array<pollfd, 2> fds{{{out_pipe.read_end(), POLLIN, 0}, {err_pipe.read_end(), POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&result->out, &result->err};
  int open = 2;
  while (open > 0) {
    const std::chrono::milliseconds left = Left(deadline);
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

absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("Spawn: argv is empty");
  std::vector<std::string> arg_strings = argv;
  std::vector<std::string> env_strings = ChildEnvironment(options.env, options.inherit_environment);
  const std::vector<char*> args = ExecPointers(arg_strings);
  const std::vector<char*> envp = ExecPointers(env_strings);

  posix_spawn_file_actions_t actions;
  if (const int error = posix_spawn_file_actions_init(&actions); error != 0) {
    return absl::ErrnoToStatus(error, "posix_spawn_file_actions_init");
  }
  int error =
      options.cwd.empty() ? 0 : posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  if (error == 0) error = AddStream(&actions, options.in, STDIN_FILENO);
  if (error == 0) error = AddStream(&actions, options.out, STDOUT_FILENO);
  if (error == 0) error = AddStream(&actions, options.err, STDERR_FILENO);
  pid_t pid = -1;
  if (error == 0) {
    error = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
  }
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return absl::ErrnoToStatus(error, "posix_spawn " + argv[0]);
  return pid;
}

std::optional<int> WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  if (pid <= 0) return std::nullopt;  // waitpid would take any child's status
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<int> KillChild(pid_t pid) {
  if (pid <= 0) return std::nullopt;  // kill would signal a process group
  ::kill(pid, SIGKILL);
  return WaitForExit(pid, kReapAfterKill);
}

std::optional<int> StopChild(pid_t pid, std::chrono::milliseconds grace) {
  if (pid <= 0) return std::nullopt;
  ::kill(pid, SIGTERM);
  if (std::optional<int> status = WaitForExit(pid, grace); status.has_value()) return status;
  return KillChild(pid);
}

std::ostream& operator<<(std::ostream& os, const ProcessResult& r) {
  if (!r.started) return os << "not started: " << r.error;
  if (r.timed_out) os << "timed out; ";
  if (r.exited) os << "exit status " << r.exit_status;
  if (r.signal != 0) os << "killed by signal " << r.signal << " (" << ::strsignal(r.signal) << ")";
  return os << "\n--- stdout ---\n" << r.out << "--- stderr ---\n" << r.err;
}

ProcessResult RunProcess(const std::vector<std::string>& argv, SpawnOptions options,
                         std::chrono::milliseconds limit) {
  ProcessResult result;
  Pipe out_pipe, err_pipe;
  if (!out_pipe.ok() || !err_pipe.ok()) {
    result.error = std::string("pipe2: ") + std::strerror(errno);
    return result;
  }
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

  // A child that closed both streams may still run: the deadline bounds its exit too.
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::optional<int> status;
  if (Drain(out_pipe, err_pipe, deadline, &result)) status = WaitForExit(pid, Left(deadline));
  if (!status.has_value()) {
    result.timed_out = true;
    status = KillChild(pid);
  }
  if (status.has_value() && WIFEXITED(*status) && !result.timed_out) {
    result.exited = true;
    result.exit_status = WEXITSTATUS(*status);
  } else if (status.has_value() && WIFSIGNALED(*status)) {
    result.signal = WTERMSIG(*status);
  }
  return result;
}

}  // namespace wavepool::testing
