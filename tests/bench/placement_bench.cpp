// One placement decision against clusters of growing size: a fg gang (PlaceForeground) and a bg
// pod (PlaceBackground, placeable or not), on nodes of 8 GPUs with a share of them held by fg
// pods, half of those shared with a bg pod. What the decision costs per GPU in the cluster, and
// whether it grows with the cluster: docs/performance.md.
//
//   placement_bench --benchmark_filter=BM_Place --benchmark_repetitions=5
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "wavepool/controller/placement.h"

namespace wavepool::controller {
namespace {

constexpr Bytes kGiB = Bytes{1} << 30;
constexpr int kGpusPerNode = 8;

GpuAssignment Background(const std::string& pod, const std::string& uuid) {
  GpuAssignment bg;
  bg.job = bg.pod = pod;
  bg.role = api::Role::kBackground;
  bg.gpu_uuids = {uuid};
  bg.memory_per_gpu_bytes = 20 * kGiB;
  return bg;
}

// `nodes` nodes of 8 80-GiB GPUs; `held_percent` of the GPUs hold a 1-GPU fg pod, every other
// one of those a bg pod beside it, and 1 in 16 of the free GPUs a bg pod alone. The same cluster
// for the same arguments.
Inventory Cluster(int nodes, int held_percent) {
  std::vector<api::GpuNode> gpu_nodes;
  std::map<std::string, NodeState> states;
  std::vector<GpuAssignment> pods;
  std::mt19937 rng(7);
  for (int n = 0; n < nodes; ++n) {
    api::GpuNode node;
    node.metadata.name = node.spec.node_name = "node-" + std::to_string(100000 + n);
    states[node.spec.node_name] = {true, true, true};
    for (int i = 0; i < kGpusPerNode; ++i) {
      api::GpuStatus gpu;
      gpu.index = i;
      gpu.uuid = "GPU-" + node.spec.node_name + "-" + std::to_string(i);
      gpu.memory_bytes = 80 * kGiB;
      const std::string pod = std::to_string(n * kGpusPerNode + i);
      if (static_cast<int>(rng() % 100) < held_percent) {
        GpuAssignment fg;
        fg.job = fg.pod = "ns/fg-" + pod;
        fg.role = api::Role::kForeground;
        fg.gpu_uuids = {gpu.uuid};
        fg.memory_per_gpu_bytes = 30 * kGiB;
        fg.idle_fraction = 0.1 * static_cast<double>(rng() % 5);
        pods.push_back(fg);
        if (rng() % 2 == 0) pods.push_back(Background("ns/bg-" + pod, gpu.uuid));
      } else if (rng() % 16 == 0) {
        pods.push_back(Background("ns/bg-" + pod, gpu.uuid));
      }
      node.status.gpus.push_back(gpu);
    }
    gpu_nodes.push_back(node);
  }
  absl::StatusOr<Inventory> inventory = Inventory::Build(gpu_nodes, states, pods);
  if (!inventory.ok()) std::abort();
  return *std::move(inventory);
}

// The cluster of a benchmark's arguments (ClusterArgs).
Inventory ClusterOf(const benchmark::State& state) {
  return Cluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
}

void ClusterArgs(benchmark::internal::Benchmark* b) {
  for (int nodes : {100, 1000, 10000}) {
    for (int held : {0, 50, 90}) b->Args({nodes, held});
  }
  b->ArgNames({"nodes", "held%"});
}

void BM_PlaceForeground(benchmark::State& state) {
  const Inventory inventory = ClusterOf(state);
  ForegroundRequest request;
  request.job = "ns/gang";
  request.gpus = 4;
  request.memory_per_gpu_bytes = 20 * kGiB;
  for (auto _ : state) {
    benchmark::DoNotOptimize(PlaceForeground(request, inventory));
  }
  state.counters["gpus"] = static_cast<double>(inventory.gpus().size());
}
BENCHMARK(BM_PlaceForeground)->Apply(ClusterArgs);

// A bg pod of `memory` bytes: one that fits, and one no GPU takes (more memory than any has),
// for which every GPU is looked at, to say why.
void BM_PlaceBackground(benchmark::State& state, Bytes memory) {
  const Inventory inventory = ClusterOf(state);
  const BackgroundRequest request("ns/bg", memory);
  for (auto _ : state) {
    benchmark::DoNotOptimize(PlaceBackground(request, inventory));
  }
}
BENCHMARK_CAPTURE(BM_PlaceBackground, fits, 10 * kGiB)->Apply(ClusterArgs);
BENCHMARK_CAPTURE(BM_PlaceBackground, nowhere, 100 * kGiB)->Apply(ClusterArgs);

}  // namespace
}  // namespace wavepool::controller

BENCHMARK_MAIN();
