#include "tests/support/spawn.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>

#include "absl/status/status.h"

extern char** environ;

namespace wavepool::testing {
namespace {

// The test process's environment with `overrides` set over it, as "KEY=value" strings.
std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string key(text.substr(0, text.find('=')));
    if (overrides.count(key) == 0) entries.emplace_back(text);
  }
  for (const auto& [key, value] : overrides) entries.push_back(key + "=" + value);
  return entries;
}

// argv/envp for posix_spawn: pointers into `strings`, null-terminated.
std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

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

}  // namespace

absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("Spawn: argv is empty");
  std::vector<std::string> arg_strings = argv;
  std::vector<std::string> env_strings = ChildEnvironment(options.env);
  const std::vector<char*> args = Pointers(arg_strings);
  const std::vector<char*> envp = Pointers(env_strings);

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

}  // namespace wavepool::testing
