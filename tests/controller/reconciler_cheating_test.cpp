// A background job whose pod a GPUNode's BackgroundCheating condition names: restarted
// elsewhere, the restart counted, and kept off the node for --cheating-quarantine
// (reconciler.h, against FakeCluster).
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "controller/src/manager/manager_events.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/gpu_node_conditions.h"
#include "wavepool/controller/metrics.h"
#include "wavepool/controller/reconciler.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::string_view kNs = FakeScene::kNamespace;

// Sets the BackgroundCheating condition of GPUNode `node` as its agent publishes it.
void FlagCheating(FakeScene& scene, const std::string& node, const std::string& message) {
  for (api::GpuNode gpu_node : scene.cluster.ListGpuNodes()) {
    if (gpu_node.metadata.name != node) continue;
    api::Condition condition;
    condition.type = api::kGpuNodeBackgroundCheating;
    condition.status = message.empty() ? api::ConditionStatus::kFalse : api::ConditionStatus::kTrue;
    condition.reason = message.empty() ? api::kReasonNoCheating : api::kReasonLaunchesOutsideGate;
    condition.message = message;
    api::SetCondition(&gpu_node.status.conditions, condition, scene.Now());
    scene.cluster.PutGpuNode(gpu_node);
  }
}

// A bg job Running on node-a GPU 0; node-b has a free GPU too.
struct RunningBackground : ::testing::Test {
  void SetUp() override {
    scene.AddNode("node-a", 1);
    scene.AddNode("node-b", 1);
    scene.AddBackground("bg");
    ASSERT_OK(
        scene.cluster.EditJob(kNs, "bg", [](api::TrainingJob& j) { j.spec.backoff_limit = 3; }));
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    scene.SetGangPhase("bg", "Running");
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    ASSERT_EQ(scene.Job("bg").status.phase, api::JobPhase::kRunning);
    ASSERT_EQ(scene.Job("bg").status.placement.at(0).node, "node-a");
  }

  // Lets the restart backoff (10 s for the first restart) pass with the old pod gone.
  void AfterBackoff() {
    scene.cluster.FinishTerminatingPods();
    scene.clock.Advance(std::chrono::seconds(10));
    scene.Heartbeat();
  }

  FakeScene scene;
  ControllerMetrics metrics;
  Reconciler reconciler{scene.cluster, scene.cluster, scene.Options(), &metrics};
};

TEST_F(RunningBackground, ACheatingPodIsRestartedOnAnotherNodeAndTheRestartCounts) {
  FlagCheating(scene, "node-a", "team/bg-g0-0 (GPU 0): used 40% of the SMs while paused");
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "bg"));
  api::TrainingJob job = scene.Job("bg");
  EXPECT_EQ(job.status.restarts, 1);
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "bg-g0-0"));
  EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(std::chrono::seconds(10)));
  const api::Condition& placed = ConditionOf(job, api::kConditionPlaced);
  EXPECT_EQ(placed.reason, "LaunchesOutsideGate");
  EXPECT_THAT(placed.message, HasSubstr("pod bg-g0-0 used the GPU beyond what its launch gate "
                                        "allowed on node node-a"));
  EXPECT_THAT(placed.message, HasSubstr("kept off node node-a for 600 s"));
  const auto events = scene.cluster.EventsWithReason("LaunchesOutsideGate");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].warning);
  EXPECT_EQ(events[0].object, "team/bg");
  EXPECT_THAT(metrics.Serialize(), HasSubstr("reason=\"cheating\""));

  // The condition still names the old pod for a while: the new gang is not judged by it.
  AfterBackoff();
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  job = scene.Job("bg");
  ASSERT_EQ(job.status.placement.size(), 1u);
  EXPECT_EQ(job.status.placement[0].node, "node-b");
  scene.SetGangPhase("bg", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  EXPECT_EQ(scene.Job("bg").status.phase, api::JobPhase::kRunning);
  EXPECT_EQ(scene.Job("bg").status.restarts, 1);
}

TEST_F(RunningBackground, TheNodeIsOffLimitsOnlyUntilTheQuarantineEnds) {
  // node-b taken by another bg job: only node-a is left.
  scene.AddBackground("other");
  ASSERT_OK(reconciler.Reconcile(kNs, "other").status());
  ASSERT_EQ(scene.Job("other").status.placement.at(0).node, "node-b");
  FlagCheating(scene, "node-a", "team/bg-g0-0 (GPU 0): launched while paused");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  AfterBackoff();
  FlagCheating(scene, "node-a", "");  // The agent clears the flag once the pod is gone.
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  api::TrainingJob job = scene.Job("bg");
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).reason, "NotPlaceable");
  EXPECT_THAT(ConditionOf(job, api::kConditionPlaced).message,
              HasSubstr("1 on nodes where it used the GPU outside its launch gate"));

  scene.clock.Advance(std::chrono::seconds(600));
  scene.Heartbeat();
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  job = scene.Job("bg");
  ASSERT_EQ(job.status.placement.size(), 1u);
  EXPECT_EQ(job.status.placement[0].node, "node-a");
}

TEST_F(RunningBackground, PastTheBackoffLimitACheatingJobFails) {
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "bg", [](api::TrainingJob& j) { j.spec.backoff_limit = 0; }));
  FlagCheating(scene, "node-a", "team/bg-g0-0 (GPU 0): launched while paused");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  const api::TrainingJob job = scene.Job("bg");
  EXPECT_EQ(job.status.phase, api::JobPhase::kFailed);
  const api::Condition& failed = ConditionOf(job, api::kConditionFailed);
  EXPECT_EQ(failed.reason, "BackoffLimitExceeded");
  EXPECT_THAT(failed.message, HasSubstr("pod bg-g0-0 used the GPU beyond what its launch gate"));
  EXPECT_THAT(failed.message, HasSubstr("spec.backoffLimit (0)"));
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "bg-g0-0"));  // Running: it goes.
}

TEST_F(RunningBackground, OnlyAFlagFromTheNodeThePodRunsOnForThisNamespaceCounts) {
  // Another node's agent naming the pod, the same pod name in another namespace, a condition
  // that is False, an entry without the "(GPU i)" part: none of them restarts the job.
  FlagCheating(scene, "node-b", "team/bg-g0-0 (GPU 0): launched while paused");
  FlagCheating(scene, "node-a",
               "other-team/bg-g0-0 (GPU 0): launched while paused; team/bg-g0-0 launched");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  EXPECT_EQ(scene.Job("bg").status.restarts, 0);
  EXPECT_EQ(scene.Job("bg").status.phase, api::JobPhase::kRunning);
  FlagCheating(scene, "node-a", "");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  EXPECT_EQ(scene.Job("bg").status.restarts, 0);
  EXPECT_THAT(scene.cluster.EventsWithReason("LaunchesOutsideGate"), IsEmpty());
}

TEST(ReconcilerCheating, AForegroundPodIsNeverRestartedForAFlag) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  scene.SetGangPhase("train", "Running");
  FlagCheating(scene, "node-a", "team/train-g0-0 (GPU 0): launched while paused");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);
  EXPECT_EQ(scene.Job("train").status.restarts, 0);
}

TEST(ReconcilerCheating, AJobCreatedAgainUnderTheNameStartsWithoutTheQuarantine) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  scene.AddBackground("bg");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  scene.SetGangPhase("bg", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  FlagCheating(scene, "node-a", "team/bg-g0-0 (GPU 0): launched while paused");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ASSERT_EQ(scene.Job("bg").status.restarts, 1);
  scene.cluster.FinishTerminatingPods();
  FlagCheating(scene, "node-a", "");

  scene.cluster.RemoveJob(kNs, "bg");
  scene.cluster.RemoveConfigMap(kNs, "bg-plan");  // Garbage collection.
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  scene.AddBackground("bg");  // A new uid.
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ASSERT_EQ(scene.Job("bg").status.placement.size(), 1u) << api::ToJson(scene.Job("bg")).dump(1);
  EXPECT_EQ(scene.Job("bg").status.placement[0].node, "node-a");
}

TEST(ManagerEvents, JobsFlaggedCheatingMapsTheNamedPodsToTheirJobs) {
  const json node = json::parse(R"({
    "status": {
      "gpus": [{"index": 0, "tasks": [
        {"namespace": "team", "job": "sweep", "pod": "sweep-g0-0", "role": "Background"},
        {"namespace": "team", "job": "train", "pod": "train-g0-0", "role": "Foreground"}]},
               {"index": 1, "tasks": [
        {"namespace": "lab", "job": "probe", "pod": "probe-g2-0", "role": "Background"}]}],
      "conditions": [{"type": "BackgroundCheating", "status": "True",
                      "reason": "LaunchesOutsideGate",
                      "message": "team/sweep-g0-0 (GPU 0): x; lab/probe-g2-0 (GPU 1): y"}]}})");
  EXPECT_EQ(internal::JobsFlaggedCheating(node),
            (std::set<std::string>{"lab/probe", "team/sweep"}));
  json cleared = node;
  cleared["status"]["conditions"][0]["status"] = "False";
  EXPECT_THAT(internal::JobsFlaggedCheating(cleared), IsEmpty());
  EXPECT_THAT(internal::JobsFlaggedCheating(json::object()), IsEmpty());
  EXPECT_THAT(internal::JobsFlaggedCheating(json::array()), IsEmpty());
}

TEST(GpuNodeConditions, CheatingPodsReadsTheAgentsMessage) {
  api::GpuNodeStatus status;
  EXPECT_THAT(api::CheatingPods(status), IsEmpty());
  api::Condition condition;
  condition.type = api::kGpuNodeBackgroundCheating;
  condition.status = api::ConditionStatus::kTrue;
  condition.message = "a/p (GPU 0): x; malformed; (GPU 1): nameless; b/q (GPU 3): y; and 2 more";
  status.conditions.push_back(condition);
  EXPECT_THAT(api::CheatingPods(status), ElementsAre("a/p", "b/q"));
}

}  // namespace
}  // namespace wavepool::controller
