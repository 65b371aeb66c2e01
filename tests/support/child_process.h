// A long-running program as a child process that a test owns: started with Spawn (spawn.h), waited
// for with a bound, asked to stop, killed and reaped when the test is done with it.
//
//   ChildProcess worker({binary, "--flag"}, OutputFiles(dir, "worker", {{"WAVEPOOL_LOG", "1"}}));
//   ASSERT_OK(worker.start_status());
//   worker.Signal(SIGTERM);
//   EXPECT_EQ(worker.Wait(std::chrono::seconds(60)), 143) << worker.err();
//
// Exit codes as a shell reports them: the status the program exited with, 128 + the signal that
// killed it, 127 for a program that could not be started.
#ifndef WAVEPOOL_TESTS_SUPPORT_CHILD_PROCESS_H_
#define WAVEPOOL_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/support/spawn.h"

namespace wavepool::testing {

// Options whose stdout and stderr go to <dir>/<name>.out and <dir>/<name>.err, with `env` set over
// the test process's environment.
SpawnOptions OutputFiles(const std::string& dir, const std::string& name,
                         std::map<std::string, std::string> env = {});

// Thread-compatible. A ChildProcess owns its process: the destructor kills it (SIGKILL) and reaps
// it, waiting 10 s at most, unless it has already been reaped. Once reaped, its pid is never
// signalled again (the number may belong to another process by then).
// REQUIRES: nothing else in the test process waits for the child's pid.
class ChildProcess {
 public:
  // What Wait and Stop return for a child that still runs (or could not be reaped).
  static constexpr int kRunning = -1;
  // The exit code of a program that could not be started, as from a shell.
  static constexpr int kNotStarted = 127;

  // Starts argv[0] as Spawn does. A program that cannot be started counts as one that exited
  // kNotStarted at once; start_status() says why, and so does the stderr file when `options.err`
  // is one.
  ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // OK, or Spawn's error when the program could not be started.
  const absl::Status& start_status() const { return start_status_; }

  // Waits up to `timeout` for the child to end and reaps it. Its exit code (128 + signal when a
  // signal ended it), or kRunning when it still runs at the deadline. Once it has ended, every
  // call returns the same code at once.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(120));

  // Whether it still runs (Wait without waiting).
  bool Running() { return Wait(std::chrono::milliseconds(0)) == kRunning; }

  // SIGTERM, then SIGKILL when it has not ended within `grace` (StopChild); reaps it. Its exit
  // code (137 when it had to be killed), or kRunning when it could not be reaped.
  int Stop(std::chrono::milliseconds grace);

  // Sends `signal` unless the child has been reaped or was never started.
  void Signal(int signal);

  // What it wrote so far to stdout and stderr: the files of its options, "" while they do not
  // exist, and "" for a stream that is not a file.
  std::string out() const;
  std::string err() const;

  // -1 when it could not be started.
  pid_t pid() const { return pid_; }

 private:
  // Constant after construction.
  std::string out_path_, err_path_;  // "" for a stream that is not a file
  absl::Status start_status_;
  pid_t pid_ = -1;

  std::optional<int> exit_code_;  // set once reaped (or when it could not be started)
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CHILD_PROCESS_H_
