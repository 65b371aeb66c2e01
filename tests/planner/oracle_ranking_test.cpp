// The oracle's ranking, scaling series, config validation, names, table, and its behaviour on
// real models from the zoo.
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/planner/oracle_test_models.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/oracle.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using oracle_test::ConvChain;
using oracle_test::FlopCostModel;
using oracle_test::RoundNetwork;
using oracle_test::Tiny3;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

OracleConfig Config(int gpus, std::int64_t batch) {
  OracleConfig config;
  config.dataset_samples = 1024;
  config.global_batch = batch;
  config.gpus = gpus;
  config.device_memory = Bytes{1} << 30;
  return config;
}

// Every layer takes 0.25 s per sample forward and backward: sums stay exact in binary, so
// strategies that do the same work tie exactly.
class QuarterSecondCost : public ComputeCostModel {
 public:
  LayerTime Time(const Layer&, std::int64_t per_gpu_batch) const override {
    const double b = static_cast<double>(per_gpu_batch);
    return {Seconds(0.25 * b), Seconds(0.25 * b)};
  }
  std::string Description() const override { return "0.25 s per sample and pass"; }
};

std::vector<Strategy> Order(const std::vector<Prediction>& ranked) {
  std::vector<Strategy> order;
  for (const Prediction& p : ranked) order.push_back(p.strategy);
  return order;
}

TEST(OracleRanking, FittingThenOverMemoryThenInfeasibleEachByEpochTime) {
  const ModelGraph model = Tiny3();
  const FlopCostModel cost;
  const CommModel comm(RoundNetwork());
  OracleConfig config = Config(16, 32);
  // Per GPU: data 107456 B, data+filter 104272 B, data+spatial 132512 B fit; channel holds the
  // whole batch's activations (340256 B) and does not; spatial (8 rows), filter (8 filters) and
  // pipeline (3 layers) cannot use 16 GPUs.
  config.device_memory = 200000;
  ASSERT_OK_AND_ASSIGN(const std::vector<Prediction> ranked,
                       RankStrategies(model, cost, comm, config));
  ASSERT_EQ(ranked.size(), AllStrategies().size());
  const std::set<Strategy> fitting(
      {Strategy::kData, Strategy::kDataFilter, Strategy::kDataSpatial});
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(ranked[i].fits_memory) << StrategyName(ranked[i].strategy);
    EXPECT_EQ(fitting.count(ranked[i].strategy), 1u) << StrategyName(ranked[i].strategy);
    if (i > 0) {
      EXPECT_LE(ranked[i - 1].epoch, ranked[i].epoch);
    }
  }
  EXPECT_EQ(ranked[3].strategy, Strategy::kChannel);
  EXPECT_TRUE(ranked[3].feasible);
  EXPECT_FALSE(ranked[3].fits_memory);
  // The infeasible ones keep the AllStrategies order.
  EXPECT_EQ(ranked[4].strategy, Strategy::kSpatial);
  EXPECT_EQ(ranked[5].strategy, Strategy::kFilter);
  EXPECT_EQ(ranked[6].strategy, Strategy::kPipeline);
}

TEST(OracleRanking, TiesKeepTheStrategyOrder) {
  // On one GPU every strategy is the sequential run: 3 layers x 8 samples x 0.5 s = 12 s per
  // iteration (the pipeline: 4 micro-batches of 3 x 2 x 0.5 s), and no communication.
  const ModelGraph model = Tiny3();
  const QuarterSecondCost cost;
  const CommModel comm(RoundNetwork());
  ASSERT_OK_AND_ASSIGN(const std::vector<Prediction> ranked,
                       RankStrategies(model, cost, comm, Config(1, 8)));
  for (const Prediction& p : ranked) {
    EXPECT_EQ(p.iteration.count(), 12.0) << StrategyName(p.strategy);
  }
  EXPECT_THAT(Order(ranked), ElementsAreArray(AllStrategies()));
}

TEST(OracleScaling, StrongScalingDataComputeFallsAndCommunicationRises) {
  const ModelGraph model = ConvChain(4);
  const FlopCostModel cost;
  const CommModel comm(RoundNetwork());
  // Beyond one node (4 GPUs) the counts fill whole nodes, where the hierarchical exchange applies
  // at every count and communication cannot fall; 128 GPUs exceed the 64 samples.
  const std::vector<int> counts = {1, 2, 3, 4, 8, 16, 32, 64, 128};
  ASSERT_OK_AND_ASSIGN(const std::vector<Prediction> series,
                       StrongScaling(Strategy::kData, model, cost, comm, Config(1, 64), counts));
  ASSERT_EQ(series.size(), counts.size());
  for (size_t i = 0; i < series.size(); ++i) {
    EXPECT_EQ(series[i].gpus, counts[i]);
    EXPECT_EQ(series[i].global_batch, 64);
  }
  for (size_t i = 1; i + 1 < series.size(); ++i) {
    EXPECT_LE(series[i].compute_per_iteration, series[i - 1].compute_per_iteration) << counts[i];
    EXPECT_GE(series[i].communication_per_iteration, series[i - 1].communication_per_iteration)
        << counts[i];
  }
  EXPECT_FALSE(series.back().feasible);
}

TEST(OracleScaling, StrongScalingModelSplitsComputeNeverRises) {
  const ModelGraph model = ConvChain(8);  // 8 filters, 16 rows, 8 layers
  const FlopCostModel cost;
  const CommModel comm(RoundNetwork());
  for (Strategy strategy : {Strategy::kFilter, Strategy::kChannel, Strategy::kSpatial,
                            Strategy::kPipeline, Strategy::kDataFilter, Strategy::kDataSpatial}) {
    ASSERT_OK_AND_ASSIGN(const std::vector<Prediction> series,
                         StrongScaling(strategy, model, cost, comm, Config(1, 64), {1, 2, 4, 8}));
    for (size_t i = 1; i < series.size(); ++i) {
      ASSERT_TRUE(series[i].feasible)
          << StrategyName(strategy) << " " << series[i].infeasible_reason;
      EXPECT_LE(series[i].compute_per_iteration, series[i - 1].compute_per_iteration)
          << StrategyName(strategy) << " at " << series[i].gpus;
    }
  }
}

TEST(OracleScaling, WeakScalingKeepsPerGpuWorkAndShortensTheEpoch) {
  const ModelGraph model = ConvChain(4);
  const FlopCostModel cost;
  const CommModel comm(AbciNetworkModel());
  const std::vector<int> counts = {1, 2, 4, 8, 16, 64, 256, 1024};
  OracleConfig config = Config(1, 1);
  config.dataset_samples = 1'280'000;
  ASSERT_OK_AND_ASSIGN(const std::vector<Prediction> series,
                       WeakScaling(Strategy::kData, model, cost, comm, config, 8, counts));
  for (size_t i = 0; i < series.size(); ++i) {
    EXPECT_EQ(series[i].global_batch, 8 * counts[i]);
    EXPECT_EQ(series[i].compute_per_iteration, series[0].compute_per_iteration);
    if (i == 0) continue;
    EXPECT_GE(series[i].communication_per_iteration, series[i - 1].communication_per_iteration);
    EXPECT_LT(series[i].compute_per_epoch, series[i - 1].compute_per_epoch);
  }
}

TEST(OracleScaling, RejectsBadSeries) {
  const ModelGraph model = Tiny3();
  const FlopCostModel cost;
  const CommModel comm(RoundNetwork());
  EXPECT_THAT(StrongScaling(Strategy::kData, model, cost, comm, Config(1, 8), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpu_counts: is empty")));
  EXPECT_THAT(StrongScaling(Strategy::kData, model, cost, comm, Config(1, 8), {1, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gpu_counts[1]: must be >= 1, got 0")));
  EXPECT_THAT(WeakScaling(Strategy::kData, model, cost, comm, Config(1, 8), 0, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("per_gpu_batch: must be >= 1, got 0")));
  OracleConfig config = Config(1, 8);
  config.model_split_gpus = 4;
  EXPECT_THAT(StrongScaling(Strategy::kDataFilter, model, cost, comm, config, {4, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gpu_counts[1] (2 GPUs): config.model_split_gpus")));
}

class OracleConfigErrors
    : public ::testing::TestWithParam<std::tuple<void (*)(OracleConfig&), const char*>> {};

TEST_P(OracleConfigErrors, NameTheField) {
  OracleConfig config = Config(8, 64);
  std::get<0>(GetParam())(config);
  const ModelGraph model = Tiny3();
  const FlopCostModel cost;
  const CommModel comm(RoundNetwork());
  const char* message = std::get<1>(GetParam());
  EXPECT_THAT(Predict(Strategy::kData, model, cost, comm, config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
  EXPECT_THAT(RankStrategies(model, cost, comm, config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
}

INSTANTIATE_TEST_SUITE_P(
    Oracle, OracleConfigErrors,
    ::testing::Values(std::make_tuple(
                          +[](OracleConfig& c) { c.gpus = 0; }, "config.gpus: must be >= 1, got 0"),
                      std::make_tuple(
                          +[](OracleConfig& c) { c.global_batch = 0; },
                          "config.global_batch: must be >= 1, got 0"),
                      std::make_tuple(
                          +[](OracleConfig& c) { c.dataset_samples = -1; },
                          "config.dataset_samples: must be >= 1, got -1"),
                      std::make_tuple(
                          +[](OracleConfig& c) { c.pipeline_microbatches = 0; },
                          "config.pipeline_microbatches: must be >= 1, got 0"),
                      std::make_tuple(
                          +[](OracleConfig& c) { c.model_split_gpus = -2; },
                          "config.model_split_gpus: must be >= 0, got -2"),
                      std::make_tuple(
                          +[](OracleConfig& c) { c.model_split_gpus = 3; },
                          "config.model_split_gpus: must divide config.gpus (8), got 3"),
                      std::make_tuple(
                          +[](OracleConfig& c) { c.device_memory = 0; },
                          "config.device_memory: must be >= 1, got 0"),
                      std::make_tuple(
                          +[](OracleConfig& c) { c.optimizer_state_per_param = -1; },
                          "config.optimizer_state_per_param: must be >= 0, got -1")));

TEST(OracleNames, RoundTrip) {
  const std::vector<std::string> names = {"data",     "spatial",     "filter",      "channel",
                                          "pipeline", "data+filter", "data+spatial"};
  ASSERT_EQ(AllStrategies().size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(StrategyName(AllStrategies()[i]), names[i]);
    EXPECT_EQ(ParseStrategy(names[i]), AllStrategies()[i]);
  }
  EXPECT_EQ(ParseStrategy("Data+Filter"), Strategy::kDataFilter);
  EXPECT_EQ(ParseStrategy("model"), std::nullopt);
}

TEST(OracleFormat, TableShowsEveryStrategyWithItsPartsOrReason) {
  const ModelGraph model = Tiny3();
  const FlopCostModel cost;
  const CommModel comm(RoundNetwork());
  ASSERT_OK_AND_ASSIGN(const std::vector<Prediction> ranked,
                       RankStrategies(model, cost, comm, Config(16, 32)));
  const std::string table = FormatComparison(ranked);
  for (Strategy strategy : AllStrategies()) {
    EXPECT_THAT(table, HasSubstr(std::string(StrategyName(strategy))));
  }
  EXPECT_THAT(table, HasSubstr("gradient all-reduce"));
  EXPECT_THAT(table, HasSubstr("infeasible: pipeline: 16 stages exceed the 3 layers"));
  EXPECT_THAT(table, HasSubstr("memory: activations"));
  EXPECT_EQ(table.back(), '\n');
}

class OracleOnZooModels : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(device_, FindDevice("a100-40gb"));
    comm_ = std::make_unique<CommModel>(DefaultNetworkModel(device_));
  }
  OracleConfig ConfigFor(int gpus, std::int64_t batch) const {
    OracleConfig config;
    config.gpus = gpus;
    config.global_batch = batch;
    config.device_memory = device_.memory_bytes;
    return config;
  }

  DeviceSpec device_;
  std::unique_ptr<CommModel> comm_;
  FlopCostModel cost_{1.0 / 100e12};  // 100 TFLOP/s
};

TEST_F(OracleOnZooModels, Vgg16FilterParallelismStopsAtItsNarrowestConv) {
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg, BuiltinModel("vgg16"));
  ASSERT_OK_AND_ASSIGN(const Prediction at64,
                       Predict(Strategy::kFilter, vgg, cost_, *comm_, ConfigFor(64, 64)));
  EXPECT_TRUE(at64.feasible) << at64.infeasible_reason;
  ASSERT_OK_AND_ASSIGN(const Prediction at128,
                       Predict(Strategy::kFilter, vgg, cost_, *comm_, ConfigFor(128, 128)));
  EXPECT_FALSE(at128.feasible);
  EXPECT_THAT(at128.infeasible_reason, HasSubstr("the 64 filters of layer conv1_1"));
}

TEST_F(OracleOnZooModels, Vgg16DataParallelAllReducesEveryWeight) {
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg, BuiltinModel("vgg16"));
  ASSERT_OK_AND_ASSIGN(const Prediction p,
                       Predict(Strategy::kData, vgg, cost_, *comm_, ConfigFor(8, 256)));
  const Bytes weights = vgg.TotalParams() * kBytesPerItem;  // 138,357,544 x 4 B
  EXPECT_EQ(p.memory.weights, weights);
  EXPECT_EQ(p.memory.optimizer_state, 2 * weights);
  // One node of 8 A100s: 2 (8-1) (9 us + 553 MB / 8 / 300 GB/s), about 3.35 ms.
  EXPECT_EQ(p.communication_per_iteration, comm_->RingAllReduce(weights, 8));
  EXPECT_NEAR(p.communication_per_iteration.count(), 14 * (9e-6 + weights / 8.0 / 300e9), 1e-12);
  EXPECT_EQ(p.iterations_per_epoch, 5000);  // 1,280,000 / 256
  EXPECT_TRUE(p.fits_memory);
}

TEST_F(OracleOnZooModels, EveryStrategyIsPredictedForTheCnns) {
  for (const char* name : {"vgg16", "resnet50", "inception_v3"}) {
    ASSERT_OK_AND_ASSIGN(const ModelGraph model, BuiltinModel(name));
    ASSERT_OK_AND_ASSIGN(const std::vector<Prediction> ranked,
                         RankStrategies(model, cost_, *comm_, ConfigFor(16, 512)));
    ASSERT_EQ(ranked.size(), AllStrategies().size());
    for (const Prediction& p : ranked) {
      if (!p.feasible) continue;
      EXPECT_GT(p.epoch.count(), 0) << name << " " << StrategyName(p.strategy);
      EXPECT_GT(p.memory_per_gpu, 0) << name << " " << StrategyName(p.strategy);
      EXPECT_LE(p.memory_reuse_factor, 1.0);
    }
    // Data parallelism and spatial parallelism over one node are always possible for them.
    EXPECT_TRUE(ranked.front().feasible) << name;
  }
}

}  // namespace
}  // namespace wavepool::planner
