// Hand-checked examples of the burst-parallel cost model, search and evaluator.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/burst_evaluate.h"
#include "wavepool/planner/burst_problem.h"
#include "wavepool/planner/burst_search.h"

namespace wavepool::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

// A problem over `inputs` with counts {1, 2} (B = 2 * shard_unit), one node, and the given work
// tables; every edge costs base + per_sample * shard.
BurstProblem TwoCountProblem(std::vector<std::vector<LayerId>> inputs,
                             std::vector<std::vector<Nanos>> work, double amp_limit, Nanos base,
                             double per_sample, std::int64_t global_batch) {
  BurstProblem p;
  p.options.max_gpus = 2;
  p.options.global_batch = global_batch;
  p.options.amplification_limit = amp_limit;
  p.amp_budget_scale = amp_limit;
  p.counts = MakeCountSet(2, global_batch, GpuCounts::kPowersOfTwo, /*gpus_per_node=*/2);
  for (size_t l = 0; l < inputs.size(); ++l) {
    p.layers.push_back(LayerCost{work[l], work[l][0], false});
    EdgeCost edge;
    edge.base = {base, base};
    edge.per_sample_ns = {per_sample, per_sample};
    p.out_edges.push_back(edge);
    p.layer_names.push_back(std::string(1, static_cast<char>('a' + l)));
  }
  p.inputs = std::move(inputs);
  p.tree = DecomposeSeriesParallel(p.inputs, p.layer_names).value();
  return p;
}

TEST(BurstCountSet, PowersOfTwoStopAtTheBatchAndMarkNodeLevels) {
  // G = 8, B = 6: 8 GPUs would leave some without a sample, so counts stop at 4.
  const CountSet counts = MakeCountSet(8, 6, GpuCounts::kPowersOfTwo, 2);
  EXPECT_THAT(counts.gpus, ElementsAre(1, 2, 4));
  EXPECT_THAT(counts.shard, ElementsAre(6, 3, 2));  // ceil(6/1), ceil(6/2), ceil(6/4)
  EXPECT_THAT(counts.level, ElementsAre(0, 0, 1));  // 4 GPUs span two 2-GPU nodes
}

TEST(BurstCountSet, AllIntegersUpToTheSmallerOfGpusAndBatch) {
  const CountSet counts = MakeCountSet(5, 3, GpuCounts::kAllIntegers, 8);
  EXPECT_THAT(counts.gpus, ElementsAre(1, 2, 3));
  EXPECT_THAT(counts.shard, ElementsAre(3, 2, 1));
}

TEST(BurstSearch, WorkedChainBurstsOnlyTheLayerThatScales) {
  // Layer a scales (100 ns on 1 GPU, 50 on 2); layer b does not (40 on 1, 50 on 2).
  // B = 4: shards 4 (1 GPU) and 2 (2 GPUs); a transfer costs 2 + 1 * max shard = 6 ns.
  // Plans: (1,1) = 140; (2,2) = 100; (2,1) = 50 + 6 + 40 = 96; (1,2) = 100 + 6 + 50 = 156.
  // Limit 2: b at 2 GPUs from 2 uses 50*2 = 100 > 2*40, so (2,2) is not allowed; a at 2 uses
  // 50*2 = 100 <= 200. b at 1 GPU from 2 is charged its ingress 2 + 1*4 = 6: (40+6)*1 <= 80.
  BurstProblem p = TwoCountProblem({{}, {0}}, {{100, 50}, {40, 50}}, 2.0, 2, 1.0, 4);
  ASSERT_OK_AND_ASSIGN(BurstSearchResult result, SearchBurstAssignment(p));
  EXPECT_EQ(result.iteration, 96);
  EXPECT_THAT(result.assignment.count, ElementsAre(1, 0));  // count indices: 2 GPUs, then 1
}

TEST(BurstSearch, AmplificationLimitKeepsAWastefulLayerOnOneGpu) {
  // a takes 100 ns on 1 GPU and 60 on 2: 60*2 = 120 GPU-ns is 1.2x its one-GPU work.
  // b takes 10 and 5: 5*2 = 10, no amplification.
  BurstProblem loose = TwoCountProblem({{}, {0}}, {{100, 60}, {10, 5}}, 1.25, 2, 1.0, 4);
  ASSERT_OK_AND_ASSIGN(BurstSearchResult burst, SearchBurstAssignment(loose));
  EXPECT_EQ(burst.iteration, 65);  // (2,2): 60 + 5
  // At 1.1 a must stay on 1 GPU; b on 2 GPUs would then pay its ingress 2 + 1*2 = 4:
  // (5 + 4) * 2 = 18 > 1.1 * 10, so b stays too.
  BurstProblem tight = TwoCountProblem({{}, {0}}, {{100, 60}, {10, 5}}, 1.1, 2, 1.0, 4);
  ASSERT_OK_AND_ASSIGN(BurstSearchResult single, SearchBurstAssignment(tight));
  EXPECT_EQ(single.iteration, 110);
  EXPECT_THAT(single.assignment.count, ElementsAre(0, 0));
}

TEST(BurstSearch, WorkedForkRunsBranchesSideBySideWhenThatIsFaster) {
  // f -> {x, y} -> j, B = 2 (shards 2 and 1), transfers 1 + 1 * max shard = 3 ns.
  // f: 10/6, x and y: 40/30 (they scale poorly), j: 0/0. Serial on 2 GPUs: 6 + 30 + 30 = 66.
  // Side by side, one GPU each (x on rank 0, y on rank 1), join on 1 GPU (rank 0):
  // x: 3 (2 -> 1 GPUs) + 40; y: 3 + 40 + 3 (its output moves from rank 1 to the join's rank 0).
  // Total 6 + max(43, 46) + 0 = 52.
  BurstProblem p = TwoCountProblem({{}, {0}, {0}, {1, 2}}, {{10, 6}, {40, 30}, {40, 30}, {0, 0}},
                                   10.0, 1, 1.0, 2);
  ASSERT_OK_AND_ASSIGN(BurstSearchResult result, SearchBurstAssignment(p));
  EXPECT_EQ(result.iteration, 52);
  EXPECT_THAT(result.assignment.count, ElementsAre(1, 0, 0, 0));
  EXPECT_EQ(result.assignment.mode[3], BranchMode::kParallel);
  ASSERT_OK_AND_ASSIGN(BurstEvaluation evaluation, EvaluateAssignment(p, result.assignment));
  EXPECT_EQ(evaluation.layers[1].first_rank, 0);  // x on rank 0
  EXPECT_EQ(evaluation.layers[2].first_rank, 1);  // y on rank 1, at the same time
  EXPECT_EQ(evaluation.layers[1].start, evaluation.layers[2].start);
}

TEST(BurstSearch, WorkedForkRunsBranchesInTurnWithoutParallelBranches) {
  BurstProblem p = TwoCountProblem({{}, {0}, {0}, {1, 2}}, {{10, 6}, {40, 30}, {40, 30}, {0, 0}},
                                   10.0, 1, 1.0, 2);
  p.options.parallel_branches = false;
  ASSERT_OK_AND_ASSIGN(BurstSearchResult result, SearchBurstAssignment(p));
  EXPECT_EQ(result.iteration, 66);  // everything on 2 GPUs: 6 + 30 + 30
  EXPECT_EQ(result.assignment.mode[3], BranchMode::kSerial);
}

TEST(BurstEvaluate, ResidualEdgeMovesTheForkOutputToTheJoin) {
  // f -> {x, identity} -> j: f at 2 GPUs, x at 2, j at 1. The identity branch re-shards f's
  // output 2 -> 1 (3 ns), x's output too (3 ns). Serial: 6 + (22 + 3) + 3 + 0 = 34.
  BurstProblem p =
      TwoCountProblem({{}, {0}, {0, 1}}, {{10, 6}, {40, 22}, {0, 0}}, 10.0, 1, 1.0, 2);
  BurstAssignment a{{1, 1, 0}, {BranchMode::kSerial, BranchMode::kSerial, BranchMode::kSerial}};
  ASSERT_OK_AND_ASSIGN(BurstEvaluation serial, EvaluateAssignment(p, a));
  EXPECT_EQ(serial.iteration, 34);
  // Side by side the identity transfer overlaps x: 6 + max(22 + 3, 3) + 0 = 31.
  a.mode[2] = BranchMode::kParallel;
  ASSERT_OK_AND_ASSIGN(BurstEvaluation parallel, EvaluateAssignment(p, a));
  EXPECT_EQ(parallel.iteration, 31);
}

TEST(BurstEvaluate, RejectsAPlanOverTheLimitNamingTheLayer) {
  BurstProblem p = TwoCountProblem({{}, {0}}, {{100, 60}, {10, 10}}, 1.1, 2, 1.0, 4);
  BurstAssignment a{{1, 1}, {BranchMode::kSerial, BranchMode::kSerial}};
  EXPECT_THAT(EvaluateAssignment(p, a),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("layer a at 2 GPUs")));
  a.count = {0, 7};
  EXPECT_THAT(EvaluateAssignment(p, a),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range")));
}

TEST(BurstProblem, ParallelCapsShareGpusByWorkWithLargestRemainder) {
  // Branch work 3:1 in a group of 8: one GPU each, the spare 6 split 4.5 : 1.5 -> 4 + 1 with
  // remainders tied (2/4 each), the tie going to the earlier branch: caps 6 and 2.
  BurstProblem p = TwoCountProblem({{}, {0}, {0}, {1, 2}}, {{1, 1}, {300, 1}, {100, 1}, {0, 0}},
                                   2.0, 1, 1.0, 2);
  const SpElement& block = p.tree.elements[1];
  EXPECT_THAT(p.ParallelCaps(block, 8), ElementsAre(6, 2));
  EXPECT_THAT(p.ParallelCaps(block, 2), ElementsAre(1, 1));
  EXPECT_TRUE(p.ParallelCaps(block, 1).empty());  // two branches cannot share one GPU
}

TEST(SeriesParallel, DecomposesNestedForksAndIdentityBranches) {
  // a -> {b -> {c, d} -> e, identity} -> f -> g
  const std::vector<std::vector<LayerId>> inputs = {{}, {0}, {1}, {1}, {2, 3}, {4, 0}, {5}};
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f", "g"};
  ASSERT_OK_AND_ASSIGN(SpSeries tree, DecomposeSeriesParallel(inputs, names));
  ASSERT_EQ(tree.elements.size(), 3u);  // a, block(join f), g
  EXPECT_EQ(tree.elements[0].layer, 0);
  const SpElement& block = tree.elements[1];
  EXPECT_TRUE(block.is_block);
  EXPECT_EQ(block.layer, 5);
  ASSERT_EQ(block.branches.size(), 2u);
  ASSERT_EQ(block.branches[0].elements.size(), 2u);  // b, nested block(join e)
  EXPECT_TRUE(block.branches[0].elements[1].is_block);
  EXPECT_EQ(block.branches[0].elements[1].layer, 4);
  EXPECT_TRUE(block.branches[1].elements.empty());  // the identity edge a -> f
  EXPECT_EQ(tree.elements[2].layer, 6);
}

TEST(SeriesParallel, RejectsJoinsOfDifferentForks) {
  // a -> {b, c}; b -> {d, e}; d joins (b, c): the branches cross.
  const std::vector<std::vector<LayerId>> inputs = {{}, {0}, {0}, {1, 2}, {1}, {3, 4}};
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f"};
  EXPECT_THAT(DecomposeSeriesParallel(inputs, names),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not series-parallel")));
}

TEST(SeriesParallel, RejectsSeveralLayersReadingTheInput) {
  const std::vector<std::vector<LayerId>> inputs = {{}, {}, {0, 1}};
  const std::vector<std::string> names = {"a", "b", "c"};
  EXPECT_THAT(DecomposeSeriesParallel(inputs, names),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a and b both do")));
}

}  // namespace
}  // namespace wavepool::planner
