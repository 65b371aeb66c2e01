// Burst-parallel search time on the DeepPool paper's Table 3 models (VGG-16, WideResNet-101-2,
// Inception-v3 with their A100 profiles), at 8 and 1024 GPUs with power-of-two counts, and on
// Inception-v3 with every integer count 1..1024. Figures and how to read them:
// docs/performance.md. Run: build/bin/planner_bench --benchmark_repetitions=5
#include <cstdint>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/burst_problem.h"
#include "wavepool/planner/burst_search.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/profile.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

struct Setup {
  std::unique_ptr<ModelGraph> model;
  ComputeCostModelPtr compute;
  std::unique_ptr<CommModel> comm;
};

Setup MakeSetup(const std::string& name) {
  const DeviceSpec device = FindDevice("a100").value();
  Setup setup;
  setup.model = std::make_unique<ModelGraph>(BuiltinModel(name).value());
  setup.compute = MakeProfiledCostModel(FindBuiltinProfile(name, device.name).value(), *setup.model,
                                        MakeAnalyticCostModel(device))
                      .value();
  setup.comm = std::make_unique<CommModel>(DefaultNetworkModel(device));
  return setup;
}

// Args: model index, GPUs, global batch, all integers (0/1).
const char* const kModels[] = {"vgg16", "wide_resnet101_2", "inception_v3"};

BurstProblem BuildProblem(const benchmark::State& state) {
  static Setup setups[] = {MakeSetup(kModels[0]), MakeSetup(kModels[1]), MakeSetup(kModels[2])};
  const Setup& setup = setups[state.range(0)];
  BurstOptions options;
  options.max_gpus = static_cast<int>(state.range(1));
  options.global_batch = state.range(2);
  options.gpu_counts = state.range(3) ? GpuCounts::kAllIntegers : GpuCounts::kPowersOfTwo;
  options.amplification_limit = 2.0;
  return BuildBurstProblem(*setup.model, *setup.compute, *setup.comm, options).value();
}

void Label(benchmark::State& state, const BurstProblem& problem) {
  state.SetLabel(std::string(kModels[state.range(0)]) + " counts=" +
                 std::to_string(problem.counts.size()) +
                 " layers=" + std::to_string(problem.num_layers()));
}

// The search alone, as the paper's Table 3 times it.
void BM_BurstSearch(benchmark::State& state) {
  const BurstProblem problem = BuildProblem(state);
  for (auto _ : state) {
    auto result = SearchBurstAssignment(problem);
    benchmark::DoNotOptimize(result);
    if (!result.ok()) state.SkipWithError(std::string(result.status().message()).c_str());
  }
  Label(state, problem);
}

// Pricing every layer at every count (profile interpolation, all-reduce model) plus the search.
void BM_BuildAndSearch(benchmark::State& state) {
  BurstProblem last = BuildProblem(state);
  for (auto _ : state) {
    BurstProblem problem = BuildProblem(state);
    auto result = SearchBurstAssignment(problem);
    benchmark::DoNotOptimize(result);
  }
  Label(state, last);
}

void Table3(benchmark::internal::Benchmark* b) {
  // DeepPool's experiments: global batch 32 (VGG-16, Inception-v3) and 16 (WRN) on 8 GPUs; at
  // 1024 GPUs a batch of 1024 gives every power of two 1..1024 a sample per GPU.
  b->Args({0, 8, 32, 0})->Args({1, 8, 16, 0})->Args({2, 8, 32, 0});
  b->Args({0, 1024, 1024, 0})->Args({1, 1024, 1024, 0})->Args({2, 1024, 1024, 0});
}

void EveryInteger(benchmark::internal::Benchmark* b) {
  // Inception-v3 with every integer count: at batch 1024 counts with equal shards collapse (62
  // distinct); at batch 2^20 all 1024 counts have distinct shards (the worst case).
  b->Args({2, 1024, 1024, 1})->Args({2, 1024, 1 << 20, 1});
}

BENCHMARK(BM_BurstSearch)->Apply(Table3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BurstSearch)->Apply(EveryInteger)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildAndSearch)->Apply(Table3)->Apply(EveryInteger)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wavepool::planner

BENCHMARK_MAIN();
