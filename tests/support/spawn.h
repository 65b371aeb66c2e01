// Starting a program as a child process of a test whose process may have other threads running
// (an in-process agent or API server, a client's connection thread, LibTorch's pools).
//
//   SpawnOptions options;
//   options.out = ChildStream::File(dir.File("worker.out"));
//   options.env = {{"WAVEPOOL_LOG", "debug"}};
//   ASSERT_OK_AND_ASSIGN(const pid_t pid, Spawn({binary, "--flag"}, options));
//   const std::optional<int> status = WaitForExit(pid, std::chrono::seconds(30));
//
// A program that runs to completion, both output streams captured, a hang failing the test:
//
//   const ProcessResult run = RunProcess({binary, "--help"}, options);
//   EXPECT_TRUE(run.exited && run.exit_status == 0) << run;
//
// Why not fork(): until it execs, the child of a fork() in a multi-threaded process may only
// call async-signal-safe functions. malloc, stdio or setenv there can wait forever for a lock
// that another thread of the parent held at the moment of the fork. Spawn builds argv and the
// environment before the child exists, and glibc's posix_spawn runs nothing in the child but the
// stream set-up and the exec (a clone with CLONE_VM | CLONE_VFORK).
//
// Thread-safe free functions; none keeps state. The caller owns the child it started: it reaps
// it (WaitForExit, StopChild, KillChild) or leaves a zombie until the test process exits.
#ifndef WAVEPOOL_TESTS_SUPPORT_SPAWN_H_
#define WAVEPOOL_TESTS_SUPPORT_SPAWN_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::testing {

// What one standard stream of the child is: the test process's own, a file the child opens, or
// a copy of one of the test process's descriptors (a pipe's end).
struct ChildStream {
  enum class Kind { kInherit, kFile, kDescriptor };

  static ChildStream Inherit() { return {}; }
  // stdin reads the file; stdout and stderr create or truncate it (mode 0666 before the umask,
  // as fopen's "w").
  static ChildStream File(std::string path) { return {Kind::kFile, std::move(path), -1}; }
  // The child gets `fd` (dup2) as this stream. It is not closed here.
  static ChildStream Descriptor(int fd) { return {Kind::kDescriptor, "", fd}; }

  Kind kind = Kind::kInherit;
  std::string path;  // kFile
  int fd = -1;       // kDescriptor
};

struct SpawnOptions {
  ChildStream in;
  ChildStream out;
  ChildStream err;
  // Set in the child's environment over the test process's own (`environ` when Spawn is called),
  // as setenv(key, value, 1) would.
  std::map<std::string, std::string> env;
  // false: the child's environment is `env` alone (a tool kept away from the user's HOME, PATH
  // and KUBECONFIG).
  bool inherit_environment = true;
  // The child's working directory; empty: the test process's. Relative file paths of the streams
  // are opened in it.
  std::string cwd;
};

// Starts argv[0] (a path: PATH is not searched) with `argv` and returns its pid. Descriptors of
// the test process without FD_CLOEXEC are inherited, as with fork and exec. InvalidArgument for
// an empty argv; otherwise posix_spawn's error as a Status ("posix_spawn <program>: <strerror>";
// NotFound for a program that does not exist), which includes a file of `options` that could not
// be opened.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// Waits up to `timeout` for the child `pid` to end and reaps it. Its wait status (WIFEXITED ...),
// or nullopt when it still runs at the deadline or is not a child of this process.
std::optional<int> WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

// Kills the child `pid` (SIGKILL) and reaps it. Its wait status, or nullopt when it is not a child
// of this process or has not ended within seconds of the SIGKILL (uninterruptible sleep).
std::optional<int> KillChild(pid_t pid);

// Asks the child `pid` to end (SIGTERM) and waits up to `grace` for it; one still running then is
// killed as by KillChild. Its wait status (WIFSIGNALED with SIGKILL when it had to be killed), or
// nullopt as for KillChild.
std::optional<int> StopChild(pid_t pid, std::chrono::milliseconds grace);

// How a child run by RunProcess ended and what it wrote.
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

// Runs `argv` as Spawn does with `options`, except that stdout and stderr are captured into the
// result (`options.out` and `options.err` are not used), and waits for it. A child still running
// after `limit` is killed with SIGKILL and reported as timed out, so that a hang fails the test
// instead of stalling it. The pipes are close-on-exec: a fork() without exec elsewhere in the test
// process while it runs would hold them open until `limit`.
ProcessResult RunProcess(const std::vector<std::string>& argv, SpawnOptions options,
                         std::chrono::milliseconds limit = std::chrono::seconds(120));

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_SPAWN_H_
