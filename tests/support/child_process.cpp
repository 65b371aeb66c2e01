#include "tests/support/child_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <utility>

#include "tests/support/files.h"

namespace wavepool::testing {
namespace {

// The path of a stream that is a file; "" otherwise.
std::string FilePath(const ChildStream& stream) {
  return stream.kind == ChildStream::Kind::kFile ? stream.path : std::string();
}

// A wait status as a shell's exit code; kRunning for none.
int ExitCode(std::optional<int> status) {
  if (!status.has_value()) return ChildProcess::kRunning;
  if (WIFEXITED(*status)) return WEXITSTATUS(*status);
  if (WIFSIGNALED(*status)) return 128 + WTERMSIG(*status);
  return ChildProcess::kRunning;
}

}  // namespace

SpawnOptions OutputFiles(const std::string& dir, const std::string& name,
                         std::map<std::string, std::string> env) {
  SpawnOptions options;
  options.out = ChildStream::File(dir + "/" + name + ".out");
  options.err = ChildStream::File(dir + "/" + name + ".err");
  options.env = std::move(env);
  return options;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options)
    : out_path_(FilePath(options.out)), err_path_(FilePath(options.err)) {
  const absl::StatusOr<pid_t> pid = Spawn(argv, options);
  if (pid.ok()) {
    pid_ = *pid;
    return;
  }
  start_status_ = pid.status();
  exit_code_ = kNotStarted;
  if (!err_path_.empty()) (void)WriteFile(err_path_, std::string(start_status_.message()) + "\n");
}

ChildProcess::~ChildProcess() {
  if (!exit_code_.has_value()) KillChild(pid_);
}

int ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_code_.has_value()) return *exit_code_;
  const std::optional<int> status = WaitForExit(pid_, timeout);
  if (status.has_value()) exit_code_ = ExitCode(status);
  return ExitCode(status);
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (exit_code_.has_value()) return *exit_code_;
  const std::optional<int> status = StopChild(pid_, grace);
  if (status.has_value()) exit_code_ = ExitCode(status);
  return ExitCode(status);
}

void ChildProcess::Signal(int signal) {
  if (!exit_code_.has_value()) ::kill(pid_, signal);
}

std::string ChildProcess::out() const {
  return out_path_.empty() ? std::string() : ReadFileOrEmpty(out_path_);
}

std::string ChildProcess::err() const {
  return err_path_.empty() ? std::string() : ReadFileOrEmpty(err_path_);
}

}  // namespace wavepool::testing
