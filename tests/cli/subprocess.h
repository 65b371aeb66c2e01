// Runs a program the way a user's shell would and captures what it printed, for tests of the
// `wavepool` binary: RunProcess of tests/support/spawn.h with stdin from /dev/null.
#ifndef WAVEPOOL_TESTS_CLI_SUBPROCESS_H_
#define WAVEPOOL_TESTS_CLI_SUBPROCESS_H_

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/spawn.h"

namespace wavepool::cli::testing {

using ::wavepool::testing::ProcessResult;

// Runs `program` with `args` (argv[1..]), stdin from /dev/null, both output streams captured,
// the test process's environment; killed and reported as timed out after `limit`.
inline ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args,
                                std::chrono::seconds limit = std::chrono::seconds(120)) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  ::wavepool::testing::SpawnOptions options;
  options.in = ::wavepool::testing::ChildStream::File("/dev/null");
  return ::wavepool::testing::RunProcess(argv, options, limit);
}

}  // namespace wavepool::cli::testing

#endif  // WAVEPOOL_TESTS_CLI_SUBPROCESS_H_
