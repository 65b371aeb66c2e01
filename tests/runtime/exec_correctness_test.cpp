// The core property of the runtime (docs/runtime.md, "Executors"): N ranks running a plan the
// planner made end with the parameters one process gets training the same global batch — for data
// parallelism, burst parallelism with branches and stages of different GPU counts, and
// model-parallel waves in both placements.
#include <memory>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/exec_test_support.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/validation.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/weight_codec.h"

namespace wavepool::runtime {
namespace {

using testing::BranchyWithoutBatchNorm;
using testing::MergeReplicas;
using testing::PlanFor;
using testing::RelativeDifference;
using testing::TrainRanks;
using testing::TrainReference;

constexpr double kTolerance = 1e-5;  // relative, fp32 (the bound)
constexpr std::int64_t kSteps = 4;

std::shared_ptr<const planner::ModelGraph> Zoo(const std::string& name) {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel(name);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::make_shared<const planner::ModelGraph>(*std::move(graph));
}

planner::PlanRequest Request(int gpus, std::int64_t batch, api::Strategy strategy) {
  planner::PlanRequest request;
  request.gpus = gpus;
  request.global_batch = batch;
  request.strategy = strategy;
  request.tick_tock = api::Toggle::kOff;
  request.gpu_counts = api::GpuCounts::kAllIntegers;
  request.amplification_limit = 8;
  return request;
}

// Trains `plan` on its ranks and one process on the same samples; every parameter must agree.
// With `slice_rows`, each rank trains its block in slices of that many samples.
void ExpectSameAsOneProcess(const api::Plan& plan,
                            const std::shared_ptr<const planner::ModelGraph>& graph,
                            std::int64_t samples_per_step, std::int64_t slice_rows = 0) {
  ASSERT_THAT(api::Validate(plan), wavepool::testing::IsOk());
  ASSERT_OK_AND_ASSIGN(std::vector<testing::RankResult> ranks,
                       TrainRanks(plan, graph, torch::kCPU, slice_rows));
  ASSERT_OK_AND_ASSIGN(auto parameters, MergeReplicas(ranks, "model", kTolerance));
  ASSERT_OK_AND_ASSIGN(testing::ReferenceResult reference,
                       TrainReference(*graph, plan.training, samples_per_step, kSteps));
  ASSERT_EQ(parameters.size(), reference.parameters.size());
  for (const auto& [name, expected] : reference.parameters) {
    ASSERT_TRUE(parameters.count(name) > 0) << name;
    EXPECT_LT(RelativeDifference(parameters.at(name), expected), kTolerance) << name;
  }
  // The gang reports the reference's losses, on every rank.
  for (const testing::RankResult& rank : ranks) {
    ASSERT_EQ(rank.reports.size(), static_cast<std::size_t>(kSteps));
    for (std::int64_t step = 0; step < kSteps; ++step) {
      EXPECT_NEAR(rank.reports[static_cast<std::size_t>(step)].loss,
                  reference.losses[static_cast<std::size_t>(step)],
                  1e-5 * std::abs(reference.losses[static_cast<std::size_t>(step)]));
    }
  }
}

TEST(DataParallel, FourRanksMatchOneProcess) {
  auto graph = Zoo("cnn_tiny");
  ASSERT_OK_AND_ASSIGN(api::Plan plan,
                       PlanFor(*graph, Request(4, 16, api::Strategy::kDataParallel), kSteps));
  ASSERT_EQ(plan.stages.size(), 1u);
  ASSERT_EQ(plan.stages[0].gpus, 4);
  ExpectSameAsOneProcess(plan, graph, 16);
}

TEST(DataParallel, UnevenBlocksMatchOneProcess) {
  auto graph = Zoo("mlp_tiny");
  // 13 samples on 3 ranks: blocks of 5, 5 and 3.
  ASSERT_OK_AND_ASSIGN(api::Plan plan,
                       PlanFor(*graph, Request(3, 13, api::Strategy::kDataParallel), kSteps));
  ASSERT_EQ(plan.stages[0].per_gpu_batch, 5);
  ExpectSameAsOneProcess(plan, graph, 13);
}

TEST(DataParallel, StepsTrainedInSlicesMatchOneProcess) {
  auto graph = Zoo("cnn_tiny");
  // 18 samples on 2 ranks, blocks of 9 in slices of 4, 4 and 1: the gradients of a step's slices
  // add up before the all-reduce, and each slice keeps its samples' place in the batch.
  ASSERT_OK_AND_ASSIGN(api::Plan plan,
                       PlanFor(*graph, Request(2, 18, api::Strategy::kDataParallel), kSteps));
  ExpectSameAsOneProcess(plan, graph, 18, /*slice_rows=*/4);
}

TEST(DataParallel, OneRankTrainsInSlicesAsWhole) {
  // One rank: no all-reduce gathers the slices; BatchNorm-free branchy_tiny with its fork/join.
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph model, BranchyWithoutBatchNorm());
  auto graph = std::make_shared<const planner::ModelGraph>(std::move(model));
  ASSERT_OK_AND_ASSIGN(api::Plan plan,
                       PlanFor(*graph, Request(1, 8, api::Strategy::kDataParallel), kSteps));
  ExpectSameAsOneProcess(plan, graph, 8, /*slice_rows=*/3);
}

TEST(BurstParallel, StagesOnDifferentRanksDoNotSliceSteps) {
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph model, BranchyWithoutBatchNorm());
  auto graph = std::make_shared<const planner::ModelGraph>(std::move(model));
  ASSERT_OK_AND_ASSIGN(api::Plan data_parallel,
                       PlanFor(*graph, Request(2, 8, api::Strategy::kDataParallel), 1));
  ASSERT_OK_AND_ASSIGN(std::vector<testing::RankResult> ranks,
                       TrainRanks(data_parallel, graph, torch::kCPU, 3));
  for (const testing::RankResult& rank : ranks) EXPECT_TRUE(rank.slices_steps);
  ASSERT_OK_AND_ASSIGN(api::Plan burst,
                       PlanFor(*graph, Request(4, 128, api::Strategy::kBurstParallel), 1));
  ASSERT_GT(burst.stages.size(), 1u);
  ASSERT_OK_AND_ASSIGN(ranks, TrainRanks(burst, graph, torch::kCPU, 3));
  for (const testing::RankResult& rank : ranks) EXPECT_FALSE(rank.slices_steps);
}

TEST(BurstParallel, BranchingPlanWithDifferentGpuCountsMatchesOneProcess) {
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph model, BranchyWithoutBatchNorm());
  auto graph = std::make_shared<const planner::ModelGraph>(std::move(model));
  ASSERT_OK_AND_ASSIGN(api::Plan plan,
                       PlanFor(*graph, Request(4, 128, api::Strategy::kBurstParallel), kSteps));
  std::set<std::int64_t> counts;
  bool side_by_side = false;
  for (const api::PlanStage& stage : plan.stages) {
    counts.insert(stage.gpus);
    side_by_side = side_by_side || !stage.concurrent_with.empty();
  }
  // The point of the test: the planner split the model into stages of different GPU counts with
  // branches side by side, so samples move between ranks.
  bool summed = false;  // a stage with parameters on several ranks all-reduces them
  for (const api::SyncGroup& group : plan.sync_groups) {
    summed = summed || (group.ranks.size() >= 2 && group.bytes > 0);
  }
  ASSERT_GE(counts.size(), 2u) << api::ToJson(plan).dump(1);
  ASSERT_TRUE(side_by_side) << api::ToJson(plan).dump(1);
  ASSERT_TRUE(summed) << api::ToJson(plan).dump(1);
  ASSERT_FALSE(plan.transfers.empty());
  ExpectSameAsOneProcess(plan, graph, 128);
}

class ModelParallelWaves : public ::testing::TestWithParam<api::WavePlacement> {};

TEST_P(ModelParallelWaves, EveryWaveOfAStepMatchesOneProcessOnAllItsSamples) {
  auto graph = Zoo("mlp_tiny");
  ASSERT_OK_AND_ASSIGN(api::Plan plan,
                       PlanFor(*graph, Request(3, 8, api::Strategy::kModelParallelWaves), kSteps));
  ASSERT_EQ(plan.strategy, api::Strategy::kModelParallelWaves);
  ASSERT_GE(plan.stages.size(), 2u);
  ASSERT_GE(plan.waves, 2);
  plan.wave_placement = GetParam();
  ExpectSameAsOneProcess(plan, graph, plan.waves * plan.global_batch_size);
}

INSTANTIATE_TEST_SUITE_P(Placements, ModelParallelWaves,
                         ::testing::Values(api::WavePlacement::kStationary,
                                           api::WavePlacement::kRoundRobin),
                         [](const auto& param_info) {
                           return std::string(api::ToString(param_info.param));
                         });

}  // namespace
}  // namespace wavepool::runtime

namespace wavepool::runtime {
namespace {

// scalednn-data-movement §IV-C: with weight compression the initial weights travel through the
// 3:1 codec and every rank, the root too, starts from the decoded values.
TEST(WeightCompression, EveryRankStartsFromTheDecodedWeights) {
  auto graph = Zoo("cnn_tiny");
  ASSERT_OK_AND_ASSIGN(api::Plan plan,
                       PlanFor(*graph, Request(3, 12, api::Strategy::kDataParallel), 0));
  plan.data_movement.weight_compression = true;
  ASSERT_OK_AND_ASSIGN(std::vector<testing::RankResult> ranks, TrainRanks(plan, graph));
  ASSERT_OK_AND_ASSIGN(auto parameters, MergeReplicas(ranks, "model", 0.0));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ExecutableModel> model,
      ExecutableModel::Build(graph, {}, static_cast<std::uint64_t>(plan.training.seed)));
  int changed = 0;
  for (auto& [name, initial] : model->NamedParameters()) {
    torch::Tensor flat = initial.detach().reshape({-1}).contiguous();
    ASSERT_OK_AND_ASSIGN(std::vector<std::uint8_t> stream,
                         EncodeWeights(absl::MakeConstSpan(
                             flat.data_ptr<float>(), static_cast<std::size_t>(flat.numel()))));
    ASSERT_OK_AND_ASSIGN(std::vector<float> decoded, DecodeWeights(stream));
    torch::Tensor expected =
        torch::from_blob(decoded.data(), initial.sizes(), torch::kFloat32).clone();
    EXPECT_TRUE(torch::equal(parameters.at(name), expected)) << name;
    changed += torch::equal(expected, initial) ? 0 : 1;
  }
  EXPECT_GT(changed, 0);  // the codec is lossy: the test would notice an uncompressed broadcast
}

}  // namespace
}  // namespace wavepool::runtime
