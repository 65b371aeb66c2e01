#include "wavepool/planner/burst_search.h"

#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/zoo.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/planner/burst_random_problems.h"
#include "tests/support/status_matchers.h"

namespace wavepool::planner {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::planner::testing::ExhaustiveOptimum;
using ::wavepool::planner::testing::RandomGraphShape;
using ::wavepool::planner::testing::RandomProblem;
using ::wavepool::testing::StatusIs;

void ExpectOptimal(const BurstProblem& problem, std::uint32_t seed) {
  const Nanos reference = ExhaustiveOptimum(problem);
  ASSERT_LT(reference, kInfeasible) << "seed " << seed << ": the all-ones plan is always feasible";
  auto result = SearchBurstAssignment(problem);
  ASSERT_OK(result.status()) << "seed " << seed;
  EXPECT_EQ(result->iteration, reference) << "seed " << seed;
  ASSERT_OK_AND_ASSIGN(BurstEvaluation evaluation, EvaluateAssignment(problem, result->assignment));
  EXPECT_EQ(evaluation.iteration, result->iteration) << "seed " << seed;
}

TEST(BurstSearch, MatchesExhaustiveOnRandomChains) {
  RandomGraphShape shape;
  shape.allow_forks = false;
  shape.max_layers = 6;
  for (std::uint32_t seed = 1; seed <= 120; ++seed) {
    const GpuCounts mode = seed % 2 ? GpuCounts::kPowersOfTwo : GpuCounts::kAllIntegers;
    ExpectOptimal(RandomProblem(seed, shape, mode, mode == GpuCounts::kPowersOfTwo ? 8 : 5), seed);
  }
}

TEST(BurstSearch, MatchesExhaustiveOnRandomBranchingGraphs) {
  RandomGraphShape shape;
  shape.allow_nested = false;
  shape.max_layers = 7;
  for (std::uint32_t seed = 1000; seed < 1150; ++seed) {
    const GpuCounts mode = seed % 2 ? GpuCounts::kPowersOfTwo : GpuCounts::kAllIntegers;
    ExpectOptimal(RandomProblem(seed, shape, mode, mode == GpuCounts::kPowersOfTwo ? 8 : 4), seed);
  }
}

TEST(BurstSearch, MatchesExhaustiveWithNestedForks) {
  RandomGraphShape shape;
  shape.max_layers = 8;
  shape.max_branch_layers = 4;
  for (std::uint32_t seed = 2000; seed < 2100; ++seed) {
    ExpectOptimal(RandomProblem(seed, shape, GpuCounts::kPowersOfTwo, 4), seed);
  }
}

TEST(BurstSearch, MatchesExhaustiveWithTwoNestedForksInOneBranch) {
  // a -> {b -> {c, d} -> e -> {f, g} -> h, i} -> j: the first branch holds two nested forks in
  // series, the case priced with a full min-plus product.
  const std::vector<std::vector<LayerId>> inputs = {{},     {0}, {1}, {1}, {2, 3},
                                                    {4},    {4}, {5, 6}, {0}, {7, 8}};
  for (std::uint32_t seed = 3000; seed < 3040; ++seed) {
    std::mt19937 rng(seed);
    ExpectOptimal(testing::RandomCosts(inputs, rng, GpuCounts::kPowersOfTwo, 2), seed);
  }
}

// The search reconstructs and re-evaluates its own optimum (an Internal error otherwise); this
// runs that check on the zoo's real graphs, profiles and network at several scales.
TEST(BurstSearch, ReconstructsItsOptimumOnZooModels) {
  const DeviceSpec device = FindDevice("a100").value();
  const CommModel comm(DefaultNetworkModel(device));
  for (const char* name : {"vgg16", "wide_resnet101_2", "inception_v3", "resnet50", "bert_base",
                           "branchy_tiny"}) {
    ASSERT_OK_AND_ASSIGN(ModelGraph model, BuiltinModel(name));
    const std::optional<LayerProfile> profile = FindBuiltinProfile(name, device.name);
    ComputeCostModelPtr compute =
        profile ? MakeProfiledCostModel(*profile, model, MakeAnalyticCostModel(device)).value()
                : MakeAnalyticCostModel(device);
    for (const auto& [gpus, batch, counts] :
         {std::tuple{8, 32, GpuCounts::kPowersOfTwo}, std::tuple{64, 1024, GpuCounts::kAllIntegers},
          std::tuple{1024, 1024, GpuCounts::kPowersOfTwo}}) {
      BurstOptions options;
      options.max_gpus = gpus;
      options.global_batch = batch;
      options.gpu_counts = counts;
      ASSERT_OK_AND_ASSIGN(BurstProblem problem,
                           BuildBurstProblem(model, *compute, comm, options));
      auto result = SearchBurstAssignment(problem);
      EXPECT_OK(result.status()) << name << " on " << gpus << " GPUs, batch " << batch;
    }
  }
}

// The search counts in int64 nanoseconds: a cost beyond them is an error naming the layer, not a
// wrapped (negative) time that would make the slowest layer look the fastest.
TEST(BurstProblem, RejectsCostsBeyondWhatTheSearchCanCount) {
  const DeviceSpec device = FindDevice("a100").value();
  const ComputeCostModelPtr compute = MakeAnalyticCostModel(device);
  BurstOptions options;
  options.max_gpus = 8;
  options.global_batch = 8;
  const auto problem = [&](const std::string& time_us, const CommModel& comm) {
    const std::string table = absl::StrCat(
        "name,type,inputs,input_shape,weight_shape,output_shape,time_us_per_sample\n"
        "stem,opaque:stem,,10,,10,1\n"
        "head,opaque:head,stem,10,,10,",
        time_us, "\n");
    return BuildBurstProblem(ParseLayerTable("m", table).value(), *compute, comm, options);
  };
  const CommModel comm(DefaultNetworkModel(device));
  ASSERT_OK(problem("1e6", comm).status());  // a second per sample is slow, not unsearchable
  for (const char* huge : {"1e300", "1e15"}) {
    EXPECT_THAT(problem(huge, comm), StatusIs(absl::StatusCode::kInvalidArgument,
                                              AllOf(HasSubstr("model m, layer head: "),
                                                    HasSubstr("the burst search can count"))))
        << huge;
  }
  // A network's latency reaches the search as each edge's fixed cost.
  NetworkModel slow = DefaultNetworkModel(device);
  slow.intra_node.alpha = Seconds(1e300);
  EXPECT_THAT(problem("1", CommModel(slow)), StatusIs(absl::StatusCode::kInvalidArgument,
                                                      HasSubstr("the burst search can count")));
}

}  // namespace
}  // namespace wavepool::planner
