// Running helper programs (the CUDA MPS control daemon), behind an interface so that tests record
// the commands instead of running them.
#ifndef WAVEPOOL_AGENT_COMMAND_RUNNER_H_
#define WAVEPOOL_AGENT_COMMAND_RUNNER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::agent {

struct CommandResult {
  int exit_status = 0;  // the program's exit status; 128 + signal when it was killed
  std::string output;   // standard output and standard error, interleaved
};

// Implementations are safe for concurrent use.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Whether `program` can be run (an absolute path, or a name the runner knows).
  virtual bool Exists(const std::string& program) const = 0;
  // Runs argv[0] with `environment` ("NAME=value") added to the agent's own, feeding `input` to
  // its standard input, and waits for it. Unavailable when it cannot be started.
  virtual absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& environment,
                                            const std::string& input) = 0;
};
using CommandRunnerPtr = std::unique_ptr<CommandRunner>;

// Programs are never looked up through PATH (a tenant's image or a changed environment must not
// choose what the agent runs as root): names are resolved once, when the runner is made, to the
// first executable file in a fixed list of directories, and a program runs for at most
// `timeout`, after which its process group is killed.
struct SystemCommandRunnerOptions {
  std::vector<std::string> directories = {
      "/usr/local/nvidia/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"};
  std::vector<std::string> programs = {"nvidia-smi", "nvidia-cuda-mps-control"};
  std::chrono::milliseconds timeout{10000};
};

// posix_spawn of the resolved absolute path, with pipes. Run answers NotFound for a name that
// was not resolved at start, DeadlineExceeded (naming the program and the limit) for one that
// ran past the timeout. A program given by absolute path runs as is.
CommandRunnerPtr MakeSystemCommandRunner(SystemCommandRunnerOptions options = {});

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_COMMAND_RUNNER_H_
