// Running helper programs (the CUDA MPS control daemon), behind an interface so that tests record
// the commands instead of running them.
#ifndef WAVEPOOL_AGENT_COMMAND_RUNNER_H_
#define WAVEPOOL_AGENT_COMMAND_RUNNER_H_

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
  // Whether `program` can be found (a path, or a name on PATH).
  virtual bool Exists(const std::string& program) const = 0;
  // Runs argv[0] with `environment` ("NAME=value") added to the agent's own, feeding `input` to
  // its standard input, and waits for it. Unavailable when it cannot be started.
  virtual absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& environment,
                                            const std::string& input) = 0;
};
using CommandRunnerPtr = std::unique_ptr<CommandRunner>;

// posix_spawnp with pipes.
CommandRunnerPtr MakeSystemCommandRunner();

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_COMMAND_RUNNER_H_
