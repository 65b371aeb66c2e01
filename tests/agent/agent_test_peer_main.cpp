// agent_test_peer: the other process in the agent tests that need one, started with posix_spawn
// (tests/agent/peer_process.h) rather than forked from a test process whose agent threads run.
// Each subcommand prints one line on stdout and then holds what it has until its stdin closes
// (then exits 0) or it is killed.
//
//   agent_test_peer worker --socket S --namespace N --job J --pod P --role background --gpu 0
//                          [--max-foreground-slowdown 1.1] [--batch-size 64]
//                          [--flush-interval-ms 5]
//     Registers through an AgentClient and takes one launch credit: prints "y", or "n <why>".
//   agent_test_peer hold --socket S --connections N
//     Opens N connections without registering, waits 3 s for the agent to answer those it
//     refuses (an Error frame, then EOF) and prints how many are still open.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "wavepool/agent/client/agent_client.h"

namespace wavepool::agent {
namespace {

// Refused connections turn readable at once; admitted ones stay quiet until the agent's register
// timeout (5 s), well beyond this.
constexpr std::chrono::seconds kSettle(3);

void PrintLine(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

// Returns when stdin reaches EOF (the test closed it, or the test process died).
void HoldUntilStdinCloses() {
  char buffer[64];
  while (read(STDIN_FILENO, buffer, sizeof buffer) > 0) {
  }
}

int RunWorker(AgentClient::Options options) {
  options.log = [](std::string_view) {};
  absl::StatusOr<std::unique_ptr<AgentClient>> client = AgentClient::Connect(options);
  if (!client.ok()) {
    PrintLine("n " + client.status().ToString());
    HoldUntilStdinCloses();
    return 0;
  }
  PrintLine((*client)->gate()->TryAcquire() ? "y" : "n no launch credit");
  HoldUntilStdinCloses();
  return 0;
}

// The connections to `path` that connect(2) accepted.
std::vector<int> Connect(const std::string& path, int count) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
      fds.push_back(fd);
    } else {
      close(fd);
    }
  }
  return fds;
}

// How many of `fds` the agent has not answered (refused) within kSettle.
std::size_t OpenAfterSettling(const std::vector<int>& fds) {
  std::vector<bool> refused(fds.size(), false);
  std::size_t open = fds.size();
  const auto deadline = std::chrono::steady_clock::now() + kSettle;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> polls;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      polls.push_back({refused[i] ? -1 : fds[i], POLLIN, 0});
    }
    if (poll(polls.data(), polls.size(), 50) < 0) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!refused[i] && (polls[i].revents & (POLLIN | POLLHUP)) != 0) {
        refused[i] = true;
        --open;
      }
    }
  }
  return open;
}

int RunHold(const std::string& path, int count) {
  const std::vector<int> fds = Connect(path, count);
  PrintLine(std::to_string(OpenAfterSettling(fds)));
  HoldUntilStdinCloses();
  for (int fd : fds) close(fd);
  return 0;
}

}  // namespace
}  // namespace wavepool::agent

int main(int argc, char** argv) {
  using wavepool::agent::AgentClient;
  using wavepool::agent::Role;
  CLI::App app{"agent_test_peer: a worker or a connection holder for the agent tests"};
  app.require_subcommand(1);

  AgentClient::Options worker;
  std::string role = "background";
  int flush_interval_ms = 5;
  CLI::App* register_worker = app.add_subcommand("worker", "Register and take a launch credit");
  register_worker->add_option("--socket", worker.socket_path)->required();
  register_worker->add_option("--namespace", worker.registration.namespace_name)->required();
  register_worker->add_option("--job", worker.registration.job)->required();
  register_worker->add_option("--pod", worker.registration.pod)->required();
  register_worker->add_option("--role", role)->check(CLI::IsMember({"foreground", "background"}));
  register_worker->add_option("--gpu", worker.registration.gpu_index);
  register_worker->add_option("--max-foreground-slowdown",
                              worker.registration.max_foreground_slowdown);
  register_worker->add_option("--batch-size", worker.registration.batch_size);
  register_worker->add_option("--flush-interval-ms", flush_interval_ms);

  std::string hold_socket;
  int connections = 0;
  CLI::App* hold = app.add_subcommand("hold", "Open connections and hold them");
  hold->add_option("--socket", hold_socket)->required();
  hold->add_option("--connections", connections)->required()->check(CLI::Range(1, 1000));

  CLI11_PARSE(app, argc, argv);
  if (register_worker->parsed()) {
    worker.registration.role = role == "foreground" ? Role::kForeground : Role::kBackground;
    worker.flush_interval = std::chrono::milliseconds(flush_interval_ms);
    return wavepool::agent::RunWorker(std::move(worker));
  }
  return wavepool::agent::RunHold(hold_socket, connections);
}
