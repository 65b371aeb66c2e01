// The order in which waiting jobs get GPUs (reconcile_placement.cpp): a preempting gang keeps
// the GPUs it nominated a short while rather than spreading over more nodes, and preempted
// background jobs are placed again before newer ones.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/reconciler.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kNs = FakeScene::kNamespace;

std::set<std::string> NodesOf(const api::TrainingJob& job) {
  std::set<std::string> nodes;
  for (const api::PodPlacement& p : job.status.placement) nodes.insert(p.node);
  return nodes;
}

// A bg job Running on node-a (4 GPUs); nodes b (2 GPUs), c and d (1 each) empty; then an
// exclusive 4-GPU fg gang that preempts the bg pod to have node-a whole.
struct NominatedNode : ::testing::Test {
  void SetUp() override {
    scene.AddNode("node-a", 4);
    scene.AddBackground("bg");
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    scene.SetGangPhase("bg", "Running");
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    ASSERT_EQ(scene.Job("bg").status.placement.at(0).node, "node-a");
    victim_gpu = scene.Job("bg").status.placement.at(0).gpu_uuids.at(0);
    scene.AddNode("node-b", 2);
    scene.AddNode("node-c", 1);
    scene.AddNode("node-d", 1);
    scene.AddForeground("fg", 4, /*allow_background=*/false);
    ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
    ASSERT_EQ(ConditionOf(scene.Job("fg"), api::kConditionPlaced).reason, "Preempting");
  }

  // The agent's report of the victim's GPU: its memory still in use (`busy`) or not.
  void ReportVictimMemory(bool busy) {
    for (api::GpuNode node : scene.cluster.ListGpuNodes()) {
      for (api::GpuStatus& gpu : node.status.gpus) {
        if (gpu.uuid != victim_gpu) continue;
        gpu.memory_wave.reset();
        if (busy) gpu.memory_wave = api::MemoryWave{gpu.memory_bytes, gpu.memory_bytes, 1.0};
      }
      scene.cluster.PutGpuNode(node);
    }
  }

  void Tick(std::chrono::seconds by) {
    scene.clock.Advance(by);
    scene.Heartbeat();
  }

  FakeScene scene;
  ControllerMetrics metrics;
  Reconciler reconciler{scene.cluster, scene.cluster, scene.Options(), &metrics};
  std::string victim_gpu;
};

TEST_F(NominatedNode, GangWaitsForItsNominatedGpusThatFreeWithinTheHoldRatherThanSpreading) {
  // The victim is gone, but the agent's last report still shows its memory on the GPU.
  scene.cluster.FinishTerminatingPods();
  ReportVictimMemory(/*busy=*/true);
  Tick(std::chrono::seconds(1));
  ASSERT_OK_AND_ASSIGN(ReconcileResult wait, reconciler.Reconcile(kNs, "fg"));
  EXPECT_TRUE(scene.cluster.PodsOfJob(kNs, "fg").empty());
  EXPECT_TRUE(wait.waiting_for_gpus);
  ASSERT_TRUE(wait.requeue_after.has_value());
  EXPECT_LE(*wait.requeue_after, std::chrono::seconds(10));
  const api::Condition placed = ConditionOf(scene.Job("fg"), api::kConditionPlaced);
  EXPECT_EQ(placed.reason, "Preempting");
  EXPECT_THAT(placed.message, HasSubstr("nominated on node-a"));

  // Nobody else takes node-a meanwhile: a newcomer goes elsewhere.
  scene.AddBackground("late-bg");
  ASSERT_OK(reconciler.Reconcile(kNs, "late-bg").status());
  ASSERT_EQ(scene.Job("late-bg").status.placement.size(), 1u);
  EXPECT_NE(scene.Job("late-bg").status.placement[0].node, "node-a");

  // The agent's next heartbeat shows the GPU free: the gang takes node-a whole.
  ReportVictimMemory(/*busy=*/false);
  Tick(std::chrono::seconds(1));
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_THAT(NodesOf(scene.Job("fg")), ElementsAre("node-a"));
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "fg").size(), 4u);
}

TEST_F(NominatedNode, GangIsPlacedElsewhereOnceTheHoldPassesWithoutTheGpusFreeing) {
  scene.cluster.FinishTerminatingPods();
  ReportVictimMemory(/*busy=*/true);
  Tick(std::chrono::seconds(1));
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_TRUE(scene.cluster.PodsOfJob(kNs, "fg").empty());
  Tick(std::chrono::seconds(9));
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_TRUE(scene.cluster.PodsOfJob(kNs, "fg").empty());  // 9 s into the 10 s hold.

  Tick(std::chrono::seconds(1));
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "fg").size(), 4u);
  EXPECT_GT(NodesOf(scene.Job("fg")).size(), 1u);
  EXPECT_EQ(NodesOf(scene.Job("fg")).count("node-a"), 1u);
}

TEST_F(NominatedNode, GangThatFitsNowhereElseKeepsItsNominationForTheHold) {
  // Without nodes b, c and d nothing else fits: the victim's job must not be placed right back
  // onto node-a while the agent still reports the memory in use.
  for (const std::string node : {"node-b", "node-c", "node-d"}) {
    scene.cluster.SetNodeState(node, NodeState{false, true, false});
  }
  scene.cluster.FinishTerminatingPods();
  ReportVictimMemory(/*busy=*/true);
  Tick(std::chrono::seconds(1));
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_THAT(ConditionOf(scene.Job("fg"), api::kConditionPlaced).message,
              HasSubstr("nothing else fits"));
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  EXPECT_TRUE(scene.CurrentPods("bg").empty());
  EXPECT_EQ(ConditionOf(scene.Job("bg"), api::kConditionPlaced).reason, kNotPlaceableReason);

  ReportVictimMemory(/*busy=*/false);
  Tick(std::chrono::seconds(1));
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_THAT(NodesOf(scene.Job("fg")), ElementsAre("node-a"));
}

// One GPU; bg job "old" Running on it, preempted by an exclusive fg gang; "new" created later.
struct PreemptedBackground : ::testing::Test {
  void SetUp() override {
    scene.AddNode("node-a", 1);
    scene.AddBackground("old");
    ASSERT_OK(reconciler.Reconcile(kNs, "old").status());
    scene.SetGangPhase("old", "Running");
    ASSERT_OK(reconciler.Reconcile(kNs, "old").status());
    scene.AddForeground("fg", 1, /*allow_background=*/false);
    ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
    scene.cluster.FinishTerminatingPods();
    ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
    ASSERT_EQ(scene.cluster.PodsOfJob(kNs, "fg").size(), 1u);
    ASSERT_OK(reconciler.Reconcile(kNs, "old").status());
    ASSERT_EQ(scene.Job("old").status.phase, api::JobPhase::kPreempted);
    ASSERT_EQ(ConditionOf(scene.Job("old"), api::kConditionPlaced).reason, kNotPlaceableReason);

    scene.clock.Advance(std::chrono::minutes(5));
    scene.Heartbeat();
    scene.AddBackground("new");
    ASSERT_OK(reconciler.Reconcile(kNs, "new").status());
    ASSERT_EQ(ConditionOf(scene.Job("new"), api::kConditionPlaced).reason, kNotPlaceableReason);
  }

  FakeScene scene;
  ControllerMetrics metrics;
  Reconciler reconciler{scene.cluster, scene.cluster, scene.Options(), &metrics};
};

TEST_F(PreemptedBackground, IsPlacedAgainBeforeANewerJobThatLooksFirst) {
  // The gang finishes; the newer job happens to look first.
  scene.SetGangPhase("fg", "Succeeded");
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  ASSERT_EQ(scene.Job("fg").status.phase, api::JobPhase::kSucceeded);
  ASSERT_OK(reconciler.Reconcile(kNs, "new").status());
  EXPECT_TRUE(scene.Job("new").status.placement.empty());
  EXPECT_THAT(ConditionOf(scene.Job("new"), api::kConditionPlaced).message,
              HasSubstr("1 background job(s) queued earlier are placed first"));

  ASSERT_OK(reconciler.Reconcile(kNs, "old").status());
  ASSERT_EQ(scene.Job("old").status.placement.size(), 1u);
  EXPECT_EQ(scene.CurrentPods("old").size(), 1u);
  ASSERT_OK(reconciler.Reconcile(kNs, "new").status());
  EXPECT_TRUE(scene.Job("new").status.placement.empty());
}

TEST_F(PreemptedBackground, ANewerJobTakesWhatTheOlderCannotUse) {
  // A second GPU frees as well: the older job is placed on one, the newer on the other, in
  // whichever order they look.
  scene.AddNode("node-b", 1);
  scene.SetGangPhase("fg", "Succeeded");
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  ASSERT_OK(reconciler.Reconcile(kNs, "new").status());
  ASSERT_OK(reconciler.Reconcile(kNs, "old").status());
  ASSERT_EQ(scene.Job("new").status.placement.size(), 1u);
  ASSERT_EQ(scene.Job("old").status.placement.size(), 1u);
  EXPECT_NE(scene.Job("new").status.placement[0].gpu_uuids,
            scene.Job("old").status.placement[0].gpu_uuids);
}

}  // namespace
}  // namespace wavepool::controller
