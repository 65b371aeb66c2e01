// The ParaDL oracle's formulas, each against a hand-computed example on the 3-layer model of
// oracle_test_models.h (1 ns per FLOP; 10 us + 1 ns/B inside a node of 4 GPUs, 100 us + 10 ns/B
// per NIC between nodes, 2 NICs per node; ring all-reduce).
#include "wavepool/planner/oracle.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/planner/oracle_test_models.h"
#include "tests/support/status_matchers.h"

namespace wavepool::planner {
namespace {

using oracle_test::ConvChain;
using oracle_test::FlopCostModel;
using oracle_test::RoundNetwork;
using oracle_test::Tiny3;
using ::testing::HasSubstr;

constexpr double kTol = 1e-12;  // seconds

OracleConfig Config(int gpus, std::int64_t batch) {
  OracleConfig config;
  config.dataset_samples = 1024;
  config.global_batch = batch;
  config.gpus = gpus;
  config.device_memory = Bytes{1} << 30;
  config.optimizer_state_per_param = 2;
  return config;
}

// The named part of a prediction, or a failure when it is missing.
double Part(const std::vector<std::pair<std::string, Seconds>>& parts, const std::string& name) {
  for (const auto& [part, time] : parts) {
    if (part == name) return time.count();
  }
  ADD_FAILURE() << "no part named \"" << name << "\"";
  return -1;
}

class OracleTest : public ::testing::Test {
 protected:
  absl::StatusOr<Prediction> Run(Strategy strategy, const OracleConfig& config) {
    return Predict(strategy, model_, cost_, comm_, config);
  }

  ModelGraph model_ = Tiny3();
  FlopCostModel cost_;
  CommModel comm_{RoundNetwork()};
};

TEST_F(OracleTest, DataParallelMatchesHandComputedExample) {
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kData, Config(4, 32)));
  ASSERT_TRUE(p.feasible);
  // B' = 32 / 4 = 8 samples: compute 8 x 142.336 us = 1138.688 us.
  EXPECT_NEAR(p.compute_per_iteration.count(), 1138.688e-6, kTol);
  // Gradients 4 x 5426 = 21704 B inside a node: 2 (4-1) (10 us + 21704/4 B x 1 ns) = 92.556 us.
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-reduce"), 92.556e-6, kTol);
  EXPECT_NEAR(p.communication_per_iteration.count(), 92.556e-6, kTol);
  EXPECT_NEAR(p.iteration.count(), 1231.244e-6, kTol);
  // ceil(1024 / 32) = 32 iterations.
  EXPECT_EQ(p.iterations_per_epoch, 32);
  EXPECT_NEAR(p.compute_per_epoch.count(), 32 * 1138.688e-6, 1e-10);
  EXPECT_NEAR(p.epoch.count(), 32 * 1231.244e-6, 1e-10);
}

TEST_F(OracleTest, DataParallelEpochCommunicationIsTheArtifactFormula) {
  // Tcomm = 2 ceil(D/B) (p-1) (alpha + delta sum|w| beta / p), inside a node (p = 4):
  // 2 x 32 x 3 x (10 us + 21704 / 4 B x 1 ns) = 192 x 15.426 us = 2961.792 us.
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kData, Config(4, 32)));
  EXPECT_NEAR(p.communication_per_epoch.count(), 2961.792e-6, 1e-10);
  // Tcomp = ceil(D/p) t_sample = 256 x 142.336 us when B divides D.
  EXPECT_NEAR(p.compute_per_epoch.count(), 256 * 142.336e-6, 1e-10);
}

TEST_F(OracleTest, DataParallelAcrossNodesTakesTheCheaperOfFlatRingAndHierarchical) {
  // p = 8 on two nodes. The flat ring (the artifact's formula) runs on one NIC:
  // 2 (8-1) (100 us + 21704 / 8 B x 10 ns) = 14 x 127.13 us = 1779.82 us.
  // Hierarchical: reduce-scatter in the node 3 (10 + 5.426) us = 46.278 us; each GPU all-reduces
  // its 5426 B across the 2 nodes, 4 segments on 2 NICs (20 ns/B): 2 (100 + 54.26) = 308.52 us;
  // all-gather in the node 46.278 us. Total 401.076 us: hierarchical.
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kData, Config(8, 32)));
  EXPECT_NEAR(Part(p.communication_parts, "gradient reduce-scatter (node)"), 46.278e-6, kTol);
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-reduce (across nodes)"), 308.52e-6, kTol);
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-gather (node)"), 46.278e-6, kTol);
  EXPECT_NEAR(p.communication_per_iteration.count(), 401.076e-6, kTol);
  // Without latency and with intra-node links as slow as a NIC, the flat ring wins:
  // 2 (8-1) (21704 / 8 B x 10 ns) = 379.82 us per iteration, against 2 x 3 x 54.26 us in the
  // node plus 2 x 54.26 us across; per epoch 32 x 379.82 us = 12154.24 us.
  NetworkModel slow = RoundNetwork();
  slow.intra_node = Link{Seconds(0), 1e-8};
  slow.inter_node = Link{Seconds(0), 1e-8};
  ASSERT_OK_AND_ASSIGN(const Prediction flat,
                       Predict(Strategy::kData, model_, cost_, CommModel(slow), Config(8, 32)));
  EXPECT_NEAR(Part(flat.communication_parts, "gradient all-reduce"), 379.82e-6, kTol);
  EXPECT_NEAR(flat.communication_per_epoch.count(), 12154.24e-6, 1e-10);
  EXPECT_NEAR(flat.compute_per_epoch.count(), 128 * 142.336e-6, 1e-10);
}

TEST_F(OracleTest, DataParallelMemoryIsTheArtifactFormulaWithReuse) {
  OracleConfig config = Config(4, 32);
  config.optimizer_state_per_param = 0;
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kData, config));
  // 2 delta (B' (sum|x| + sum|y|) + sum|w|) without relu1 (in place):
  // 8 x (8 x ((256 + 512) + (512 + 10)) + 5426) = 8 x (10320 + 5426) = 125968 B.
  EXPECT_EQ(p.memory_per_gpu, 125968);
  EXPECT_EQ(p.memory.activations, 82560);  // 2 x 4 x 8 x 1290
  EXPECT_EQ(p.memory.weights, 21704);
  EXPECT_EQ(p.memory.gradients, 21704);
  EXPECT_EQ(p.memory.optimizer_state, 0);
}

TEST_F(OracleTest, MemoryWithoutReuseCountsInPlaceLayersAndOptimizerState) {
  OracleConfig config = Config(4, 32);  // Adam: 2 items per parameter
  ASSERT_OK_AND_ASSIGN(const Prediction reused, Run(Strategy::kData, config));
  config.memory_reuse = false;
  ASSERT_OK_AND_ASSIGN(const Prediction naive, Run(Strategy::kData, config));
  // relu1 adds 8 x (512 + 512) items: 2 x 4 x 8 x 2314 = 148096 B of activations.
  EXPECT_EQ(naive.memory.activations, 148096);
  EXPECT_EQ(reused.memory.optimizer_state, 43408);  // 2 x 4 x 5426
  // Totals: 82560 + 4 x 21704 = 169376 with reuse, 148096 + 86816 = 234912 without.
  EXPECT_EQ(reused.memory_per_gpu, 169376);
  EXPECT_EQ(naive.memory_per_gpu, 234912);
  EXPECT_NEAR(reused.memory_reuse_factor, 169376.0 / 234912.0, 1e-12);
  EXPECT_NEAR(naive.memory_reuse_factor, reused.memory_reuse_factor, 1e-12);
}

TEST_F(OracleTest, FilterParallelMatchesHandComputedExample) {
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kFilter, Config(2, 8)));
  ASSERT_TRUE(p.feasible) << p.infeasible_reason;
  // Every GPU runs the whole batch of 8; conv1 and fc are split in two, relu1 is not:
  // forward 8 x (36864/2 + 512 + 10240/2) ns = 192.512 us,
  // backward 8 x (73728/2 + 512 + 20480/2) ns = 380.928 us.
  EXPECT_NEAR(Part(p.compute_parts, "forward"), 192.512e-6, kTol);
  EXPECT_NEAR(Part(p.compute_parts, "backward"), 380.928e-6, kTol);
  // Forward all-gathers of the outputs: conv1 8 x 512 x 4 = 16384 B: (2-1) (10 + 8.192) us;
  // fc 8 x 10 x 4 = 320 B: 10.16 us. Sum 28.352 us.
  EXPECT_NEAR(Part(p.communication_parts, "activation all-gather (forward)"), 28.352e-6, kTol);
  // Backward all-reduce of fc's input gradient 8 x 512 x 4 = 16384 B: 2 (10 + 8.192) us; conv1
  // reads the model input and needs none.
  EXPECT_NEAR(Part(p.communication_parts, "input-gradient all-reduce (backward)"), 36.384e-6, kTol);
  EXPECT_NEAR(p.communication_per_iteration.count(), 64.736e-6, kTol);  // no gradient exchange
  // Weights: conv1 296/2 + fc 5130/2 = 2713 items = 10852 B.
  EXPECT_EQ(p.memory.weights, 10852);
}

TEST_F(OracleTest, ChannelParallelMatchesHandComputedExample) {
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kChannel, Config(2, 8)));
  ASSERT_TRUE(p.feasible) << p.infeasible_reason;
  // conv1 reads the 4-channel model input and runs whole; only fc is split:
  // 8 x (110592 + 1024 + 30720/2) ns = 1015.808 us.
  EXPECT_NEAR(p.compute_per_iteration.count(), 1015.808e-6, kTol);
  // Forward all-reduce of fc's partial output, 320 B: 2 (2-1) (10 + 0.16) us = 20.32 us.
  EXPECT_NEAR(Part(p.communication_parts, "activation all-reduce (forward)"), 20.32e-6, kTol);
  // Backward all-gather of fc's input-gradient slices, 16384 B: (10 + 8.192) us.
  EXPECT_NEAR(Part(p.communication_parts, "input-gradient all-gather (backward)"), 18.192e-6, kTol);
  // Weights: conv1 296 + fc's kernel 5120/2 + its bias 10 = 2866 items = 11464 B.
  EXPECT_EQ(p.memory.weights, 11464);
}

TEST_F(OracleTest, FilterAndChannelSwapTheirCollectivesAndTheirLimits) {
  // paradl-oracle §3.3: filter all-gathers each split layer's |y| (forward) and all-reduces its
  // |x| gradient (backward); channel all-reduces the partial |y| and all-gathers the |x| slices.
  const ModelGraph chain = ConvChain(3);
  const OracleConfig config = Config(2, 8);
  ASSERT_OK_AND_ASSIGN(const Prediction filter,
                       Predict(Strategy::kFilter, chain, cost_, comm_, config));
  ASSERT_OK_AND_ASSIGN(const Prediction channel,
                       Predict(Strategy::kChannel, chain, cost_, comm_, config));
  // Filter splits all 3 convs; channel leaves conv0 (it reads the model input) whole.
  EXPECT_THAT(filter.layout, HasSubstr("3 of 3 layers split"));
  EXPECT_THAT(channel.layout, HasSubstr("2 of 3 layers split"));
  // Each conv's |x| = |y| = 8 x 2048 x 4 = 65536 B. Filter: 3 all-gathers of
  // (10 + 32.768) us and 2 all-reduces of 2 (10 + 32.768) us; channel: 2 all-reduces and
  // 2 all-gathers.
  EXPECT_NEAR(Part(filter.communication_parts, "activation all-gather (forward)"), 3 * 42.768e-6,
              kTol);
  EXPECT_NEAR(Part(filter.communication_parts, "input-gradient all-reduce (backward)"),
              2 * 85.536e-6, kTol);
  EXPECT_NEAR(Part(channel.communication_parts, "activation all-reduce (forward)"), 2 * 85.536e-6,
              kTol);
  EXPECT_NEAR(Part(channel.communication_parts, "input-gradient all-gather (backward)"),
              2 * 42.768e-6, kTol);
  EXPECT_NE(filter.iteration, channel.iteration);
  // Limits: tiny3's narrowest filter count is conv1's 8, its narrowest split input is fc's 512.
  ASSERT_OK_AND_ASSIGN(const Prediction filter16, Run(Strategy::kFilter, Config(16, 32)));
  ASSERT_OK_AND_ASSIGN(const Prediction channel16, Run(Strategy::kChannel, Config(16, 32)));
  EXPECT_FALSE(filter16.feasible);
  EXPECT_THAT(filter16.infeasible_reason,
              HasSubstr("filter: a split over 16 GPUs exceeds the 8 filters of layer conv1"));
  EXPECT_TRUE(channel16.feasible);
  ASSERT_OK_AND_ASSIGN(const Prediction channel1024, Run(Strategy::kChannel, Config(1024, 1024)));
  EXPECT_THAT(channel1024.infeasible_reason,
              HasSubstr("exceeds the 512 input channels of layer fc"));
}

TEST_F(OracleTest, SpatialParallelMatchesHandComputedExample) {
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kSpatial, Config(2, 8)));
  ASSERT_TRUE(p.feasible) << p.infeasible_reason;
  EXPECT_THAT(p.layout, HasSubstr("2 of 3 layers split"));  // conv1, relu1; fc is not (C,H,W)
  // 8 x (110592/2 + 1024/2 + 30720) ns = 692.224 us.
  EXPECT_NEAR(p.compute_per_iteration.count(), 692.224e-6, kTol);
  // conv1 (K = 3) swaps 1 row with each neighbour: forward 8 x 1 x 4 x 8 x 4 = 1024 B of input,
  // backward 8 x 1 x 8 x 8 x 4 = 2048 B of output gradient; 2 x ((10 + 1.024) + (10 + 2.048)).
  EXPECT_NEAR(Part(p.communication_parts, "halo exchange"), 46.144e-6, kTol);
  // relu1's output leaves the split: all-gather 16384 B: (10 + 8.192) us.
  EXPECT_NEAR(Part(p.communication_parts, "activation all-gather (split end)"), 18.192e-6, kTol);
  // Only conv1's gradients are partial sums: 296 x 4 = 1184 B: 2 (10 + 0.592) us.
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-reduce"), 21.184e-6, kTol);
  EXPECT_NEAR(p.communication_per_iteration.count(), 85.52e-6, kTol);
  // Activations: conv1 8 x 768 / 2 + fc 8 x 522 = 7248 items, x 2 x 4 B; weights whole.
  EXPECT_EQ(p.memory.activations, 57984);
  EXPECT_EQ(p.memory.weights, 21704);
}

TEST_F(OracleTest, SpatialIsInfeasibleWithFewerRowsThanGpusOrThanTheHalo) {
  ASSERT_OK_AND_ASSIGN(const Prediction eight, Run(Strategy::kSpatial, Config(8, 8)));
  EXPECT_TRUE(eight.feasible);  // 8 rows: 1 row each, halo 1
  ASSERT_OK_AND_ASSIGN(const Prediction sixteen, Run(Strategy::kSpatial, Config(16, 16)));
  EXPECT_FALSE(sixteen.feasible);
  EXPECT_THAT(sixteen.infeasible_reason,
              HasSubstr("spatial: layer conv1 has 8 output rows, fewer than 16 GPUs"));
  // A 5x5 window needs 2 halo rows: 4 GPUs keep 2 rows each, 8 GPUs keep 1.
  const ModelGraph wide = Tiny3(5);
  ASSERT_OK_AND_ASSIGN(const Prediction four,
                       Predict(Strategy::kSpatial, wide, cost_, comm_, Config(4, 8)));
  EXPECT_TRUE(four.feasible);
  ASSERT_OK_AND_ASSIGN(const Prediction narrow,
                       Predict(Strategy::kSpatial, wide, cost_, comm_, Config(8, 8)));
  EXPECT_FALSE(narrow.feasible);
  EXPECT_THAT(narrow.infeasible_reason, HasSubstr("fewer than max(1, its halo of 2)"));
}

TEST_F(OracleTest, PipelineMatchesHandComputedExample) {
  OracleConfig config = Config(2, 8);  // S = 4 micro-batches of 2
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kPipeline, config));
  ASSERT_TRUE(p.feasible) << p.infeasible_reason;
  // At 2 samples: conv1 221.184 us (73.728 + 147.456), relu1 2.048, fc 61.44. The best 2-stage
  // cut is after conv1 (slowest 221.184 us, not 223.232 us).
  EXPECT_THAT(p.layout, HasSubstr("2 stages (layers 0-0 | 1-2), 4 micro-batches of 2"));
  // Step = max forward 73.728 + max backward 147.456 = 221.184 us; (S + p - 1) = 5 steps.
  EXPECT_NEAR(Part(p.compute_parts, "pipeline micro-batches"), 4 * 221.184e-6, kTol);
  EXPECT_NEAR(Part(p.compute_parts, "pipeline bubble"), 221.184e-6, kTol);
  EXPECT_NEAR(p.compute_per_iteration.count(), 1105.92e-6, kTol);
  // conv1's output crosses the cut: 2 x 512 x 4 = 4096 B, (10 + 4.096) us, on 2 (p + S - 2) = 8
  // transfers.
  EXPECT_NEAR(p.communication_per_iteration.count(), 8 * 14.096e-6, kTol);
  // Stage 1 is the larger: fc's 8 x 522 items (relu1 in place) x 2 x 4 B + 5130 x 4 x 4 B.
  EXPECT_EQ(p.memory.activations, 33408);
  EXPECT_EQ(p.memory_per_gpu, 33408 + 82080);
}

TEST_F(OracleTest, PipelineBubbleIsPMinusOneOverSPlusPMinusOne) {
  const ModelGraph chain = ConvChain(4);
  for (int s : {1, 2, 4, 8, 16}) {
    OracleConfig config = Config(4, 16);
    config.pipeline_microbatches = s;
    ASSERT_OK_AND_ASSIGN(const Prediction p,
                         Predict(Strategy::kPipeline, chain, cost_, comm_, config));
    const double bubble = Part(p.compute_parts, "pipeline bubble");
    EXPECT_NEAR(bubble / p.compute_per_iteration.count(), 3.0 / (s + 3), 1e-12) << "S=" << s;
  }
}

TEST_F(OracleTest, PipelinePointToPointCrossesNodesAtTheNodeBoundary) {
  const ModelGraph chain = ConvChain(8);
  ASSERT_OK_AND_ASSIGN(const Prediction p,
                       Predict(Strategy::kPipeline, chain, cost_, comm_, Config(8, 16)));
  // One conv per stage; micro-batch 4. Per step: 4 x (294912 + 589824) ns = 3538.944 us;
  // (4 + 8 - 1) = 11 steps.
  EXPECT_NEAR(p.compute_per_iteration.count(), 11 * 3538.944e-6, 1e-10);
  // The cut between GPUs 3 and 4 crosses nodes: 4 x 2048 x 4 = 32768 B at 100 us + 10 ns/B =
  // 427.68 us, on 2 (8 + 4 - 2) = 20 transfers.
  EXPECT_NEAR(p.communication_per_iteration.count(), 20 * 427.68e-6, 1e-10);
}

TEST_F(OracleTest, PipelineLimits) {
  ASSERT_OK_AND_ASSIGN(const Prediction deep, Run(Strategy::kPipeline, Config(4, 32)));
  EXPECT_FALSE(deep.feasible);
  EXPECT_THAT(deep.infeasible_reason, HasSubstr("pipeline: 4 stages exceed the 3 layers"));
  ASSERT_OK_AND_ASSIGN(const Prediction small, Run(Strategy::kPipeline, Config(2, 2)));
  EXPECT_THAT(small.infeasible_reason,
              HasSubstr("pipeline: global batch 2 is smaller than 4 micro-batches"));
}

TEST_F(OracleTest, DataFilterHybridMatchesHandComputedExample) {
  // p = 8 on nodes of 4: filter inside each node (p2 = 4), data across p1 = 2 nodes, 8 samples
  // per group.
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kDataFilter, Config(8, 16)));
  ASSERT_TRUE(p.feasible) << p.infeasible_reason;
  EXPECT_THAT(p.layout, HasSubstr("2 groups x 4 GPUs (filter)"));
  // 8 x (110592/4 + 1024 + 30720/4) ns = 290.816 us.
  EXPECT_NEAR(p.compute_per_iteration.count(), 290.816e-6, kTol);
  // All-gathers over 4: conv1 16384 B: 3 (10 + 4.096) us; fc 320 B: 3 (10 + 0.08) us.
  EXPECT_NEAR(Part(p.communication_parts, "activation all-gather (forward)"), 72.528e-6, kTol);
  EXPECT_NEAR(Part(p.communication_parts, "input-gradient all-reduce (backward)"), 84.576e-6, kTol);
  // Every GPU all-reduces its 21704 / 4 = 5426 B shard across the 2 nodes; the 4 segments of a
  // node share its 2 NICs (10 ns/B -> 20 ns/B): 2 (2-1) (100 us + 5426/2 B x 20 ns) = 308.52 us.
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-reduce (across groups)"), 308.52e-6, kTol);
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-gather (group)"), 0, kTol);  // all sharded
  EXPECT_NEAR(p.communication_per_iteration.count(), 465.624e-6, kTol);
  // With a NIC per GPU the segments do not contend: 2 (100 + 27.13) us.
  NetworkModel nics = RoundNetwork();
  nics.nics_per_node = 4;
  ASSERT_OK_AND_ASSIGN(const Prediction free, Predict(Strategy::kDataFilter, model_, cost_,
                                                      CommModel(nics), Config(8, 16)));
  EXPECT_NEAR(Part(free.communication_parts, "gradient all-reduce (across groups)"), 254.26e-6,
              kTol);
}

TEST_F(OracleTest, DataSpatialHybridMatchesHandComputedExample) {
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kDataSpatial, Config(8, 16)));
  ASSERT_TRUE(p.feasible) << p.infeasible_reason;
  // 8 samples per group: 8 x (110592/4 + 1024/4 + 30720) ns = 468.992 us.
  EXPECT_NEAR(p.compute_per_iteration.count(), 468.992e-6, kTol);
  EXPECT_NEAR(Part(p.communication_parts, "halo exchange"), 46.144e-6, kTol);
  EXPECT_NEAR(Part(p.communication_parts, "activation all-gather (split end)"), 42.288e-6, kTol);
  // conv1's partial gradients, 1184 B, reduce-scattered over 4: 3 (10 + 0.296) us.
  EXPECT_NEAR(Part(p.communication_parts, "gradient reduce-scatter (group)"), 30.888e-6, kTol);
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-reduce (across groups)"), 308.52e-6, kTol);
  // All 21704 B gathered back over 4: 3 (10 + 5.426) us.
  EXPECT_NEAR(Part(p.communication_parts, "gradient all-gather (group)"), 46.278e-6, kTol);
  EXPECT_NEAR(p.communication_per_iteration.count(), 474.118e-6, kTol);
}

TEST_F(OracleTest, HybridsNeedWholeModelSplitGroups) {
  ASSERT_OK_AND_ASSIGN(const Prediction six, Run(Strategy::kDataFilter, Config(6, 12)));
  EXPECT_FALSE(six.feasible);
  EXPECT_THAT(six.infeasible_reason,
              HasSubstr("data+filter: 6 GPUs are not a multiple of the 4 GPUs per node"));
  ASSERT_OK_AND_ASSIGN(const Prediction spatial6, Run(Strategy::kDataSpatial, Config(6, 12)));
  EXPECT_FALSE(spatial6.feasible);
  // An explicit split that divides p is accepted.
  OracleConfig config = Config(6, 12);
  config.model_split_gpus = 2;
  ASSERT_OK_AND_ASSIGN(const Prediction three_by_two, Run(Strategy::kDataFilter, config));
  EXPECT_TRUE(three_by_two.feasible);
  EXPECT_THAT(three_by_two.layout, HasSubstr("3 groups x 2 GPUs"));
  // Batch smaller than the number of data-parallel groups.
  ASSERT_OK_AND_ASSIGN(const Prediction tiny_batch, Run(Strategy::kDataFilter, Config(8, 1)));
  EXPECT_THAT(tiny_batch.infeasible_reason, HasSubstr("smaller than 2 groups"));
}

TEST_F(OracleTest, HybridsInsideOneNodeEqualTheirModelSplit) {
  // p = 4 fills one node: p1 = 1, so data+filter is filter and data+spatial is spatial.
  for (auto [hybrid, pure] : {std::pair{Strategy::kDataFilter, Strategy::kFilter},
                              std::pair{Strategy::kDataSpatial, Strategy::kSpatial}}) {
    ASSERT_OK_AND_ASSIGN(const Prediction h, Run(hybrid, Config(4, 16)));
    ASSERT_OK_AND_ASSIGN(const Prediction s, Run(pure, Config(4, 16)));
    EXPECT_EQ(h.iteration, s.iteration) << StrategyName(hybrid);
    EXPECT_EQ(h.memory_per_gpu, s.memory_per_gpu);
  }
  // And with a model split of 1 GPU, data+filter is data parallelism.
  OracleConfig config = Config(8, 16);
  config.model_split_gpus = 1;
  ASSERT_OK_AND_ASSIGN(const Prediction h, Run(Strategy::kDataFilter, config));
  ASSERT_OK_AND_ASSIGN(const Prediction d, Run(Strategy::kData, config));
  EXPECT_EQ(h.iteration, d.iteration);
}

TEST_F(OracleTest, DataParallelNeedsASamplePerGpu) {
  ASSERT_OK_AND_ASSIGN(const Prediction p, Run(Strategy::kData, Config(4, 2)));
  EXPECT_FALSE(p.feasible);
  EXPECT_THAT(p.infeasible_reason, HasSubstr("data: global batch 2 is smaller than 4 GPUs"));
  EXPECT_EQ(p.iteration.count(), 0);
  EXPECT_FALSE(p.fits_memory);
}

TEST_F(OracleTest, MemoryOverCapacityIsFeasibleButDoesNotFit) {
  OracleConfig config = Config(4, 32);
  config.device_memory = 169376;  // exactly the data-parallel footprint
  ASSERT_OK_AND_ASSIGN(const Prediction fits, Run(Strategy::kData, config));
  EXPECT_TRUE(fits.fits_memory);
  config.device_memory = 169375;
  ASSERT_OK_AND_ASSIGN(const Prediction over, Run(Strategy::kData, config));
  EXPECT_TRUE(over.feasible);
  EXPECT_FALSE(over.fits_memory);
}

}  // namespace
}  // namespace wavepool::planner
