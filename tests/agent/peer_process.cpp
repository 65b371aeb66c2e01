#include "tests/agent/peer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/support/child_process.h"

namespace wavepool::agent {

using ::wavepool::testing::ChildProcess;
using ::wavepool::testing::ChildStream;
using ::wavepool::testing::SpawnOptions;

absl::StatusOr<std::unique_ptr<PeerProcess>> PeerProcess::Start(
    const std::vector<std::string>& args) {
  // O_CLOEXEC: no other child of the test process keeps an end open (which would hide the EOF
  // each side waits for); posix_spawn's dup2 gives the peer its own copies.
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe2 (peer stdin)");
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int error = errno;
    close(in[0]);
    close(in[1]);
    return absl::ErrnoToStatus(error, "pipe2 (peer stdout)");
  }
  std::vector<std::string> argv = {WAVEPOOL_AGENT_TEST_PEER};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions options;
  options.in = ChildStream::Descriptor(in[0]);
  options.out = ChildStream::Descriptor(out[1]);
  auto process = std::make_unique<ChildProcess>(argv, options);
  close(in[0]);
  close(out[1]);
  if (!process->start_status().ok()) {
    close(in[1]);
    close(out[0]);
    return process->start_status();
  }
  return std::unique_ptr<PeerProcess>(new PeerProcess(std::move(process), in[1], out[0]));
}

PeerProcess::~PeerProcess() {
  CloseStdin();
  process_.reset();  // killed and reaped while its stdout is still open to it
  close(stdout_fd_);
}

absl::StatusOr<std::string> PeerProcess::ReadLine(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const std::size_t end = pending_.find('\n'); end != std::string::npos) {
      std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(absl::StrCat("agent_test_peer ", pid(),
                                                      ": no line within ", timeout.count(),
                                                      " ms; printed so far: \"", pending_, "\""));
    }
    pollfd readable{stdout_fd_, POLLIN, 0};
    const int ready = poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return absl::ErrnoToStatus(errno, "poll agent_test_peer");
    if (ready <= 0) continue;
    char buffer[256];
    const ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "read agent_test_peer's stdout");
    if (n == 0) {
      return absl::UnavailableError(
          absl::StrCat("agent_test_peer ", pid(), ": stdout closed; printed: \"", pending_, "\""));
    }
    pending_.append(buffer, static_cast<std::size_t>(n));
  }
}

void PeerProcess::CloseStdin() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
}

std::vector<std::string> WorkerFlags(const AgentClient::Options& options) {
  const RegisterRequest& r = options.registration;
  return {"worker",
          "--socket",
          options.socket_path,
          "--namespace",
          r.namespace_name,
          "--job",
          r.job,
          "--pod",
          r.pod,
          "--role",
          r.role == Role::kForeground ? "foreground" : "background",
          "--gpu",
          absl::StrCat(r.gpu_index),
          "--max-foreground-slowdown",
          absl::StrCat(r.max_foreground_slowdown),
          "--batch-size",
          absl::StrCat(r.batch_size),
          "--flush-interval-ms",
          absl::StrCat(options.flush_interval.count())};
}

}  // namespace wavepool::agent
