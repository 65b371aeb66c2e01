// What the reconciler makes of the GPUNodes (reconciler.h, docs/controller.md "Invalid GPUNodes"
// and "Heartbeats", against FakeCluster): an invalid GPUNode is withheld and reported without
// blocking the others, and heartbeat freshness is judged on the controller's clock, whatever
// the node's clock says.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/cluster.h"
#include "wavepool/controller/reconciler.h"

namespace wavepool::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr std::string_view kNs = FakeScene::kNamespace;

api::GpuNode NodeNamed(const FakeCluster& cluster, const std::string& name) {
  for (api::GpuNode& node : cluster.ListGpuNodes()) {
    if (node.metadata.name == name) return node;
  }
  ADD_FAILURE() << "no GPUNode " << name;
  return {};
}

const api::Condition* InvalidCondition(const FakeCluster& cluster, const std::string& node) {
  static api::Condition copy;
  const api::GpuNode gpu_node = NodeNamed(cluster, node);
  const api::Condition* c =
      api::FindCondition(gpu_node.status.conditions, kGpuNodeConditionInvalid);
  if (c == nullptr) return nullptr;
  copy = *c;
  return &copy;
}

std::vector<FakeCluster::RecordedEvent> EventsOn(const FakeCluster& cluster,
                                                 const std::string& object) {
  std::vector<FakeCluster::RecordedEvent> out;
  for (FakeCluster::RecordedEvent& e : cluster.Events()) {
    if (e.object == object) out.push_back(std::move(e));
  }
  return out;
}

// The GPUs of `name` report `uuids`, as an agent would (conditions kept).
void PublishUuids(FakeCluster& cluster, const std::string& name,
                  const std::vector<std::string>& uuids) {
  api::GpuNode node = NodeNamed(cluster, name);
  for (std::size_t i = 0; i < uuids.size(); ++i) node.status.gpus.at(i).uuid = uuids[i];
  cluster.PutGpuNode(node);
}

// Three nodes of two GPUs; node-b and node-c report the same UUIDs, as two agents that derive
// them from the same seed would.
void AddNodesWithDuplicateUuids(FakeScene& scene) {
  scene.AddNode("node-a", 2);
  scene.AddNode("node-b", 2);
  scene.AddNode("node-c", 2);
  PublishUuids(scene.cluster, "node-b", {"GPU-sim-0", "GPU-sim-1"});
  PublishUuids(scene.cluster, "node-c", {"GPU-sim-0", "GPU-sim-1"});
}

TEST(InvalidGpuNodes, DuplicateUuidsWithholdBothNodesGpusWhileTheGoodNodePlacesJobs) {
  FakeScene scene;
  AddNodesWithDuplicateUuids(scene);
  scene.AddForeground("first", 2);
  scene.AddForeground("second", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());

  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  EXPECT_EQ(scene.Job("first").status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(scene.Job("first").status.placement.at(0).node, "node-a");
  // No GPU left that anyone may trust: the second job waits rather than going onto a GPU two
  // nodes claim.
  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  EXPECT_TRUE(scene.Job("second").status.placement.empty());
  EXPECT_EQ(ConditionOf(scene.Job("second"), api::kConditionPlaced).reason, "NotPlaceable");

  for (const std::string node : {"node-b", "node-c"}) {
    const api::Condition* invalid = InvalidCondition(scene.cluster, node);
    ASSERT_NE(invalid, nullptr) << node;
    EXPECT_EQ(invalid->status, api::ConditionStatus::kTrue);
    EXPECT_EQ(invalid->reason, "DuplicateGpuUuid");
    EXPECT_THAT(invalid->message, HasSubstr("GPU-sim-0"));
    EXPECT_THAT(invalid->message, HasSubstr("GPUNode node-b status.gpus[0]"));
    EXPECT_THAT(invalid->message, HasSubstr("GPUNode node-c status.gpus[0]"));
    const std::vector<FakeCluster::RecordedEvent> events =
        EventsOn(scene.cluster, absl::StrCat("GPUNode/", node));
    ASSERT_THAT(events, SizeIs(1)) << node << ": one Event, not one per reconcile";
    EXPECT_TRUE(events[0].warning);
    EXPECT_EQ(events[0].reason, "DuplicateGpuUuid");
  }
  EXPECT_EQ(InvalidCondition(scene.cluster, "node-a"), nullptr) << "a valid node gets nothing";
  EXPECT_THAT(EventsOn(scene.cluster, "GPUNode/node-a"), IsEmpty());

  // node-c's agent restarts with UUIDs of its own: both nodes are valid again.
  PublishUuids(scene.cluster, "node-c", {"GPU-sim-c0", "GPU-sim-c1"});
  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  EXPECT_FALSE(scene.Job("second").status.placement.empty());
  for (const std::string node : {"node-b", "node-c"}) {
    const api::Condition* invalid = InvalidCondition(scene.cluster, node);
    ASSERT_NE(invalid, nullptr) << node;
    EXPECT_EQ(invalid->status, api::ConditionStatus::kFalse) << node;
  }
}

// The condition is written on the GPUNode as its agent last published it, not on the placement
// part the screening read: the write replaces the whole status, and must not clear what placement
// leaves out (the heartbeat time, the tasks and their progress).
TEST(InvalidGpuNodes, TheConditionWriteKeepsWhatTheAgentReported) {
  FakeScene scene;
  AddNodesWithDuplicateUuids(scene);
  api::GpuNode b = NodeNamed(scene.cluster, "node-b");
  api::GpuTask task;
  task.namespace_ = std::string(kNs);
  task.job = "elsewhere";
  task.pod = "elsewhere-g0-0";
  task.progress = api::TrainingProgress{};
  task.progress->step = 42;
  b.status.gpus.at(1).tasks.push_back(task);
  b.status.gpus.at(1).occupancy.background = 0.5;
  scene.cluster.PutGpuNode(b);
  scene.AddForeground("first", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());

  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  const api::GpuNode written = NodeNamed(scene.cluster, "node-b");
  ASSERT_NE(InvalidCondition(scene.cluster, "node-b"), nullptr);
  EXPECT_EQ(written.status.heartbeat_time, b.status.heartbeat_time);
  ASSERT_THAT(written.status.gpus.at(1).tasks, SizeIs(1));
  EXPECT_EQ(written.status.gpus.at(1).tasks.at(0).progress->step, 42);
  EXPECT_EQ(written.status.gpus.at(1).occupancy.background, 0.5);
}

// The screening is kept while the GPUNodes stay as they are, but only once its reports are
// written: a failed write is retried by the next reconcile, not held back until a node changes.
TEST(InvalidGpuNodes, AFailedConditionWriteIsRetriedThoughNoGpuNodeChanged) {
  FakeScene scene;
  AddNodesWithDuplicateUuids(scene);
  scene.AddForeground("first", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  // The first two writes are the two GPUNodes' conditions.
  scene.cluster.FailNthWrite(1, absl::UnavailableError("connection reset"));
  scene.cluster.FailNthWrite(2, absl::UnavailableError("connection reset"));

  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  EXPECT_EQ(InvalidCondition(scene.cluster, "node-b"), nullptr);
  EXPECT_EQ(InvalidCondition(scene.cluster, "node-c"), nullptr);
  EXPECT_EQ(scene.Job("first").status.placement.at(0).node, "node-a") << "withheld all the same";

  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  for (const std::string node : {"node-b", "node-c"}) {
    const api::Condition* invalid = InvalidCondition(scene.cluster, node);
    ASSERT_NE(invalid, nullptr) << node;
    EXPECT_EQ(invalid->reason, "DuplicateGpuUuid") << node;
    EXPECT_THAT(EventsOn(scene.cluster, absl::StrCat("GPUNode/", node)), SizeIs(1)) << node;
  }
  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  EXPECT_THAT(EventsOn(scene.cluster, "GPUNode/node-b"), SizeIs(1)) << "reported once";
}

TEST(InvalidGpuNodes, AGpuNodeWithoutNodeNameOrWithNegativeMemoryIsSkippedNotFatal) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  scene.AddNode("node-b", 1);
  scene.AddNode("node-c", 2);
  api::GpuNode b = NodeNamed(scene.cluster, "node-b");
  b.spec.node_name.clear();
  scene.cluster.PutGpuNode(b);
  api::GpuNode c = NodeNamed(scene.cluster, "node-c");
  c.status.gpus.at(1).memory_bytes = -1;
  scene.cluster.PutGpuNode(c);
  scene.AddForeground("train", 2);
  scene.AddForeground("small", 1);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());

  // Two GPUs are needed; only node-c's first and node-a's are usable, on two nodes: fine.
  ASSERT_OK(reconciler.Reconcile(kNs, "small").status());
  EXPECT_FALSE(scene.Job("small").status.placement.empty());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  for (const api::PodPlacement& p : scene.Job("train").status.placement) {
    EXPECT_NE(p.gpu_uuids.at(0), "GPU-node-c-1") << "withheld";
    EXPECT_NE(p.node, "node-b") << "withheld";
  }
  const api::Condition* no_name = InvalidCondition(scene.cluster, "node-b");
  ASSERT_NE(no_name, nullptr);
  EXPECT_THAT(no_name->message, HasSubstr("spec.nodeName"));
  const api::Condition* negative = InvalidCondition(scene.cluster, "node-c");
  ASSERT_NE(negative, nullptr);
  EXPECT_EQ(negative->reason, "InvalidGpuStatus");
  EXPECT_THAT(negative->message, HasSubstr("status.gpus[1].memoryBytes"));
  EXPECT_THAT(EventsOn(scene.cluster, "GPUNode/node-c"), SizeIs(1));
}

// The node's clock runs `skew` away from the controller's: its agent stamps heartbeats with it.
class ClockSkew : public ::testing::TestWithParam<int> {
 protected:
  void Beat() {
    for (api::GpuNode node : scene.cluster.ListGpuNodes()) {
      node.status.heartbeat_time =
          api::FormatRfc3339(scene.Now() + std::chrono::seconds(GetParam()));
      scene.cluster.PutGpuNode(node);
    }
  }

  FakeScene scene;
};

TEST_P(ClockSkew, NoEvictionWhileTheHeartbeatChangesEvictionOnceItStopsForTheTimeout) {
  scene.AddNode("node-a", 2);
  scene.AddNode("node-b", 2);
  Beat();
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());  // heartbeat_timeout 60 s
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kPlaced) << "placed despite the skew";
  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);

  for (int i = 0; i < 6; ++i) {  // Three minutes of an agent beating every 30 s.
    scene.clock.Advance(std::chrono::seconds(30));
    Beat();
    ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
    ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning) << "after " << i + 1;
  }
  EXPECT_THAT(scene.cluster.EventsWithReason("GangRestart"), IsEmpty());

  // The agents die: their last heartbeats stay as they were.
  scene.clock.Advance(std::chrono::seconds(60));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.gang_generation, 0) << "60 s unchanged is not stale yet";
  scene.clock.Advance(std::chrono::seconds(1));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.gang_generation, 1);
  ASSERT_THAT(scene.cluster.EventsWithReason("GangRestart"), SizeIs(1));
  EXPECT_THAT(scene.cluster.EventsWithReason("GangRestart")[0].message, HasSubstr("heartbeats"));
}

INSTANTIATE_TEST_SUITE_P(TwoMinutes, ClockSkew, ::testing::Values(-120, 120),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return param.param < 0 ? std::string("NodeBehind")
                                                  : std::string("NodeAhead");
                         });

TEST(HeartbeatFreshness, ARestartedControllerGivesEveryNodeOneTimeoutBeforeJudging) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  {
    Reconciler before(scene.cluster, scene.cluster, scene.Options());
    ASSERT_OK(before.Reconcile(kNs, "train").status());
    scene.SetGangPhase("train", "Running");
    ASSERT_OK(before.Reconcile(kNs, "train").status());
  }
  // The agent died long ago, while no controller ran.
  scene.clock.Advance(std::chrono::minutes(10));
  Reconciler after(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(after.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);
  scene.clock.Advance(std::chrono::seconds(61));
  ASSERT_OK(after.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.gang_generation, 1);
}

// The verdicts are kept between reconciles and moved by each heartbeat alone: a node that keeps
// beating stays fresh, one that stops goes stale after the timeout, and one that beats again is
// fresh at once.
TEST(HeartbeatFreshness, ANodeWhoseHeartbeatMovesAgainIsPlacedOnAgain) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddNode("node-b", 2);
  scene.AddForeground("first", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());  // heartbeat_timeout 60 s
  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  const std::string busy = scene.Job("first").status.placement.at(0).node;
  const std::string idle = busy == "node-a" ? "node-b" : "node-a";
  scene.SetGangPhase("first", "Running");
  const auto beat = [&](const std::string& name) {
    api::GpuNode node = NodeNamed(scene.cluster, name);
    node.status.heartbeat_time = api::FormatRfc3339(scene.Now());
    scene.cluster.PutGpuNode(node);
  };

  // The idle node's agent stops; the busy one's beats every 30 s.
  for (int i = 0; i < 3; ++i) {
    scene.clock.Advance(std::chrono::seconds(30));
    beat(busy);
    ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
    ASSERT_EQ(scene.Job("first").status.phase, api::JobPhase::kRunning) << "after " << i + 1;
  }
  scene.AddForeground("second", 2);
  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  EXPECT_TRUE(scene.Job("second").status.placement.empty()) << "nothing fresh is free";

  scene.clock.Advance(std::chrono::seconds(5));
  beat(idle);
  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  ASSERT_FALSE(scene.Job("second").status.placement.empty());
  EXPECT_EQ(scene.Job("second").status.placement.at(0).node, idle);
  EXPECT_EQ(scene.Job("first").status.gang_generation, 0);
}

}  // namespace
}  // namespace wavepool::controller
