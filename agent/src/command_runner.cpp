#include "wavepool/agent/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace wavepool::agent {
namespace {

class SystemCommandRunner final : public CommandRunner {
 public:
  bool Exists(const std::string& program) const override {
    if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
    const char* path = std::getenv("PATH");
    if (path == nullptr) return false;
    for (absl::string_view dir : absl::StrSplit(path, ':')) {
      const std::string candidate = absl::StrCat(dir, "/", program);
      if (access(candidate.c_str(), X_OK) == 0) return true;
    }
    return false;
  }

  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& environment,
                                    const std::string& input) override {
    if (argv.empty()) return absl::InvalidArgumentError("run: no program");
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return Errno("pipe");
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]), close(in[1]);
      return Errno("pipe");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    std::vector<std::string> env_strings(environment);
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    std::vector<char*> args, env;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
    args.push_back(nullptr);
    env.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (spawned != 0) {
      close(in[1]);
      close(out[0]);
      return absl::UnavailableError(
          absl::StrCat("spawn ", argv[0], ": ", std::strerror(spawned)));
    }
    // The inputs here are a few bytes: they fit the pipe, so writing first cannot deadlock.
    if (!input.empty() && write(in[1], input.data(), input.size()) < 0) {
      // A program that exits without reading its input is not an error of ours.
    }
    close(in[1]);
    CommandResult result;
    char buffer[4096];
    ssize_t n;
    while ((n = read(out[0], buffer, sizeof(buffer))) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      result.output.append(buffer, static_cast<size_t>(n));
    }
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
  }

 private:
  static absl::Status Errno(const char* call) {
    return absl::UnavailableError(absl::StrCat(call, ": ", std::strerror(errno)));
  }
};

}  // namespace

CommandRunnerPtr MakeSystemCommandRunner() { return std::make_unique<SystemCommandRunner>(); }

}  // namespace wavepool::agent
