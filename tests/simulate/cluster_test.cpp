#include "wavepool/simulate/cluster.h"

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::simulate {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr planner::Bytes kGiB = planner::Bytes{1} << 30;

std::vector<std::string> Names(int jobs) {
  std::vector<std::string> names;
  for (int j = 0; j < jobs; ++j) names.push_back("job-" + std::to_string(j));
  return names;
}

ClusterShape Shape(int nodes, int gpus_per_node) {
  ClusterShape shape;
  shape.nodes = nodes;
  shape.gpus_per_node = gpus_per_node;
  shape.gpu_memory_bytes = 40 * kGiB;
  return shape;
}

// The GPU a controller decision names, by the simulated cluster's UUID scheme
// (GPU-<node>-<index>).
GpuId GpuOf(const std::string& uuid, int gpus_per_node) {
  int node = 0, index = 0;
  EXPECT_EQ(std::sscanf(uuid.c_str(), "GPU-%d-%d", &node, &index), 2) << uuid;
  return node * gpus_per_node + index;
}

// Fills a cluster at random: gangs of 1..8 GPUs (a quarter allowing background), background
// jobs beside them or alone, with memory that sometimes leaves no room for more.
struct RandomCluster {
  SimulatedCluster cluster;
  int next_job = 0;
};

RandomCluster Fill(std::mt19937& rng, int nodes, int gpus_per_node, int jobs) {
  RandomCluster r{*SimulatedCluster::Create(Shape(nodes, gpus_per_node), {}, Names(jobs + 64))};
  SimulatedCluster& c = r.cluster;
  std::uniform_int_distribution<int> gang(1, 8), coin(0, 3), memory(1, 24);
  for (int attempt = 0; attempt < jobs; ++attempt) {
    const JobId job = r.next_job++;
    if (coin(rng) >= 2) {
      const planner::Bytes bytes = memory(rng) * kGiB;
      auto decision = c.PlaceForeground(job, gang(rng), bytes, /*exclusive=*/coin(rng) == 0);
      if (!decision.ok()) continue;
      for (JobId victim : decision->preempted) {
        for (GpuId g = 0; g < c.gpu_count(); ++g) {
          if (c.BackgroundOn(g) == victim) c.ReleaseBackground(g);
        }
      }
      ForegroundTerms terms{bytes, coin(rng) / 4.0, /*allow_background=*/coin(rng) == 0, 1.1};
      c.AssignForeground(job, decision->gpus, terms);
    } else {
      const planner::Bytes bytes = memory(rng) * kGiB / 2;
      auto gpu = c.PlaceBackground(job, bytes);
      if (gpu.ok()) c.AssignBackground(job, *gpu, bytes);
    }
  }
  return r;
}

// Decisions on the few candidate nodes are the controller's on the whole cluster: the same GPUs
// in the same rank order, the same victims, the same refusals.
TEST(SimulatedCluster, DecidesAsTheControllersPlacementOnTheWholeCluster) {
  std::mt19937 rng(42);
  int decided = 0, refused = 0, preempting = 0;
  for (int round = 0; round < 80; ++round) {
    const int gpn = round % 2 == 0 ? 8 : 4;
    RandomCluster r = Fill(rng, 6, gpn, 2 * gpn);
    const SimulatedCluster& c = r.cluster;
    ASSERT_OK_AND_ASSIGN(controller::Inventory full, c.FullInventory());
    std::uniform_int_distribution<int> gang(1, 12), memory(1, 30), coin(0, 1);
    for (int q = 0; q < 8; ++q) {
      const JobId job = r.next_job + q;
      const std::int64_t gpus = gang(rng);
      const planner::Bytes bytes = memory(rng) * kGiB;
      const bool exclusive = coin(rng) == 1;
      controller::ForegroundRequest request;
      request.job = "job-" + std::to_string(job);
      request.gpus = gpus;
      request.memory_per_gpu_bytes = bytes;
      request.exclusive = exclusive;
      absl::StatusOr<controller::ForegroundPlacement> want =
          controller::PlaceForeground(request, full);
      absl::StatusOr<ForegroundDecision> got = c.PlaceForeground(job, gpus, bytes, exclusive);
      ASSERT_EQ(got.ok(), want.ok())
          << request.job << " " << gpus << " GPUs: " << (got.ok() ? want.status() : got.status());
      if (!got.ok()) {
        EXPECT_TRUE(controller::IsNotPlaceable(got.status()));
        ++refused;
        continue;
      }
      ++decided;
      std::vector<GpuId> want_gpus;
      for (const auto& rank : want->ranks) want_gpus.push_back(GpuOf(rank.gpu_uuid, gpn));
      EXPECT_EQ(got->gpus, want_gpus);
      std::vector<JobId> want_victims;
      for (const auto& p : want->preemptions) {
        want_victims.push_back(c.BackgroundOn(GpuOf(p.gpu_uuid, gpn)));
      }
      EXPECT_EQ(got->preempted, want_victims);
      preempting += !want_victims.empty();

      absl::StatusOr<controller::BackgroundPlacement> want_bg =
          controller::PlaceBackground({request.job, bytes / 2}, full);
      absl::StatusOr<GpuId> got_bg = c.PlaceBackground(job, bytes / 2);
      ASSERT_EQ(got_bg.ok(), want_bg.ok());
      if (got_bg.ok()) {
        EXPECT_EQ(*got_bg, GpuOf(want_bg->gpu_uuid, gpn));
      }
    }
  }
  // The rounds must cover every kind of answer for the comparison to mean anything.
  EXPECT_GT(decided, 200);
  EXPECT_GT(refused, 100);
  EXPECT_GT(preempting, 30);
}

TEST(SimulatedCluster, CountsWhatIsFreeAndWhatTakesBackground) {
  ASSERT_OK_AND_ASSIGN(SimulatedCluster c, SimulatedCluster::Create(Shape(2, 4), {}, Names(4)));
  EXPECT_EQ(c.free_for_foreground(), 8);
  EXPECT_EQ(c.open_for_background(), 8);
  c.AssignForeground(0, {0, 1, 2}, {4 * kGiB, 0.3, /*allow_background=*/true, 1.1});
  c.AssignForeground(1, {4, 5}, {4 * kGiB, 0.3, /*allow_background=*/false, 1.1});
  EXPECT_EQ(c.free_for_foreground(), 3);
  EXPECT_EQ(c.open_for_background(), 6);  // not beside job 1
  c.AssignBackground(2, 1, kGiB);
  EXPECT_EQ(c.open_for_background(), 5);
  EXPECT_EQ(c.BackgroundOn(1), 2);
  EXPECT_EQ(c.ForegroundOn(1), 0);
  c.ReleaseForeground(0, {0, 1, 2});
  EXPECT_EQ(c.free_for_foreground(), 6);
  EXPECT_EQ(c.open_for_background(), 5);
  c.ReleaseBackground(1);
  EXPECT_EQ(c.open_for_background(), 6);
}

// A background job shares a foreground GPU first (PlacementOptions::prefer_shared_gpus), the one
// whose plan leaves the most idle time; without the preference it takes an empty GPU.
TEST(SimulatedCluster, BackgroundFollowsThePlacementOptions) {
  ASSERT_OK_AND_ASSIGN(SimulatedCluster shared,
                       SimulatedCluster::Create(Shape(2, 2), {}, Names(3)));
  shared.AssignForeground(0, {2}, {4 * kGiB, 0.2, true, 1.1});
  shared.AssignForeground(1, {3}, {4 * kGiB, 0.6, true, 1.1});
  ASSERT_OK_AND_ASSIGN(GpuId g, shared.PlaceBackground(2, kGiB));
  EXPECT_EQ(g, 3);
  controller::PlacementOptions empty_first;
  empty_first.prefer_shared_gpus = false;
  ASSERT_OK_AND_ASSIGN(SimulatedCluster apart,
                       SimulatedCluster::Create(Shape(2, 2), empty_first, Names(3)));
  apart.AssignForeground(0, {2}, {4 * kGiB, 0.2, true, 1.1});
  apart.AssignForeground(1, {3}, {4 * kGiB, 0.6, true, 1.1});
  ASSERT_OK_AND_ASSIGN(GpuId h, apart.PlaceBackground(2, kGiB));
  EXPECT_EQ(h, 0);
}

TEST(SimulatedCluster, RefusesWhatCannotBePlacedNow) {
  ASSERT_OK_AND_ASSIGN(SimulatedCluster c, SimulatedCluster::Create(Shape(1, 4), {}, Names(3)));
  c.AssignForeground(0, {0, 1, 2}, {4 * kGiB, 0.3, false, 1.1});
  EXPECT_THAT(c.PlaceForeground(1, 2, kGiB, false),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("job-1 needs 2 GPUs")));
  // More memory than a 40 GiB GPU offers after the 2 GiB margin.
  EXPECT_THAT(c.PlaceForeground(1, 1, 39 * kGiB, false),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("job-1")));
  c.AssignBackground(2, 3, kGiB);
  EXPECT_THAT(c.PlaceBackground(1, kGiB),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("no GPU takes it")));
  EXPECT_EQ(c.margin_bytes(), 2 * kGiB);  // 5% of 40 GiB (controller PlacementOptions)
}

TEST(SimulatedCluster, RejectsABadShapeNamingTheField) {
  EXPECT_THAT(SimulatedCluster::Create(Shape(0, 8), {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nodes")));
  EXPECT_THAT(SimulatedCluster::Create(Shape(1, 65), {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus_per_node")));
  controller::PlacementOptions two;
  two.max_background_per_gpu = 2;
  EXPECT_THAT(SimulatedCluster::Create(Shape(1, 8), two, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_background_per_gpu")));
}

}  // namespace
}  // namespace wavepool::simulate
