#include "wavepool/controller/placement.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/inventory_pods.h"
#include "tests/support/status_matchers.h"

namespace wavepool::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::wavepool::testing::StatusIs;

constexpr Bytes kGiB = Bytes{1} << 30;

std::string Uuid(const std::string& node, int index) {
  return "GPU-" + node + "-" + std::to_string(index);
}

api::GpuNode Node(const std::string& name, int gpus, Bytes memory = 40 * kGiB) {
  api::GpuNode node;
  node.metadata.name = name;
  node.spec.node_name = name;
  for (int i = 0; i < gpus; ++i) {
    api::GpuStatus gpu;
    gpu.index = i;
    gpu.uuid = Uuid(name, i);
    gpu.memory_bytes = memory;
    node.status.gpus.push_back(gpu);
  }
  return node;
}

std::map<std::string, NodeState> AllReady(const std::vector<api::GpuNode>& nodes) {
  std::map<std::string, NodeState> states;
  for (const api::GpuNode& node : nodes) states[node.spec.node_name] = {true, true, true};
  return states;
}

// A fixed 1 GiB margin keeps the arithmetic of the tests easy to check by hand.
PlacementOptions FixedMargin() {
  PlacementOptions options;
  options.memory_margin_fraction = 0;
  options.memory_margin_min_bytes = kGiB;
  return options;
}

GpuAssignment Fg(const std::string& pod, const std::vector<std::string>& uuids, Bytes memory,
                 double idle = 0.3, bool allow_background = true) {
  GpuAssignment a;
  a.job = "ns/" + pod;
  a.pod = pod;
  a.role = api::Role::kForeground;
  a.gpu_uuids = uuids;
  a.memory_per_gpu_bytes = memory;
  a.idle_fraction = idle;
  a.allow_background = allow_background;
  return a;
}

GpuAssignment Bg(const std::string& pod, const std::string& uuid, Bytes memory,
                 double progress_at_risk_seconds = 0) {
  GpuAssignment a;
  a.job = "ns/" + pod;
  a.pod = pod;
  a.role = api::Role::kBackground;
  a.gpu_uuids = {uuid};
  a.memory_per_gpu_bytes = memory;
  a.progress_at_risk = planner::Seconds(progress_at_risk_seconds);
  return a;
}

Inventory MustBuild(const std::vector<api::GpuNode>& nodes,
                    const std::vector<GpuAssignment>& assignments = {},
                    const PlacementOptions& options = FixedMargin()) {
  auto inventory = Inventory::Build(nodes, AllReady(nodes), assignments, options);
  EXPECT_TRUE(inventory.ok()) << inventory.status();
  return *inventory;
}

ForegroundRequest FgRequest(std::int64_t gpus, Bytes memory = 10 * kGiB, bool exclusive = false) {
  ForegroundRequest request;
  request.job = "ns/train";
  request.gpus = gpus;
  request.memory_per_gpu_bytes = memory;
  request.exclusive = exclusive;
  return request;
}

std::vector<std::string> RankUuids(const ForegroundPlacement& placement) {
  std::vector<std::string> uuids;
  for (const RankPlacement& rank : placement.ranks) uuids.push_back(rank.gpu_uuid);
  return uuids;
}

std::vector<std::string> PreemptedPods(const ForegroundPlacement& placement) {
  std::vector<std::string> pods;
  for (const Preemption& p : placement.preemptions) pods.push_back(p.pod);
  return pods;
}

TEST(PlaceForeground, EightGpusOverNodesOfFourFreeTakeTwoNodes) {
  Inventory inv = MustBuild({Node("node-a", 4), Node("node-b", 4), Node("node-c", 4)});
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement placement, PlaceForeground(FgRequest(8), inv));
  EXPECT_THAT(placement.nodes, ElementsAre("node-a", "node-b"));
  ASSERT_EQ(placement.ranks.size(), 8U);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(placement.ranks[r].rank, r);
    EXPECT_EQ(placement.ranks[r].node, r < 4 ? "node-a" : "node-b");
    EXPECT_EQ(placement.ranks[r].gpu_index, r % 4);
  }
  EXPECT_TRUE(placement.preemptions.empty());
}

TEST(PlaceForeground, NotEnoughGpusPlacesNothingAndSaysWhy) {
  // 8 GPUs, one held by a fg job: 7 usable, the gang of 8 gets none of them.
  Inventory inv = MustBuild({Node("node-a", 4), Node("node-b", 4)},
                            {Fg("other", {Uuid("node-b", 0)}, 10 * kGiB)});
  auto placement = PlaceForeground(FgRequest(8), inv);
  EXPECT_TRUE(IsNotPlaceable(placement.status()));
  EXPECT_THAT(placement, StatusIs(absl::StatusCode::kResourceExhausted,
                                  AllOf(HasSubstr("ns/train needs 8 GPUs with 10.0 GiB free each"),
                                        HasSubstr("largest fit: 4 on node-a"),
                                        HasSubstr("usable: 7 GPUs on 2 nodes"),
                                        HasSubstr("1 held by foreground jobs"))));
}

TEST(PlaceForeground, TheWaitMessageNamesOnlyWhatHoldsGpusBack) {
  // The only GPU is held by a foreground job: one reason, singular nouns, no zero counts.
  Inventory inv = MustBuild({Node("node-a", 1)}, {Fg("other", {Uuid("node-a", 0)}, 10 * kGiB)});
  auto placement = PlaceForeground(FgRequest(1), inv);
  EXPECT_THAT(placement,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("ns/train needs 1 GPU with 10.0 GiB free each"),
                             HasSubstr("unusable GPUs: 1 held by foreground jobs"),
                             Not(HasSubstr("too little memory")), Not(HasSubstr("not ready")))));
}

TEST(PlaceForeground, OneNodeWhenItFitsChoosingTheTightestFit) {
  // node-a has 5 free (3 held by fg), node-b 4, node-c 8: 4 GPUs go to node-b (tightest fit keeps
  // node-c whole); 6 GPUs fit only on node-c.
  Inventory inv =
      MustBuild({Node("node-a", 8), Node("node-b", 4), Node("node-c", 8)},
                {Fg("other", {Uuid("node-a", 0), Uuid("node-a", 1), Uuid("node-a", 2)}, kGiB)});
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement four, PlaceForeground(FgRequest(4), inv));
  EXPECT_THAT(four.nodes, ElementsAre("node-b"));
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement six, PlaceForeground(FgRequest(6), inv));
  EXPECT_THAT(six.nodes, ElementsAre("node-c"));
  EXPECT_THAT(RankUuids(six), ElementsAre(Uuid("node-c", 0), Uuid("node-c", 1), Uuid("node-c", 2),
                                          Uuid("node-c", 3), Uuid("node-c", 4), Uuid("node-c", 5)));
}

TEST(PlaceForeground, FewestNodesAndMaxNodes) {
  // Free: a 2, b 2, c 6. 8 GPUs: c (6) plus one 2-GPU node (a by name), 2 nodes instead of 3.
  Inventory inv = MustBuild({Node("node-a", 2), Node("node-b", 2), Node("node-c", 6)});
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement placement, PlaceForeground(FgRequest(8), inv));
  EXPECT_THAT(placement.nodes, ElementsAre("node-a", "node-c"));
  EXPECT_EQ(placement.ranks[1].gpu_uuid, Uuid("node-a", 1));
  EXPECT_EQ(placement.ranks[2].gpu_uuid, Uuid("node-c", 0));

  ForegroundRequest one_node = FgRequest(8);
  one_node.max_nodes = 1;
  EXPECT_THAT(PlaceForeground(one_node, inv),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("needs 8 GPUs with 10.0 GiB free each on at most 1 node"),
                             HasSubstr("largest fit: 6 on node-c"))));
}

TEST(PlaceForeground, PrefersGpusWithoutBackgroundPods) {
  Inventory inv = MustBuild({Node("node-a", 4)}, {Bg("bg", Uuid("node-a", 0), 5 * kGiB)});
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement placement, PlaceForeground(FgRequest(3), inv));
  EXPECT_THAT(RankUuids(placement),
              ElementsAre(Uuid("node-a", 1), Uuid("node-a", 2), Uuid("node-a", 3)));
  EXPECT_TRUE(placement.preemptions.empty());
  // All four: the bg pod stays, 10 + 5 GiB fit in 40 - 1 GiB.
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement all, PlaceForeground(FgRequest(4), inv));
  EXPECT_TRUE(all.preemptions.empty());
}

TEST(PlaceForeground, ExclusiveJobPreemptsBackgroundWithLeastProgressAtRisk) {
  Inventory inv = MustBuild({Node("node-a", 2)}, {Bg("bg-0", Uuid("node-a", 0), kGiB, 100),
                                                  Bg("bg-1", Uuid("node-a", 1), kGiB, 10)});
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement one,
                       PlaceForeground(FgRequest(1, 10 * kGiB, /*exclusive=*/true), inv));
  EXPECT_THAT(RankUuids(one), ElementsAre(Uuid("node-a", 1)));
  ASSERT_EQ(one.preemptions.size(), 1U);
  EXPECT_EQ(one.preemptions[0].pod, "bg-1");
  EXPECT_EQ(one.preemptions[0].job, "ns/bg-1");
  EXPECT_EQ(one.preemptions[0].gpu_uuid, Uuid("node-a", 1));
  EXPECT_THAT(one.preemptions[0].reason, HasSubstr("needed by foreground job ns/train"));

  ASSERT_OK_AND_ASSIGN(ForegroundPlacement both,
                       PlaceForeground(FgRequest(2, 10 * kGiB, /*exclusive=*/true), inv));
  EXPECT_THAT(PreemptedPods(both), ElementsAre("bg-0", "bg-1"));
}

TEST(PlaceForeground, MemoryShortfallPreemptsFewestPodsThenLeastProgress) {
  // One 40 GiB GPU, 1 GiB margin: 39 GiB available. bg p1 10 GiB (5 s at risk), p2 10 GiB (50 s),
  // p3 20 GiB (100 s). A fg rank of 25 GiB leaves 14 GiB for bg pods. No single pod frees enough
  // (40 - 20 = 20 > 14); of the pairs, {p1, p3} keeps 10 GiB at 105 s lost, {p2, p3} keeps 10 GiB
  // at 150 s, {p1, p2} keeps 20 GiB (too much). So p1 and p3 go.
  PlacementOptions options = FixedMargin();
  options.max_background_per_gpu = 3;
  const std::string gpu = Uuid("node-a", 0);
  Inventory inv = MustBuild(
      {Node("node-a", 1)},
      {Bg("p1", gpu, 10 * kGiB, 5), Bg("p2", gpu, 10 * kGiB, 50), Bg("p3", gpu, 20 * kGiB, 100)},
      options);
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement placement,
                       PlaceForeground(FgRequest(1, 25 * kGiB), inv));
  EXPECT_THAT(PreemptedPods(placement), ElementsAre("p1", "p3"));
  // 40 GiB can never fit next to the 1 GiB margin, whatever is preempted.
  EXPECT_THAT(
      PlaceForeground(FgRequest(1, 40 * kGiB), inv),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("1 with too little memory")));
}

TEST(PlaceForeground, NeverPreemptsForegroundOrUsesUnschedulableNodes) {
  std::vector<api::GpuNode> nodes = {Node("node-a", 2), Node("node-b", 2)};
  std::map<std::string, NodeState> states = AllReady(nodes);
  states["node-b"].heartbeat_fresh = false;
  ASSERT_OK_AND_ASSIGN(
      Inventory inv,
      Inventory::Build(nodes, states, {Fg("other", {Uuid("node-a", 0)}, kGiB)}, FixedMargin()));
  EXPECT_THAT(PlaceForeground(FgRequest(2, kGiB, /*exclusive=*/true), inv),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("2 on nodes not ready, unmanaged or without a fresh"),
                             HasSubstr("1 held by foreground jobs"))));
}

TEST(PlaceBackground, GoesToTheSharedGpuWithTheMostIdleTime) {
  Inventory inv = MustBuild({Node("node-a", 2), Node("node-b", 1)},
                            {Fg("fg-low", {Uuid("node-a", 0)}, 10 * kGiB, /*idle=*/0.2),
                             Fg("fg-high", {Uuid("node-a", 1)}, 10 * kGiB, /*idle=*/0.5)});
  ASSERT_OK_AND_ASSIGN(BackgroundPlacement placement, PlaceBackground({"ns/bg", 4 * kGiB}, inv));
  EXPECT_EQ(placement.gpu_uuid, Uuid("node-a", 1));
  EXPECT_EQ(placement.fg_job, "ns/fg-high");

  PlacementOptions empty_first = FixedMargin();
  empty_first.prefer_shared_gpus = false;  // Then the empty GPU (all idle) wins.
  Inventory inv2 = MustBuild({Node("node-a", 2), Node("node-b", 1)},
                             {Fg("fg-low", {Uuid("node-a", 0)}, 10 * kGiB, 0.2),
                              Fg("fg-high", {Uuid("node-a", 1)}, 10 * kGiB, 0.5)},
                             empty_first);
  ASSERT_OK_AND_ASSIGN(BackgroundPlacement empty, PlaceBackground({"ns/bg", 4 * kGiB}, inv2));
  EXPECT_EQ(empty.gpu_uuid, Uuid("node-b", 0));
  EXPECT_EQ(empty.fg_job, "");
}

TEST(PlaceBackground, NeverPastAGpusMemory) {
  // 40 GiB GPU; fg declared 30 GiB but the agent saw a 32 GiB peak: committed 32 GiB, margin
  // 1 GiB, headroom 40 - 32 - 1 = 7 GiB.
  std::vector<api::GpuNode> nodes = {Node("node-a", 1)};
  nodes[0].status.gpus[0].memory_wave = api::MemoryWave{32 * kGiB, 20 * kGiB, 0.1, 0.05, 8 * kGiB};
  ASSERT_OK_AND_ASSIGN(Inventory inv,
                       Inventory::Build(nodes, AllReady(nodes),
                                        {Fg("fg", {Uuid("node-a", 0)}, 30 * kGiB)}, FixedMargin()));
  EXPECT_EQ(inv.CommittedBytes(inv.gpus()[0]), 32 * kGiB);
  EXPECT_EQ(inv.HeadroomBytes(inv.gpus()[0]), 7 * kGiB);
  EXPECT_OK(PlaceBackground({"ns/bg", 7 * kGiB}, inv).status());
  EXPECT_THAT(PlaceBackground({"ns/bg", 7 * kGiB + 1}, inv),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("1 with too little memory"),
                             HasSubstr("most headroom: 7.0 GiB on node-a GPU 0"))));
}

TEST(PlaceBackground, SkipsGpusWhoseForegroundDisallowsBackground) {
  GpuAssignment strict = Fg("strict", {Uuid("node-a", 1)}, kGiB, /*idle=*/0.5);
  strict.max_foreground_slowdown = 1.0;  // No interference tolerated.
  Inventory inv =
      MustBuild({Node("node-a", 3)}, {Fg("closed", {Uuid("node-a", 0)}, kGiB, /*idle=*/0.9, false),
                                      strict, Fg("open", {Uuid("node-a", 2)}, kGiB, /*idle=*/0.1)});
  ASSERT_OK_AND_ASSIGN(BackgroundPlacement placement, PlaceBackground({"ns/bg", kGiB}, inv));
  EXPECT_EQ(placement.gpu_uuid, Uuid("node-a", 2));
  ASSERT_OK(inv.Add(Bg("bg", Uuid("node-a", 2), kGiB)));
  // The open GPU now runs its one bg pod; nothing else takes another.
  EXPECT_THAT(PlaceBackground({"ns/bg2", kGiB}, inv),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("2 whose foreground job disallows background"),
                             HasSubstr("1 already running 1 background pod(s)"))));
}

TEST(PlaceBackground, NeverOnANodeTheJobIsKeptOff) {
  Inventory inv = MustBuild({Node("node-a", 2), Node("node-b", 1)}, {});
  BackgroundRequest request{"ns/bg", kGiB, {"node-a"}};
  ASSERT_OK_AND_ASSIGN(BackgroundPlacement placement, PlaceBackground(request, inv));
  EXPECT_EQ(placement.node, "node-b");
  request.excluded_nodes.insert("node-b");
  EXPECT_THAT(PlaceBackground(request, inv),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("3 on nodes where it used the GPU outside its launch gate")));
  // Without exclusions the message does not mention them.
  ASSERT_OK(inv.Add(Bg("bg-1", Uuid("node-a", 0), kGiB)));
  ASSERT_OK(inv.Add(Bg("bg-2", Uuid("node-a", 1), kGiB)));
  ASSERT_OK(inv.Add(Bg("bg-3", Uuid("node-b", 0), kGiB)));
  EXPECT_THAT(PlaceBackground({"ns/bg", kGiB}, inv),
              StatusIs(absl::StatusCode::kResourceExhausted, Not(HasSubstr("launch gate"))));
}

TEST(Placement, DeterministicWhateverTheInputOrder) {
  std::vector<api::GpuNode> nodes = {Node("node-a", 4), Node("node-b", 4), Node("node-c", 4)};
  std::vector<GpuAssignment> held = {Bg("bg-1", Uuid("node-b", 2), kGiB),
                                     Fg("fg", {Uuid("node-c", 0)}, kGiB)};
  Inventory forward = MustBuild(nodes, held);
  std::reverse(nodes.begin(), nodes.end());
  std::reverse(held.begin(), held.end());
  Inventory backward = MustBuild(nodes, held);
  for (std::int64_t gpus : {1, 3, 4, 6, 9}) {
    ASSERT_OK_AND_ASSIGN(ForegroundPlacement a, PlaceForeground(FgRequest(gpus), forward));
    ASSERT_OK_AND_ASSIGN(ForegroundPlacement b, PlaceForeground(FgRequest(gpus), backward));
    EXPECT_EQ(RankUuids(a), RankUuids(b)) << gpus << " GPUs";
    EXPECT_EQ(a.nodes, b.nodes);
  }
  ASSERT_OK_AND_ASSIGN(BackgroundPlacement a, PlaceBackground({"ns/bg", kGiB}, forward));
  ASSERT_OK_AND_ASSIGN(BackgroundPlacement b, PlaceBackground({"ns/bg", kGiB}, backward));
  EXPECT_EQ(a.gpu_uuid, b.gpu_uuid);
  EXPECT_EQ(a.gpu_uuid, Uuid("node-c", 0));  // The only shared GPU.
}

TEST(Placement, EqualCostVictimsAreChosenByPodName) {
  // Two 15 GiB bg pods, equal progress at risk; a 20 GiB fg rank leaves 39 - 20 = 19 GiB, so one
  // must go: "bg-a" by name, whichever order the pods were recorded in.
  PlacementOptions options = FixedMargin();
  options.max_background_per_gpu = 2;
  const std::string gpu = Uuid("node-a", 0);
  for (bool reversed : {false, true}) {
    std::vector<GpuAssignment> held = {Bg("bg-a", gpu, 15 * kGiB, 7),
                                       Bg("bg-b", gpu, 15 * kGiB, 7)};
    if (reversed) std::reverse(held.begin(), held.end());
    Inventory inv = MustBuild({Node("node-a", 1)}, held, options);
    ASSERT_OK_AND_ASSIGN(ForegroundPlacement placement,
                         PlaceForeground(FgRequest(1, 20 * kGiB), inv));
    EXPECT_THAT(PreemptedPods(placement), ElementsAre("bg-a")) << "reversed " << reversed;
  }
}

TEST(Placement, BadRequestsAreInvalidArgumentNamingTheField) {
  Inventory inv = MustBuild({Node("node-a", 2)});
  EXPECT_THAT(
      PlaceForeground(FgRequest(0), inv),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request.gpus: must be >= 1, got 0")));
  EXPECT_THAT(PlaceForeground(FgRequest(1, -1), inv),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("request.memory_per_gpu_bytes: must be >= 0, got -1")));
  ForegroundRequest nodes = FgRequest(1);
  nodes.max_nodes = -1;
  EXPECT_THAT(PlaceForeground(nodes, inv),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request.max_nodes")));
  EXPECT_THAT(PlaceBackground({"ns/bg", -5}, inv),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("request.memory_bytes: must be >= 0, got -5")));
}

TEST(Inventory, RejectsBadNodesAndAssignments) {
  std::vector<api::GpuNode> nodes = {Node("node-a", 2)};
  auto build = [&](const std::vector<GpuAssignment>& held) {
    return Inventory::Build(nodes, AllReady(nodes), held);
  };
  const std::string gpu = Uuid("node-a", 0);
  EXPECT_THAT(build({Bg("bg", gpu, -1)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pod \"bg\" (job ns/bg): memory_per_gpu_bytes: must be >= 0")));
  EXPECT_THAT(
      build({Fg("a", {gpu}, kGiB), Fg("b", {gpu}, kGiB)}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("already runs foreground pod \"a\"")));
  EXPECT_THAT(build({Bg("x", gpu, kGiB), Bg("x", Uuid("node-a", 1), kGiB)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pod: already holds")));
  EXPECT_THAT(build({Fg("f", {gpu}, kGiB, /*idle=*/1.5)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("idle_fraction")));
  GpuAssignment two_gpus = Bg("bg", gpu, kGiB);
  two_gpus.gpu_uuids.push_back(Uuid("node-a", 1));
  EXPECT_THAT(build({two_gpus}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exactly 1 GPU, got 2")));

  nodes[0].status.gpus[1].memory_wave = api::MemoryWave{-1, 0, 0, 0, 0};
  EXPECT_THAT(build({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("status.gpus[1].memoryWave.peakBytes: must be >= 0")));
  nodes[0].status.gpus[1].memory_wave.reset();

  nodes.push_back(Node("node-a", 1));
  nodes.back().metadata.name = nodes.back().spec.node_name = "node-b";
  nodes.back().status.gpus[0].uuid = gpu;  // Same UUID as node-a's GPU 0.
  EXPECT_THAT(build({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("uuid: must be non-empty and unique")));
  nodes.pop_back();
  nodes[0].spec.node_name.clear();
  EXPECT_THAT(build({}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.nodeName")));
}

TEST(Inventory, DefaultMarginIsFivePercentWithAOneGiBFloor) {
  // 80 GiB: 5% = 4 GiB. 16 GiB: 5% = 0.8 GiB < 1 GiB floor.
  ASSERT_OK_AND_ASSIGN(Inventory inv,
                       Inventory::Build({Node("big", 1, 80 * kGiB), Node("small", 1, 16 * kGiB)},
                                        {{"big", {true, true, true}}}, {}));
  EXPECT_EQ(inv.MarginBytes(inv.gpus()[0]), 4 * kGiB);
  EXPECT_EQ(inv.MarginBytes(inv.gpus()[1]), kGiB);
  EXPECT_TRUE(inv.gpus()[0].schedulable);
  EXPECT_FALSE(inv.gpus()[1].schedulable);  // Absent from the node states.
}

TEST(Inventory, AddRemoveAndOrphans) {
  Inventory inv = MustBuild({Node("node-a", 2)}, {Bg("gone", "GPU-vanished", kGiB)});
  EXPECT_THAT(inv.orphaned_pods(), ElementsAre("gone"));
  ASSERT_OK_AND_ASSIGN(ForegroundPlacement fg, PlaceForeground(FgRequest(2), inv));
  ASSERT_OK(inv.Add(Fg("train", RankUuids(fg), 10 * kGiB)));
  EXPECT_THAT(PlaceForeground(FgRequest(1), inv),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("2 held by foreground")));
  ASSERT_OK(inv.Remove("train"));
  EXPECT_OK(PlaceForeground(FgRequest(2), inv).status());
  EXPECT_THAT(inv.Remove("train"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("train")));
  EXPECT_THAT(inv.orphaned_pods(), ElementsAre("gone"));
}

TEST(Inventory, ARemovedPodsSlotIsReusedWithoutDisturbingTheOthers) {
  Inventory inv = MustBuild({Node("node-a", 2)},
                            {Bg("b0", Uuid("node-a", 0), kGiB), Bg("b1", Uuid("node-a", 1), kGiB),
                             Fg("f", {Uuid("node-a", 0)}, kGiB)});
  ASSERT_OK(inv.Remove("b0"));
  ASSERT_OK(inv.Add(Bg("b2", Uuid("node-a", 1), 2 * kGiB)));
  EXPECT_FALSE(inv.Holds("b0"));
  EXPECT_TRUE(inv.Holds("b2"));
  EXPECT_EQ(PodsByGpu(inv), (std::map<std::string, std::vector<std::string>>{
                                {Uuid("node-a", 0), {"f"}}, {Uuid("node-a", 1), {"b1", "b2"}}}));
  EXPECT_EQ(inv.CommittedBytes(inv.gpus()[1]), 3 * kGiB);
}

TEST(Inventory, UndoTrialRestoresThePodsNewestFirst) {
  Inventory inv = MustBuild({Node("node-a", 2)}, {Fg("train", {Uuid("node-a", 0)}, 10 * kGiB),
                                                  Bg("bg", Uuid("node-a", 1), kGiB)});
  const auto before = PodsByGpu(inv);
  inv.StartTrial();
  ASSERT_OK(inv.Remove("train"));
  // The GPU the removed fg pod held takes another fg pod within the trial.
  ASSERT_OK(inv.Add(Fg("other", {Uuid("node-a", 0), Uuid("node-a", 1)}, 20 * kGiB)));
  ASSERT_OK(inv.Remove("bg"));
  ASSERT_OK(inv.Remove("other"));
  ASSERT_OK(inv.Add(Bg("bg", Uuid("node-a", 0), 5 * kGiB)));  // The same name, elsewhere.
  ASSERT_OK(inv.Add(Bg("lost", Uuid("node-z", 0), kGiB)));    // Orphaned.
  inv.UndoTrial();
  EXPECT_EQ(PodsByGpu(inv), before);
  EXPECT_THAT(inv.orphaned_pods(), ::testing::IsEmpty());
  EXPECT_FALSE(inv.Holds("other"));
  EXPECT_EQ(inv.CommittedBytes(inv.gpus()[0]), 10 * kGiB);
  EXPECT_EQ(inv.CommittedBytes(inv.gpus()[1]), kGiB);
  // Outside a trial nothing is recorded: a later undo-free change stays.
  ASSERT_OK(inv.Remove("bg"));
  EXPECT_FALSE(inv.Holds("bg"));
}

TEST(Inventory, SetGpusWithTheSameGpusKeepsThePodsAndTakesTheNewFigures) {
  std::vector<api::GpuNode> nodes = {Node("node-a", 2)};
  Inventory inv = MustBuild(nodes, {Fg("train", {Uuid("node-a", 0)}, 10 * kGiB)});
  nodes[0].status.gpus[0].memory_wave = api::MemoryWave{30 * kGiB, 0, 0, 0, 0};
  nodes[0].status.gpus[1].memory_bytes = 20 * kGiB;
  std::map<std::string, NodeState> states = AllReady(nodes);
  states["node-a"].heartbeat_fresh = false;
  ASSERT_OK(inv.SetGpus(nodes, states));
  EXPECT_EQ(PodsByGpu(inv)[Uuid("node-a", 0)], std::vector<std::string>{"train"});
  EXPECT_EQ(inv.CommittedBytes(inv.gpus()[0]), 30 * kGiB);
  EXPECT_EQ(inv.gpus()[1].memory_bytes, 20 * kGiB);
  EXPECT_FALSE(inv.gpus()[0].schedulable);
  EXPECT_THAT(inv.Add(Fg("second", {Uuid("node-a", 0)}, kGiB)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("already runs foreground")));
}

TEST(Inventory, SetGpusWithOtherGpusRecordsThePodsAgainAndAFailureChangesNothing) {
  Inventory inv = MustBuild({Node("node-a", 1)}, {Bg("early", Uuid("node-b", 0), kGiB),
                                                  Bg("here", Uuid("node-a", 0), kGiB)});
  EXPECT_THAT(inv.orphaned_pods(), ElementsAre("early"));
  std::vector<api::GpuNode> nodes = {Node("node-a", 1), Node("node-b", 1)};
  ASSERT_OK(inv.SetGpus(nodes, AllReady(nodes)));
  EXPECT_THAT(inv.orphaned_pods(), ::testing::IsEmpty());
  EXPECT_EQ(PodsByGpu(inv), (std::map<std::string, std::vector<std::string>>{
                                {Uuid("node-a", 0), {"here"}}, {Uuid("node-b", 0), {"early"}}}));
  std::vector<api::GpuNode> bad = nodes;
  bad[1].status.gpus[0].uuid = Uuid("node-a", 0);
  EXPECT_THAT(inv.SetGpus(bad, AllReady(bad)), StatusIs(absl::StatusCode::kInvalidArgument,
                                                        HasSubstr("must be non-empty and unique")));
  EXPECT_EQ(inv.gpus().size(), 2u);
  EXPECT_EQ(PodsByGpu(inv)[Uuid("node-b", 0)], std::vector<std::string>{"early"});
  ASSERT_OK(inv.SetGpus({Node("node-a", 1)}, AllReady({Node("node-a", 1)})));
  EXPECT_THAT(inv.orphaned_pods(), ElementsAre("early"));
  ASSERT_NE(inv.FindGpu(Uuid("node-a", 0)), nullptr);
  EXPECT_EQ(inv.FindGpu(Uuid("node-b", 0)), nullptr);
}

TEST(IdleFraction, IsIdleGpuSecondsOverIterationTimesGpus) {
  api::PlanPredictions predictions;
  predictions.iteration_seconds = 0.1;
  predictions.background_idle_gpu_seconds = 0.1;  // 0.1 / (0.1 x 4) = 0.25
  EXPECT_DOUBLE_EQ(IdleFraction(predictions, 4), 0.25);
  predictions.iteration_seconds = 0;
  EXPECT_EQ(IdleFraction(predictions, 4), 0);
}

}  // namespace
}  // namespace wavepool::controller
