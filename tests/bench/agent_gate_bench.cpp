// The launch gate's hot path (docs/agent.md, "The launch gate"): an uncontended
// TryAcquire+Release pair per role, the Paused()/IsSensitive() checks, and acquire+release
// throughput of 4 forked processes on one slot and on separate slots of one gate file.
// Run: build/bin/agent_gate_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gate_segment.h"

namespace wavepool::agent {
namespace {

// A gate file in a fresh directory, removed afterwards.
class BenchGate {
 public:
  BenchGate() {
    absl::StatusOr<::wavepool::testing::TempDir> directory =
        ::wavepool::testing::TempDir::Create("wavepool-gate");
    if (!directory.ok()) return;
    directory_ = *std::move(directory);
    auto segment = GateSegment::Create(directory_.path(), 0, kMaxSlotsPerGpu, 1);
    if (segment.ok()) segment_ = std::move(segment).value();
  }
  ~BenchGate() { segment_.reset(); }
  BenchGate(const BenchGate&) = delete;
  BenchGate& operator=(const BenchGate&) = delete;

  GateSegment* segment() const { return segment_.get(); }

  // A slot's Registered, or nullopt-like empty path on failure.
  Registered Register(Role role, std::int32_t limit) {
    Registered registered;
    if (segment_ == nullptr) return registered;
    // The worker's own segment, as AgentConnection creates it before Register.
    absl::StatusOr<OwnSegment> own = LaunchGate::CreateWorkerSegment();
    if (!own.ok()) return registered;
    auto grant = segment_->Allocate(role, getpid(), limit, own->fd);
    if (!grant.ok()) return registered;
    registered.slot = grant->slot;
    registered.gate_path = segment_->path();
    registered.gate_epoch = segment_->epoch();
    registered.gate_generation = grant->generation;
    registered.gate = segment_->descriptor();
    if (role == Role::kBackground) registered.foregrounds = segment_->Foregrounds();
    registered.own_segment = own->mapping;
    return registered;
  }

  std::unique_ptr<LaunchGate> Attach(Role role, std::int32_t limit) {
    auto gate = LaunchGate::Attach(Register(role, limit), role);
    return gate.ok() ? std::move(gate).value() : nullptr;
  }

 private:
  ::wavepool::testing::TempDir directory_;  // removed after segment_ is unmapped
  std::unique_ptr<GateSegment> segment_;
};

// Args: role (1 foreground, 2 background).
void BM_TryAcquireRelease(benchmark::State& state) {
  const auto role = static_cast<Role>(state.range(0));
  BenchGate bench;
  auto gate = bench.Attach(role, 2);
  if (gate == nullptr) return state.SkipWithError("cannot create the gate");
  for (auto _ : state) {
    const bool acquired = gate->TryAcquire();
    benchmark::DoNotOptimize(acquired);
    gate->Release();
  }
  state.SetLabel(role == Role::kForeground ? "foreground" : "background");
}
BENCHMARK(BM_TryAcquireRelease)->Arg(1)->Arg(2);

void BM_Paused(benchmark::State& state) {
  BenchGate bench;
  auto gate = bench.Attach(Role::kBackground, 1);
  if (gate == nullptr) return state.SkipWithError("cannot create the gate");
  for (auto _ : state) benchmark::DoNotOptimize(gate->Paused());
}
BENCHMARK(BM_Paused);

void BM_IsSensitive(benchmark::State& state) {
  BenchGate bench;
  auto gate = bench.Attach(Role::kForeground, 2);
  if (gate == nullptr) return state.SkipWithError("cannot create the gate");
  for (std::uint32_t g = 0; g < kMaxOpGroups; g += 3)
    bench.segment()->SetSensitive(gate->slot(), g, true);
  std::uint32_t group = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(gate->IsSensitive(group));
    group = (group + 1) & (kMaxOpGroups - 1);
  }
}
BENCHMARK(BM_IsSensitive);

// --- Contention from forked processes -----------------------------------------------------------

constexpr std::int64_t kPairsPerProcess = 200'000;

struct StartLine {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<std::uint64_t> refused{0};  // TryAcquire that found no free credit
};

std::int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A child: attach, wait for the start, do kPairsPerProcess acquire+release pairs, exit.
[[noreturn]] void RunChild(const Registered& registered, StartLine& line) {
  auto gate = LaunchGate::Attach(registered, Role::kForeground);
  if (!gate.ok()) _exit(2);
  line.ready.fetch_add(1);
  while (!line.go.load(std::memory_order_acquire)) {
  }
  std::uint64_t refused = 0;
  for (std::int64_t done = 0; done < kPairsPerProcess;) {
    if (!(*gate)->TryAcquire()) {
      ++refused;
      continue;
    }
    (*gate)->Release();
    ++done;
  }
  line.refused.fetch_add(refused);
  _exit(0);
}

// Args: processes, shared (1: all on one slot with limit 2; 0: one slot each, limit 2).
// Manual time: from the start signal to the last child's exit.
void BM_AcquireReleaseProcesses(benchmark::State& state) {
  const int processes = static_cast<int>(state.range(0));
  const bool shared = state.range(1) != 0;
  void* memory =
      mmap(nullptr, sizeof(StartLine), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return state.SkipWithError("mmap failed");
  std::uint64_t refused = 0;
  for (auto _ : state) {
    BenchGate bench;
    std::vector<Registered> slots;
    for (int p = 0; p < (shared ? 1 : processes); ++p)
      slots.push_back(bench.Register(Role::kForeground, 2));
    if (slots.front().gate_path.empty()) return state.SkipWithError("cannot create the gate");
    auto* line = new (memory) StartLine;
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
      const pid_t pid = fork();
      if (pid == 0) RunChild(slots[shared ? 0 : p], *line);
      children.push_back(pid);
    }
    while (line->ready.load() < processes) {
    }
    const std::int64_t start = NowNs();
    line->go.store(true, std::memory_order_release);
    bool failed = false;
    for (pid_t child : children) {
      int status = 0;
      failed |= child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0;
    }
    state.SetIterationTime(static_cast<double>(NowNs() - start) * 1e-9);
    if (failed) return state.SkipWithError("a child failed");
    refused += line->refused.load();
  }
  munmap(memory, sizeof(StartLine));
  const auto pairs = static_cast<double>(state.iterations()) * processes * kPairsPerProcess;
  state.SetItemsProcessed(static_cast<std::int64_t>(pairs));
  state.counters["refused_per_pair"] = static_cast<double>(refused) / pairs;
  state.SetLabel(shared ? "one slot" : "separate slots");
}
BENCHMARK(BM_AcquireReleaseProcesses)
    ->Args({1, 0})
    ->Args({4, 1})
    ->Args({4, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wavepool::agent

BENCHMARK_MAIN();
