// Runs a program the way a user's shell would and captures what it printed, for tests of the
// `wavepool` binary.
#ifndef WAVEPOOL_TESTS_CLI_SUBPROCESS_H_
#define WAVEPOOL_TESTS_CLI_SUBPROCESS_H_

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace wavepool::cli::testing {

// How a child process ended and what it wrote.
struct ProcessResult {
  bool started = false;    // false: posix_spawn or a pipe failed (`error` says why)
  bool exited = false;     // exited normally; false when a signal killed it or it timed out
  int exit_status = -1;    // WEXITSTATUS when `exited`
  int signal = 0;          // the signal that killed it, if one did
  bool timed_out = false;  // killed by RunProcess after `limit`
  std::string out;         // everything it wrote to stdout
  std::string err;         // everything it wrote to stderr
  std::string error;       // why it could not be started
};

// Describes a result for a failed assertion: status, signal and both streams.
std::ostream& operator<<(std::ostream& os, const ProcessResult& result);

// Runs `program` with `args` (argv[1..]), stdin from /dev/null, both output streams captured.
// A child still running after `limit` is killed with SIGKILL and reported as timed out, so that
// a hang fails the test instead of stalling it. Not thread-safe with other code that forks.
ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args,
                         std::chrono::seconds limit = std::chrono::seconds(120));

}  // namespace wavepool::cli::testing

#endif  // WAVEPOOL_TESTS_CLI_SUBPROCESS_H_
