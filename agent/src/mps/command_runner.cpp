#include "wavepool/agent/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

extern char** environ;

namespace wavepool::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Owns the two pipes of one run.
struct Pipes {
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  ~Pipes() {
    for (int fd : {in[0], in[1], out[0], out[1]}) {
      if (fd >= 0) close(fd);
    }
  }
  static void Close(int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

class SystemCommandRunner final : public CommandRunner {
 public:
  explicit SystemCommandRunner(SystemCommandRunnerOptions options) : options_(std::move(options)) {
    for (const std::string& program : options_.programs) {
      for (const std::string& directory : options_.directories) {
        const std::string candidate = absl::StrCat(directory, "/", program);
        if (IsExecutableFile(candidate)) {
          resolved_[program] = candidate;
          break;
        }
      }
    }
  }

  bool Exists(const std::string& program) const override { return Resolve(program).ok(); }

  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& environment,
                                    const std::string& input) override {
    if (argv.empty()) return absl::InvalidArgumentError("run: no program");
    WAVEPOOL_ASSIGN_OR_RETURN(std::string path, Resolve(argv[0]));
    Pipes pipes;
    if (pipe2(pipes.in, O_CLOEXEC) != 0 || pipe2(pipes.out, O_CLOEXEC) != 0) return Errno("pipe");
    WAVEPOOL_ASSIGN_OR_RETURN(pid_t pid, Spawn(path, argv, environment, pipes));
    Pipes::Close(pipes.in[0]);
    Pipes::Close(pipes.out[1]);
    // The inputs here are a few bytes: they fit the pipe, so writing first cannot block.
    if (!input.empty() && write(pipes.in[1], input.data(), input.size()) < 0) {
      // A program that exits without reading its input is not an error of ours.
    }
    Pipes::Close(pipes.in[1]);
    fcntl(pipes.out[0], F_SETFL, fcntl(pipes.out[0], F_GETFL) | O_NONBLOCK);
    return Wait(argv[0], pid, pipes.out[0]);
  }

 private:
  absl::StatusOr<std::string> Resolve(const std::string& program) const {
    if (!program.empty() && program[0] == '/') {
      if (IsExecutableFile(program)) return program;
      return absl::NotFoundError(absl::StrCat(program, ": not an executable file"));
    }
    auto it = resolved_.find(program);
    if (it != resolved_.end()) return it->second;
    return absl::NotFoundError(absl::StrCat(program, ": not found in ",
                                            absl::StrJoin(options_.directories, ":"),
                                            " when the agent started"));
  }

  static absl::StatusOr<pid_t> Spawn(const std::string& path, const std::vector<std::string>& argv,
                                     const std::vector<std::string>& environment,
                                     const Pipes& pipes) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipes.in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, pipes.out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipes.out[1], 2);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    // Its own process group, so that a timeout kills whatever it started in the foreground.
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    std::vector<std::string> env_strings(environment);
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    std::vector<char*> args, env;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
    args.push_back(nullptr);
    env.push_back(nullptr);
    pid_t pid = 0;
    const int spawned =
        posix_spawn(&pid, path.c_str(), &actions, &attributes, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawned != 0) {
      return ErrnoError(absl::StatusCode::kUnavailable, spawned, absl::StrCat("spawn ", path));
    }
    return pid;
  }

  // Reads the output until the program exits (a daemon it forked may keep the pipe open: its
  // exit, not EOF, ends the wait) or the timeout kills it.
  absl::StatusOr<CommandResult> Wait(const std::string& name, pid_t pid, int out) const {
    const auto deadline = SteadyClock::now() + options_.timeout;
    CommandResult result;
    int status = 0;
    bool exited = false, eof = false;
    while (!exited) {
      const pid_t waited = waitpid(pid, &status, WNOHANG);
      exited = waited == pid || (waited < 0 && errno != EINTR);
      if (!eof) eof = !Drain(out, &result.output);
      if (exited) break;
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
      if (left <= 0) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        return absl::DeadlineExceededError(absl::StrCat(
            name, ": killed after ", options_.timeout.count(), " ms without finishing"));
      }
      // Woken by output, else every 10 ms to see whether the program exited.
      pollfd p{out, POLLIN, 0};
      (void)poll(&p, eof ? 0 : 1, static_cast<int>(std::min<std::int64_t>(left, 10)));
    }
    if (!eof) Drain(out, &result.output);
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
  }

  // Appends what `fd` holds now; false at EOF or an error.
  static bool Drain(int fd, std::string* output) {
    char buffer[4096];
    for (;;) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n > 0) {
        // Bounded: a program that floods its output is not one the agent needs the end of.
        if (output->size() < (1 << 20)) output->append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }

  static absl::Status Errno(const char* call) {
    return ErrnoError(absl::StatusCode::kUnavailable, errno, call);
  }

  const SystemCommandRunnerOptions options_;
  std::map<std::string, std::string> resolved_;  // constant after construction
};

}  // namespace

CommandRunnerPtr MakeSystemCommandRunner(SystemCommandRunnerOptions options) {
  return std::make_unique<SystemCommandRunner>(std::move(options));
}

}  // namespace wavepool::agent
