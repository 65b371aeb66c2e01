// One data-parallel worker's step against a plain LibTorch training loop on the same model, batch
// and thread count (docs/performance.md, "Training runtime"): the runtime's cost is its layer-by-
// layer launch groups (one autograd call per layer), its executor and its bookkeeping. Both sides
// train the same modules (ExecutableModel) with SGD on the same samples, read by the same
// pre-loading BatchLoader, in one process with the worker's allocator setting; the plain loop runs
// one autograd call per step over the whole graph. Arguments: model index, batch, intra-op
// threads (and for BM_WorkerStepInSlices the slice's samples).
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/executor_factory.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/rendezvous.h"
#include "wavepool/runtime/sample_source.h"
#include "wavepool/runtime/stage_engine.h"
#include "wavepool/runtime/worker.h"

namespace wavepool::runtime {
namespace {

const char* const kModels[] = {"mlp_tiny", "cnn_tiny", "branchy_tiny"};

std::shared_ptr<const planner::ModelGraph> Graph(benchmark::State& state) {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel(kModels[state.range(0)]);
  if (!graph.ok()) state.SkipWithError(std::string(graph.status().message()).c_str());
  return std::make_shared<const planner::ModelGraph>(*std::move(graph));
}

// A one-rank data-parallel plan of every layer.
api::Plan OneRankPlan(const planner::ModelGraph& graph, std::int64_t batch) {
  api::Plan plan;
  plan.model = graph.name();
  plan.strategy = api::Strategy::kDataParallel;
  plan.global_batch_size = batch;
  plan.gpus = 1;
  api::PlanStage stage;
  for (const planner::Layer& layer : graph.layers()) stage.layers.push_back(layer.name);
  stage.ranks = {0};
  stage.per_gpu_batch = batch;
  plan.stages = {stage};
  plan.data_movement.preload = true;
  plan.training.steps = 1'000'000;
  return plan;
}

void BM_PlainLoop(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(2)));
  auto graph = Graph(state);
  const std::int64_t batch = state.range(1);
  auto model = ExecutableModel::Build(graph, {}, 1);
  SampleSpec spec = *SampleSpecOf(*graph);
  SampleSourcePtr source = *OpenSampleSource("synthetic", spec, 1);
  auto loader = *BatchLoader::Create(source, SampleOrder(1, source->size(), batch), {{0, batch}},
                                     BatchLoader::Options{});
  std::unique_ptr<torch::optim::Optimizer> optimizer =
      MakeOptimizer(api::PlanTraining{}, (*model)->Parameters());
  std::vector<torch::Tensor> outputs(static_cast<std::size_t>(graph->size()));
  ForwardContext context;
  for (auto _ : state) {
    const Batch data = (*loader->Next()).front();
    context.labels = data.labels;
    for (const planner::Layer& layer : graph->layers()) {
      std::vector<torch::Tensor> inputs;
      for (planner::LayerId in : layer.inputs)
        inputs.push_back(outputs[static_cast<std::size_t>(in)]);
      if (inputs.empty()) inputs.push_back(data.inputs);
      outputs[static_cast<std::size_t>(layer.id)] = (*model)->Forward(layer.id, inputs, context);
    }
    torch::Tensor loss = LossSum(graph->layer(graph->sink()),
                                 outputs[static_cast<std::size_t>(graph->sink())], data.labels) /
                         static_cast<double>(batch);
    optimizer->zero_grad();
    loss.backward();
    torch::NoGradGuard no_grad;
    optimizer->step();
    benchmark::DoNotOptimize(loss.item<float>());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

// Steps of a one-rank data-parallel executor, each in slices of `slice_rows` samples (0: whole).
void RunWorkerSteps(benchmark::State& state, std::int64_t slice_rows) {
  torch::set_num_threads(static_cast<int>(state.range(2)));
  auto graph = Graph(state);
  const std::int64_t batch = state.range(1);
  SampleSpec spec = *SampleSpecOf(*graph);
  std::unique_ptr<LaunchPacer> pacer = MakeUnpacedLauncher();
  ExecutorSetup setup;
  setup.plan = OneRankPlan(*graph, batch);
  setup.graph = graph;
  setup.store = LocalStore();
  setup.pacer = pacer.get();
  setup.source = *OpenSampleSource("synthetic", spec, 1);
  absl::StatusOr<std::unique_ptr<Executor>> executor = MakeExecutor(setup);
  if (!executor.ok()) {
    state.SkipWithError(std::string(executor.status().message()).c_str());
    return;
  }
  std::int64_t step = 0;
  StepHooks hooks;
  hooks.slice_rows = [slice_rows](std::int64_t) { return slice_rows; };
  for (auto _ : state) {
    absl::StatusOr<std::int64_t> next = (*executor)->Train(step, step + 1, hooks);
    if (!next.ok()) state.SkipWithError(std::string(next.status().message()).c_str());
    step = *next;
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_WorkerStep(benchmark::State& state) { RunWorkerSteps(state, 0); }

// What a background worker pays for following its agent's smaller batch recommendation: the same
// steps trained in slices of state.range(3) samples, gradients accumulated (executor.h).
void BM_WorkerStepInSlices(benchmark::State& state) { RunWorkerSteps(state, state.range(3)); }

void SliceArguments(benchmark::internal::Benchmark* b) {
  b->ArgNames({"model", "batch", "threads", "slice"});
  for (std::int64_t slice : {64, 32, 16, 8}) b->Args({1, 64, 1, slice});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

void Arguments(benchmark::internal::Benchmark* b) {
  b->ArgNames({"model", "batch", "threads"});
  for (int threads : {1, 2}) {
    b->Args({0, 256, threads});
    b->Args({1, 64, threads});
    b->Args({2, 32, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_PlainLoop)->Apply(Arguments);
BENCHMARK(BM_WorkerStep)->Apply(Arguments);
BENCHMARK(BM_WorkerStepInSlices)->Apply(SliceArguments);

}  // namespace
}  // namespace wavepool::runtime

int main(int argc, char** argv) {
  wavepool::runtime::KeepFreedMemoryForReuse();  // as wavepool-worker does, for both sides
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
