// Tick-tock (wavelet-tick-tock §3.2): the gradient each iteration applies is the average over the
// 2N wave micro-batches of it and its predecessor (Lemma 1, Eq. 1-2, computed here independently
// with the planner's reference functions), and training converges like data parallelism over 2N
// workers.
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/exec_test_support.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/ticktock.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/executor_factory.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/rendezvous.h"
#include "wavepool/runtime/sample_source.h"
#include "wavepool/runtime/stage_engine.h"

namespace wavepool::runtime {
namespace {

using ::testing::HasSubstr;
using testing::MergeReplicas;
using testing::PlanFor;
using testing::RelativeDifference;
using testing::TrainRanks;
using ::wavepool::testing::StatusIs;

constexpr double kLearningRate = 0.1;  // SGD, momentum 0.9

std::shared_ptr<const planner::ModelGraph> MlpTiny() {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel("mlp_tiny");
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::make_shared<const planner::ModelGraph>(*std::move(graph));
}

absl::StatusOr<api::Plan> TickTockPlan(const planner::ModelGraph& graph, int gpus,
                                       std::int64_t batch, std::int64_t steps) {
  planner::PlanRequest request;
  request.gpus = gpus;
  request.global_batch = batch;
  request.strategy = api::Strategy::kDataParallel;
  request.tick_tock = api::Toggle::kOn;
  absl::StatusOr<api::Plan> plan = PlanFor(graph, request, steps, kLearningRate, 11);
  if (plan.ok() && (plan->strategy != api::Strategy::kTickTock || plan->waves != 2)) {
    return absl::InternalError("the planner did not make a tick-tock plan");
  }
  return plan;
}

std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor flat = t.contiguous().to(torch::kFloat32);
  return {flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel()};
}

// One replica of the one-process reference.
struct ReferenceReplica {
  std::unique_ptr<ExecutableModel> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

// The mean loss gradient of `model` over `batch` (whole-graph autograd), flattened.
std::vector<float> MeanGradient(ExecutableModel& model, const Batch& batch, std::int64_t step) {
  const planner::ModelGraph& graph = model.graph();
  for (torch::Tensor& p : model.Parameters()) p.mutable_grad() = torch::Tensor();
  ForwardContext context;
  context.labels = batch.labels;
  context.step = step;
  context.first_sample = batch.first_sample;
  std::vector<torch::Tensor> outputs(static_cast<std::size_t>(graph.size()));
  for (const planner::Layer& layer : graph.layers()) {
    std::vector<torch::Tensor> inputs;
    for (planner::LayerId in : layer.inputs)
      inputs.push_back(outputs[static_cast<std::size_t>(in)]);
    if (inputs.empty()) inputs.push_back(batch.inputs);
    outputs[static_cast<std::size_t>(layer.id)] = model.Forward(layer.id, inputs, context);
  }
  (LossSum(graph.layer(graph.sink()), outputs[static_cast<std::size_t>(graph.sink())],
           batch.labels) /
   static_cast<double>(batch.rows()))
      .backward();
  std::vector<torch::Tensor> flat;
  for (torch::Tensor& p : model.Parameters()) flat.push_back(p.grad().reshape({-1}));
  return ToVector(torch::cat(flat));
}

void ApplyGradient(ReferenceReplica& replica, const std::vector<float>& gradient) {
  std::int64_t offset = 0;
  for (torch::Tensor& p : replica.model->Parameters()) {
    p.mutable_grad() =
        torch::from_blob(const_cast<float*>(gradient.data()) + offset, p.sizes(), torch::kFloat32)
            .clone();
    offset += p.numel();
  }
  torch::NoGradGuard no_grad;
  replica.optimizer->step();
}

TEST(TickTock, EveryIterationAppliesTheMeanOverTwoNWaveMicroBatches) {
  auto graph = MlpTiny();
  constexpr int kRanks = 2;
  constexpr std::int64_t kBatch = 10;  // blocks of 5 per rank and iteration
  constexpr std::int64_t kSteps = 7;
  ASSERT_OK_AND_ASSIGN(api::Plan plan, TickTockPlan(*graph, kRanks, kBatch, kSteps));
  ASSERT_OK_AND_ASSIGN(std::vector<testing::RankResult> ranks, TrainRanks(plan, graph));

  // The reference: both replicas in one process, each rank's local gradient computed on its own
  // block, averaged across the waves per rank (Eq. 1) and over the ranks (Eq. 2) by the planner's
  // reference functions.
  ReferenceReplica replicas[2];
  for (ReferenceReplica& replica : replicas) {
    ASSERT_OK_AND_ASSIGN(
        replica.model,
        ExecutableModel::Build(graph, {}, static_cast<std::uint64_t>(plan.training.seed)));
    replica.model->Train(true);
    replica.optimizer = MakeOptimizer(plan.training, replica.model->Parameters());
  }
  ASSERT_OK_AND_ASSIGN(SampleSpec spec, SampleSpecOf(*graph));
  ASSERT_OK_AND_ASSIGN(
      SampleSourcePtr source,
      OpenSampleSource("synthetic", spec, static_cast<std::uint64_t>(plan.training.seed)));
  BatchLoader::Options options;
  options.preload = false;
  const std::int64_t block = plan.stages[0].per_gpu_batch;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<BatchLoader> loader,
      BatchLoader::Create(
          source,
          SampleOrder(static_cast<std::uint64_t>(plan.training.seed), source->size(), kBatch),
          {BatchBlock{0, block}, BatchBlock{block, kBatch - block}}, options));
  std::vector<std::vector<float>> previous;  // g'_i^(m-1), by rank
  std::vector<std::int64_t> previous_samples;
  for (std::int64_t m = 0; m < kSteps; ++m) {
    ReferenceReplica& replica = replicas[m % 2];
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> blocks, loader->Next());
    std::vector<planner::WaveGradient> per_rank;
    std::vector<std::vector<float>> current;
    std::vector<std::int64_t> current_samples;
    for (int i = 0; i < kRanks; ++i) {
      current.push_back(MeanGradient(*replica.model, blocks[static_cast<std::size_t>(i)], m));
      current_samples.push_back(blocks[static_cast<std::size_t>(i)].rows());
      ASSERT_OK_AND_ASSIGN(
          std::vector<float> averaged,
          planner::CrossWaveAverage(
              current.back(), current_samples.back(),
              m == 0 ? std::vector<float>{} : previous[static_cast<std::size_t>(i)],
              m == 0 ? 0 : previous_samples[static_cast<std::size_t>(i)]));
      per_rank.push_back(
          {averaged,
           current_samples.back() + (m == 0 ? 0 : previous_samples[static_cast<std::size_t>(i)])});
    }
    ASSERT_OK_AND_ASSIGN(std::vector<float> global, planner::GlobalWaveGradient(per_rank));
    ApplyGradient(replica, global);
    previous = current;
    previous_samples = current_samples;
  }

  const char* names[2] = {"tick", "tock"};
  for (int wave = 0; wave < 2; ++wave) {
    ASSERT_OK_AND_ASSIGN(auto parameters, MergeReplicas(ranks, names[wave], 1e-6));
    for (auto& [name, expected] : replicas[wave].model->NamedParameters()) {
      ASSERT_TRUE(parameters.count(name) > 0) << name;
      EXPECT_LT(RelativeDifference(parameters.at(name), expected), 1e-5)
          << names[wave] << " " << name;
    }
  }
  // Both replicas trained: tick took iterations 0, 2, 4, 6 and tock 1, 3, 5.
  ASSERT_EQ(ranks[0].reports.size(), static_cast<std::size_t>(kSteps));
  for (std::int64_t m = 0; m < kSteps; ++m) {
    EXPECT_EQ(ranks[0].reports[static_cast<std::size_t>(m)].step, m);
    EXPECT_EQ(ranks[0].reports[static_cast<std::size_t>(m)].wave, m % 2);
  }
}

double MeanOfLast(const std::vector<StepReport>& reports, std::size_t count) {
  double sum = 0;
  for (std::size_t i = reports.size() - count; i < reports.size(); ++i) sum += reports[i].loss;
  return sum / static_cast<double>(count);
}

TEST(TickTock, ConvergesLikeDataParallelOverTwiceTheWorkers) {
  auto graph = MlpTiny();
  constexpr std::int64_t kBatch = 32;
  constexpr std::int64_t kIterations = 160;
  ASSERT_OK_AND_ASSIGN(api::Plan tick_tock, TickTockPlan(*graph, 2, kBatch, kIterations));
  // Data parallelism over 2N = 4 workers: every step trains what a tick and a tock iteration
  // train together (2 x kBatch samples), so it takes half the steps.
  planner::PlanRequest request;
  request.gpus = 4;
  request.global_batch = 2 * kBatch;
  request.strategy = api::Strategy::kDataParallel;
  request.tick_tock = api::Toggle::kOff;
  ASSERT_OK_AND_ASSIGN(api::Plan data_parallel,
                       PlanFor(*graph, request, kIterations / 2, kLearningRate, 11));

  ASSERT_OK_AND_ASSIGN(std::vector<testing::RankResult> waves, TrainRanks(tick_tock, graph));
  ASSERT_OK_AND_ASSIGN(std::vector<testing::RankResult> workers, TrainRanks(data_parallel, graph));
  const double first = waves[0].reports.front().loss;
  const double tick_tock_final = MeanOfLast(waves[0].reports, 20);
  const double data_parallel_final = MeanOfLast(workers[0].reports, 10);
  // Both learn the synthetic teacher's labels...
  EXPECT_LT(tick_tock_final, 0.7 * first);
  EXPECT_LT(data_parallel_final, 0.7 * first);
  // ... and tick-tock ends where data parallelism over 2N workers does.
  EXPECT_NEAR(tick_tock_final, data_parallel_final, 0.2 * data_parallel_final)
      << "first loss " << first;
  std::cout << "mean loss of the last 20 tick-tock iterations " << tick_tock_final
            << ", of the last 10 data-parallel steps " << data_parallel_final << " (first " << first
            << ")\n";
}

// A checkpoint's tick-tock state is checked against the executor and the step it resumes after:
// a gradient of another size would end the process on a wave's thread, another iteration's would
// leave the resumed iteration waiting for its predecessor forever.
TEST(TickTock, ExtraStateThatDoesNotFitTheModelOrTheStepIsRefused) {
  auto graph = MlpTiny();
  constexpr std::int64_t kBatch = 8;
  ASSERT_OK_AND_ASSIGN(api::Plan plan, TickTockPlan(*graph, 1, kBatch, 3));
  ASSERT_OK_AND_ASSIGN(SampleSpec spec, SampleSpecOf(*graph));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenSampleSource("synthetic", spec, 1));
  std::unique_ptr<LaunchPacer> pacer = MakeUnpacedLauncher();
  ExecutorSetup setup;
  setup.plan = plan;
  setup.graph = graph;
  setup.store = LocalStore();
  setup.pacer = pacer.get();
  setup.source = source;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> executor, MakeExecutor(setup));
  ASSERT_OK(executor->SynchronizeInitialWeights());
  StepHooks hooks;
  hooks.after_step = [](const StepReport&) {};
  ASSERT_OK_AND_ASSIGN(const std::int64_t next, executor->Train(0, 3, hooks));
  ASSERT_EQ(next, 3);
  const std::vector<std::pair<std::string, torch::Tensor>> state = executor->ExtraState();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_OK(executor->LoadExtraState(3, state));

  std::vector<std::pair<std::string, torch::Tensor>> short_gradient = state;
  for (auto& [name, tensor] : short_gradient) {
    if (name == "previous_gradient") tensor = tensor.narrow(0, 0, tensor.numel() - 1);
  }
  EXPECT_THAT(executor->LoadExtraState(3, short_gradient),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'previous_gradient' has 1 dimensions")));
  EXPECT_THAT(executor->LoadExtraState(5, state),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is [2, 8] Long; resuming after step 5 needs [4, 8] Long")));
  // What was refused changed nothing: training resumes after step 3.
  EXPECT_OK(executor->LoadExtraState(3, state));
  ASSERT_OK_AND_ASSIGN(const std::int64_t end, executor->Train(3, 4, hooks));
  EXPECT_EQ(end, 4);
}

}  // namespace
}  // namespace wavepool::runtime
