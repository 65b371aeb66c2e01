// Report ingestion by the agent's socket server: op-group reports per second from one worker
// through a real unix socket into a no-op SessionHandler (the server's decode and dispatch, not
// the agent's policy). BM_Ingest sends pre-encoded ReportOps frames of 1, 64 or 1024 reports;
// BM_AgentClient goes through the worker's AgentClient (ReportOp calls, batching, its thread).
// BM_ServerCpuAt1kHz measures the server's CPU at the load (8 GPUs x 4 workers at 1 kHz).
// The target: at least 100,000 op-group reports per second. Figures: docs/performance.md.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/client/agent_client.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/agent/gate_segment.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent {
namespace {

constexpr std::uint32_t kReportsPerIteration = 64 * 1024;

// Counts op-group reports; hands out real gate slots (AgentClient maps its gate).
class CountingHandler : public SessionHandler {
 public:
  explicit CountingHandler(GateSegment* segment) : segment_(segment) {}
  absl::StatusOr<Registered> OnRegister(SessionId, const PeerCredentials& peer,
                                        const RegisterRequest& request) override {
    absl::StatusOr<SlotGrant> grant =
        segment_->Allocate(request.role, peer.pid, 2, request.worker_segment);
    if (!grant.ok()) return grant.status();
    Registered registered;
    registered.slot = grant->slot;
    registered.gate_path = segment_->path();
    registered.gate_epoch = segment_->epoch();
    registered.gate_generation = grant->generation;
    registered.gate = segment_->descriptor();
    if (request.role == Role::kBackground) registered.foregrounds = segment_->Foregrounds();
    return registered;
  }
  absl::Status OnReport(SessionId, const Message& report) override {
    if (const auto* ops = std::get_if<ReportOps>(&report)) {
      ops_.fetch_add(ops->groups.size(), std::memory_order_release);
    }
    return absl::OkStatus();
  }
  void OnClosed(SessionId, bool) override {}
  std::uint64_t ops() const { return ops_.load(std::memory_order_acquire); }

 private:
  GateSegment* segment_;
  std::atomic<std::uint64_t> ops_{0};
};

// A server with its gate file in a fresh directory, removed afterwards.
class Agent {
 public:
  Agent() {
    absl::StatusOr<::wavepool::testing::TempDir> dir =
        ::wavepool::testing::TempDir::Create("wavepool-bench");
    if (!dir.ok()) return;
    dir_ = *std::move(dir);
    absl::StatusOr<std::unique_ptr<GateSegment>> segment =
        GateSegment::Create(dir_.path(), 0, 32, 1);
    if (!segment.ok()) return;
    segment_ = std::move(*segment);
    handler_ = std::make_unique<CountingHandler>(segment_.get());
    SocketServer::Options options;
    options.path = socket_path();
    options.log = [](std::string_view) {};  // a worker leaving without Goodbye is logged
    absl::StatusOr<std::unique_ptr<SocketServer>> server =
        SocketServer::Start(options, handler_.get());
    if (server.ok()) server_ = std::move(*server);
  }
  ~Agent() {
    server_.reset();
    segment_.reset();
  }
  bool ok() const { return server_ != nullptr; }
  std::string socket_path() const { return dir_.File("agent.sock"); }
  const CountingHandler& handler() const { return *handler_; }

 private:
  ::wavepool::testing::TempDir dir_;  // removed after the server and segment_ are gone
  std::unique_ptr<GateSegment> segment_;
  std::unique_ptr<CountingHandler> handler_;
  std::unique_ptr<SocketServer> server_;
};

RegisterRequest Registration() {
  RegisterRequest request;
  request.namespace_name = "bench";
  request.job = "ingest";
  request.pod = "ingest-0";
  return request;
}

bool SendAll(int fd, const std::string& bytes) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// A raw worker socket, registered (sequence 1) and answered.
int ConnectRaw(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      !SendAll(fd, *EncodeFrame(Registration(), 1))) {
    close(fd);
    return -1;
  }
  FrameReader reader;
  char buffer[4096];
  for (;;) {
    absl::StatusOr<std::optional<Frame>> next = reader.Next();
    if (next.ok() && next->has_value()) return fd;
    const ssize_t n = next.ok() ? recv(fd, buffer, sizeof buffer, 0) : -1;
    if (n <= 0) {
      close(fd);
      return -1;
    }
    reader.Append(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The child of BM_ServerCpuAt1kHz: `workers` AgentClients that connect once the agent listens
// and report one op group per millisecond each for `duration`; true if all of them ran.
bool RunWorkers(const std::string& socket_path, int workers, std::chrono::seconds duration,
                std::chrono::milliseconds flush_interval) {
  std::vector<std::unique_ptr<AgentClient>> clients;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (static_cast<int>(clients.size()) < workers) {
    AgentClient::Options options;
    options.socket_path = socket_path;
    options.registration = Registration();
    options.flush_interval = flush_interval;
    options.log = [](std::string_view) {};
    absl::StatusOr<std::unique_ptr<AgentClient>> client = AgentClient::Connect(options);
    if (client.ok()) {
      clients.push_back(std::move(*client));
    } else if (std::chrono::steady_clock::now() > give_up) {
      return false;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the agent is starting
    }
  }
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (auto& client : clients) {
    threads.emplace_back([&client, start, duration] {
      auto next = start;
      for (std::uint32_t i = 0; next < start + duration; ++i) {
        (void)client->ReportOp({i % kMaxOpGroups, OpKind::kCompute, 800'000});
        next += std::chrono::milliseconds(1);
        std::this_thread::sleep_until(next);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (auto& client : clients) client->Close();
  return true;
}

void WaitForOps(const CountingHandler& handler, std::uint64_t target) {
  while (handler.ops() < target) std::this_thread::yield();
}

void BM_Ingest(benchmark::State& state) {
  const auto batch = static_cast<std::uint32_t>(state.range(0));
  Agent agent;
  const int fd = agent.ok() ? ConnectRaw(agent.socket_path()) : -1;
  if (fd < 0) {
    state.SkipWithError("no agent");
    return;
  }
  ReportOps ops;
  for (std::uint32_t i = 0; i < batch; ++i)
    ops.groups.push_back({i % kMaxOpGroups, OpKind::kCompute, 250'000});
  const std::string frame = *EncodeFrame(ops, 1);
  const std::uint32_t frames = kReportsPerIteration / batch;
  std::string stream;
  for (std::uint32_t i = 0; i < frames; ++i) stream += frame;
  std::uint32_t sequence = 2;
  std::uint64_t target = 0;
  for (auto _ : state) {
    state.PauseTiming();  // the worker's encoding is not the agent's ingestion
    for (std::uint32_t i = 0; i < frames; ++i, sequence = NextSequence(sequence)) {
      for (int b = 0; b < 4; ++b) {
        stream[i * frame.size() + 8 + b] = static_cast<char>(sequence >> (8 * b));
      }
    }
    state.ResumeTiming();
    if (!SendAll(fd, stream)) {
      state.SkipWithError("send failed");
      break;
    }
    target += kReportsPerIteration;
    WaitForOps(agent.handler(), target);
  }
  close(fd);
  state.SetItemsProcessed(static_cast<std::int64_t>(target));
  state.counters["messages_per_s"] =
      benchmark::Counter(static_cast<double>(target / batch), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Ingest)->Arg(1)->Arg(64)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_AgentClient(benchmark::State& state) {
  Agent agent;
  AgentClient::Options options;
  options.socket_path = agent.socket_path();
  options.registration = Registration();
  options.batch_size = static_cast<std::size_t>(state.range(0));
  options.max_buffered_reports = kReportsPerIteration;
  options.flush_interval = std::chrono::milliseconds(1);
  absl::StatusOr<std::unique_ptr<AgentClient>> client =
      agent.ok() ? AgentClient::Connect(options) : absl::UnavailableError("no agent");
  if (!client.ok()) {
    state.SkipWithError(std::string(client.status().message()).c_str());
    return;
  }
  std::uint64_t target = 0;
  for (auto _ : state) {
    for (std::uint32_t i = 0; i < kReportsPerIteration; ++i) {
      (void)(*client)->ReportOp({i % kMaxOpGroups, OpKind::kCompute, 250'000});
    }
    target += kReportsPerIteration;
    WaitForOps(agent.handler(), target);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(target));
  state.counters["dropped"] = static_cast<double>((*client)->stats().reports_dropped);
}
BENCHMARK(BM_AgentClient)->Arg(64)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);

// The load: 8 GPUs x 4 workers, each reporting one op group per millisecond through its
// AgentClient, flushing every Arg ms (10: the default). The workers run in a child process, so the
// CPU time of this process over the second is the server's (its thread; the main thread sleeps in
// waitpid).
void BM_ServerCpuAt1kHz(benchmark::State& state) {
  constexpr int kWorkers = 32;
  constexpr auto kDuration = std::chrono::seconds(1);
  for (auto _ : state) {
    absl::StatusOr<::wavepool::testing::TempDir> temp_dir =
        ::wavepool::testing::TempDir::Create("wavepool-bench");
    if (!temp_dir.ok()) return state.SkipWithError(temp_dir.status().ToString().c_str());
    const std::string dir = temp_dir->path();
    const pid_t child = fork();  // before any thread of this process exists
    if (child == 0) {
      _exit(RunWorkers(dir + "/agent.sock", kWorkers, kDuration,
                       std::chrono::milliseconds(state.range(0)))
                ? 0
                : 1);
    }
    std::uint64_t received = 0;
    double cpu_seconds = 0;
    {
      absl::StatusOr<std::unique_ptr<GateSegment>> segment = GateSegment::Create(dir, 0, 32, 1);
      CountingHandler handler(segment.ok() ? segment->get() : nullptr);
      SocketServer::Options options;
      options.path = dir + "/agent.sock";
      options.log = [](std::string_view) {};
      absl::StatusOr<std::unique_ptr<SocketServer>> server =
          segment.ok() ? SocketServer::Start(options, &handler) : segment.status();
      const double start = ProcessCpuSeconds();
      int status = 1;
      waitpid(child, &status, 0);
      cpu_seconds = ProcessCpuSeconds() - start;
      received = handler.ops();
      if (!server.ok() || status != 0) state.SkipWithError("the agent or its workers failed");
    }
    state.counters["server_cpu_percent"] =
        100.0 * cpu_seconds / std::chrono::duration<double>(kDuration).count();
    state.counters["reports_per_s"] =
        static_cast<double>(received) / std::chrono::duration<double>(kDuration).count();
  }
}
BENCHMARK(BM_ServerCpuAt1kHz)
    ->Arg(10)
    ->Arg(50)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wavepool::agent

BENCHMARK_MAIN();
