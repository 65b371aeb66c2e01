// A second process for the agent tests that need one: a worker killed without a goodbye, a peer
// holding connections. It runs agent_test_peer (agent_test_peer_main.cpp), started with
// posix_spawn, because the test process has the in-process agent's threads running: a forked
// copy of the test doing the same work (malloc, an AgentClient) could wait forever for a lock that
// one of those threads held at the fork.
//
//   ASSERT_OK_AND_ASSIGN(auto doomed, PeerProcess::Start(WorkerFlags(options)));
//   ASSERT_THAT(doomed->ReadLine(kCatchUp), IsOkAndHolds("y"));
//   doomed->Signal(SIGKILL);
//   EXPECT_EQ(doomed->Wait(kCatchUp), 128 + SIGKILL);
//
// Thread-compatible. A PeerProcess owns its process (a ChildProcess, tests/support): the
// destructor closes its stdin, kills it (SIGKILL) and reaps it if it has not been reaped. Every
// wait is bounded.
#ifndef WAVEPOOL_TESTS_AGENT_PEER_PROCESS_H_
#define WAVEPOOL_TESTS_AGENT_PEER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/support/child_process.h"
#include "wavepool/agent/client/agent_client.h"

namespace wavepool::agent {

class PeerProcess {
 public:
  // Starts `agent_test_peer <args...>` with its stdin and stdout on pipes to this process (stderr
  // is this process's). Internal when a pipe cannot be made; Spawn's errors
  // (tests/support/spawn.h).
  static absl::StatusOr<std::unique_ptr<PeerProcess>> Start(const std::vector<std::string>& args);

  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // The next line the peer printed, without its '\n'. DeadlineExceeded when no whole line came
  // within `timeout`; Unavailable when its stdout closed first.
  absl::StatusOr<std::string> ReadLine(std::chrono::milliseconds timeout);

  // Closes the peer's stdin: its cue to let go of what it holds and exit 0.
  void CloseStdin();

  // Sends `signal` to the peer; nothing once it has been reaped.
  void Signal(int signal) { process_->Signal(signal); }

  // Reaps the peer once it ends within `timeout`: its exit code (128 + signal when a signal ended
  // it), the same again on later calls; ChildProcess::kRunning when it still runs at the deadline.
  int Wait(std::chrono::milliseconds timeout) { return process_->Wait(timeout); }

  pid_t pid() const { return process_->pid(); }

 private:
  PeerProcess(std::unique_ptr<::wavepool::testing::ChildProcess> process, int stdin_fd,
              int stdout_fd)
      : process_(std::move(process)), stdin_fd_(stdin_fd), stdout_fd_(stdout_fd) {}

  std::unique_ptr<::wavepool::testing::ChildProcess> process_;
  int stdin_fd_;         // our end of its stdin; -1 once closed
  int stdout_fd_;        // our end of its stdout
  std::string pending_;  // what it printed after the last line returned
};

// The flags of `agent_test_peer worker` that register as `options` does (socket path,
// registration fields, flush interval).
std::vector<std::string> WorkerFlags(const AgentClient::Options& options);

}  // namespace wavepool::agent

#endif  // WAVEPOOL_TESTS_AGENT_PEER_PROCESS_H_
