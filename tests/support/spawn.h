// Starting a program as a child process of a test whose process may have other threads running
// (an in-process agent or API server, a client's connection thread, LibTorch's pools).
//
//   SpawnOptions options;
//   options.out = ChildStream::File(dir.File("worker.out"));
//   options.env = {{"WAVEPOOL_LOG", "debug"}};
//   ASSERT_OK_AND_ASSIGN(const pid_t pid, Spawn({binary, "--flag"}, options));
//   const std::optional<int> status = WaitForExit(pid, std::chrono::seconds(30));
//
// Why not fork(): until it execs, the child of a fork() in a multi-threaded process may only
// call async-signal-safe functions. malloc, stdio or setenv there can wait forever for a lock
// that another thread of the parent held at the moment of the fork. Spawn builds argv and the
// environment before the child exists, and glibc's posix_spawn runs nothing in the child but the
// stream set-up and the exec (a clone with CLONE_VM | CLONE_VFORK).
//
// Thread-safe free functions; none keeps state. The caller owns the child it started: it reaps
// it (WaitForExit, waitpid) or leaves a zombie until the test process exits.
#ifndef WAVEPOOL_TESTS_SUPPORT_SPAWN_H_
#define WAVEPOOL_TESTS_SUPPORT_SPAWN_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
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

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_SPAWN_H_
