// The reconciler's handling of what happens to a running job: preemption, failed and lost pods,
// the backoff limit, suspension, success and progress (reconciler.h, against FakeCluster).
#include <chrono>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/controller/reconciler.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr std::string_view kNs = FakeScene::kNamespace;

std::string EnvOf(const json& pod, const std::string& name) {
  for (const json& c : pod["spec"]["containers"]) {
    for (const json& e : c.value("env", json::array())) {
      if (e.value("name", "") == name) return e.value("value", "");
    }
  }
  return "";
}

// A fg job on 2 GPUs of node-a, Running.
struct RunningGang : ::testing::Test {
  void SetUp() override {
    scene.AddNode("node-a", 2);
    scene.AddNode("node-b", 2);
    scene.AddForeground("train", 2);
    ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
    scene.SetGangPhase("train", "Running");
    ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
    ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);
    ASSERT_EQ(scene.Job("train").status.placement.at(0).node, "node-a");
  }

  FakeScene scene;
  ControllerMetrics metrics;
  Reconciler reconciler{scene.cluster, scene.cluster, scene.Options(), &metrics};
};

TEST(ReconcilerPreemption, ForegroundGangPreemptsWaitsAndTheVictimResumesWithANewGeneration) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddNode("node-b", 1);
  ControllerMetrics metrics;
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options(), &metrics);
  scene.AddBackground("bg");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ASSERT_EQ(scene.Job("bg").status.placement.at(0).node, "node-a");
  scene.SetGangPhase("bg", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());

  // An exclusive 4-GPU gang fits only on node-a: the bg pod must go.
  scene.AddForeground("fg", 4, /*allow_background=*/false);
  ASSERT_OK_AND_ASSIGN(ReconcileResult fg_wait, reconciler.Reconcile(kNs, "fg"));
  ASSERT_TRUE(fg_wait.requeue_after.has_value());
  EXPECT_TRUE(scene.cluster.PodsOfJob(kNs, "fg").empty());
  const json victim = *scene.cluster.GetPod(kNs, "bg-g0-0");
  EXPECT_EQ(victim["metadata"]["annotations"][std::string(kAnnotationPreemptedBy)], "team/fg");
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "bg-g0-0"));
  EXPECT_EQ(victim["metadata"]["deletionGracePeriodSeconds"], 120);  // Its own grace period.
  EXPECT_EQ(ConditionOf(scene.Job("fg"), api::kConditionPlaced).reason, "Preempting");
  EXPECT_THAT(metrics.Serialize(), HasSubstr("wavepool_controller_preemptions_total 1"));

  // Still terminating: the gang keeps waiting, and nobody is preempted twice.
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_TRUE(scene.cluster.PodsOfJob(kNs, "fg").empty());
  EXPECT_THAT(metrics.Serialize(), HasSubstr("wavepool_controller_preemptions_total 1"));

  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  api::TrainingJob bg = scene.Job("bg");
  EXPECT_EQ(bg.status.phase, api::JobPhase::kPreempted);
  EXPECT_EQ(ConditionOf(bg, api::kConditionPreempted).status, api::ConditionStatus::kTrue);
  EXPECT_THAT(ConditionOf(bg, api::kConditionPreempted).message, HasSubstr("team/fg"));
  EXPECT_EQ(scene.cluster.EventsWithReason("Preempted").size(), 1u);

  scene.cluster.FinishTerminatingPods();  // The bg pod checkpointed and exited.
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_EQ(scene.Job("fg").status.placement.size(), 4u) << api::ToJson(scene.Job("fg")).dump(1);
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "fg").size(), 4u);

  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  bg = scene.Job("bg");
  EXPECT_EQ(bg.status.gang_generation, 1);
  ASSERT_EQ(bg.status.placement.size(), 1u);
  EXPECT_EQ(bg.status.placement[0].node, "node-b");
  EXPECT_EQ(ConditionOf(bg, api::kConditionPreempted).status, api::ConditionStatus::kFalse);
  const json resumed = *scene.cluster.GetPod(kNs, "bg-g1-0");
  EXPECT_EQ(EnvOf(resumed, "WAVEPOOL_CHECKPOINT_PATH"), "/checkpoints/bg");  // Same checkpoint.
  EXPECT_EQ(bg.status.restarts, 0);
}

// A bg job Running on node-a (4 GPUs), then an exclusive 4-GPU fg gang that preempts it.
struct PreemptingGang : ::testing::Test {
  void SetUp() override {
    scene.AddNode("node-a", 4);
    scene.AddBackground("bg");
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    scene.SetGangPhase("bg", "Running");
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    ASSERT_EQ(scene.Job("bg").status.phase, api::JobPhase::kRunning);
    scene.AddForeground("fg", 4, /*allow_background=*/false);
    ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
    ASSERT_EQ(ConditionOf(scene.Job("fg"), api::kConditionPlaced).reason, "Preempting");
    ASSERT_TRUE(scene.cluster.PodTerminating(kNs, "bg-g0-0"));
  }

  // The victim reports Preempted (by team/fg), not a lost pod, and holds no pod.
  void ExpectBackgroundPreempted() {
    const api::TrainingJob bg = scene.Job("bg");
    EXPECT_EQ(bg.status.phase, api::JobPhase::kPreempted);
    EXPECT_EQ(ConditionOf(bg, api::kConditionPreempted).status, api::ConditionStatus::kTrue);
    EXPECT_THAT(ConditionOf(bg, api::kConditionPreempted).message, HasSubstr("team/fg"));
    EXPECT_EQ(bg.status.restarts, 0);
    EXPECT_TRUE(scene.cluster.EventsWithReason("GangRestart").empty());
    EXPECT_THAT(metrics.Serialize(), Not(HasSubstr("pod_deleted")));
    for (const json& pod : scene.CurrentPods("bg")) {  // At most the victim, stopping.
      EXPECT_TRUE(pod["metadata"].contains("deletionTimestamp")) << pod.dump();
    }
  }

  FakeScene scene;
  ControllerMetrics metrics;
  Reconciler reconciler{scene.cluster, scene.cluster, scene.Options(), &metrics};
};

TEST_F(PreemptingGang, NominatedGpusStayFreeWhileTheVictimTerminatesSlowly) {
  // The victim checkpoints for a while: newcomers must not take the GPUs the gang waits for,
  // although three of them are empty.
  scene.AddBackground("late-bg");
  scene.AddForeground("late-fg", 1);
  for (int i = 0; i < 3; ++i) {
    scene.clock.Advance(std::chrono::seconds(5));
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    ASSERT_OK(reconciler.Reconcile(kNs, "late-bg").status());
    ASSERT_OK(reconciler.Reconcile(kNs, "late-fg").status());
    ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  }
  EXPECT_TRUE(scene.cluster.PodsOfJob(kNs, "late-bg").empty());
  EXPECT_TRUE(scene.cluster.PodsOfJob(kNs, "late-fg").empty());
  EXPECT_EQ(ConditionOf(scene.Job("late-bg"), api::kConditionPlaced).reason, kNotPlaceableReason);
  EXPECT_THAT(metrics.Serialize(), HasSubstr("wavepool_controller_preemptions_total 1"));
  ExpectBackgroundPreempted();

  // The victim exits; its job looks first, and is not placed back onto the nominated GPUs.
  scene.cluster.FinishTerminatingPods();
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ExpectBackgroundPreempted();
  EXPECT_EQ(scene.Job("bg").status.gang_generation, 1);
  EXPECT_EQ(ConditionOf(scene.Job("bg"), api::kConditionPlaced).reason, kNotPlaceableReason);

  // The gang is placed on the GPUs it waited for, once.
  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "fg").size(), 4u);
  EXPECT_EQ(ConditionOf(scene.Job("fg"), api::kConditionPlaced).status,
            api::ConditionStatus::kTrue);
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ExpectBackgroundPreempted();
  EXPECT_EQ(scene.Job("bg").status.gang_generation, 1);
  EXPECT_THAT(metrics.Serialize(), HasSubstr("wavepool_controller_preemptions_total 1"));
}

TEST_F(PreemptingGang, ANominationEndsWithItsJob) {
  scene.cluster.RemoveJob(kNs, "fg");  // Deleted before its reconcile saw it go.
  scene.AddBackground("late-bg");
  ASSERT_OK(reconciler.Reconcile(kNs, "late-bg").status());
  ASSERT_EQ(scene.Job("late-bg").status.placement.size(), 1u);
  EXPECT_EQ(scene.Job("late-bg").status.placement[0].node, "node-a");
}

TEST_F(PreemptingGang, AVictimGoneBeforeItsJobLooksIsReportedPreempted) {
  scene.cluster.FinishTerminatingPods();  // Gone, annotation and all, before bg's reconcile.
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ExpectBackgroundPreempted();
  EXPECT_EQ(ConditionOf(scene.Job("bg"), api::kConditionPlaced).reason, kNotPlaceableReason);
  EXPECT_EQ(scene.cluster.EventsWithReason("Preempted").size(), 1u);

  ASSERT_OK(reconciler.Reconcile(kNs, "fg").status());
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "fg").size(), 4u);
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ExpectBackgroundPreempted();  // Still nowhere to go: Preempted until placed again.

  // A GPU appears: placed again, and only now Preempted turns False.
  scene.AddNode("node-b", 1);
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  const api::TrainingJob bg = scene.Job("bg");
  ASSERT_EQ(bg.status.placement.size(), 1u);
  EXPECT_EQ(bg.status.placement[0].node, "node-b");
  EXPECT_EQ(scene.CurrentPods("bg").size(), 1u);
  EXPECT_EQ(ConditionOf(bg, api::kConditionPreempted).status, api::ConditionStatus::kFalse);
  EXPECT_EQ(ConditionOf(bg, api::kConditionPreempted).reason, "Resumed");
  EXPECT_EQ(bg.status.restarts, 0);
}

TEST_F(RunningGang, AFailedPodRestartsTheGangAfterTheBackoff) {
  ASSERT_OK(scene.cluster.SetPodPhase(kNs, "train-g0-1", "Failed", 1, "Error"));
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "train"));
  api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.restarts, 1);
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "train-g0-0"));
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "train-g0-1"));
  // restart_backoff_base x 2^(1-1) = 10 s.
  EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(std::chrono::seconds(10)));
  const auto restarts = scene.cluster.EventsWithReason("GangRestart");
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_THAT(restarts[0].message, HasSubstr("train-g0-1"));
  EXPECT_THAT(restarts[0].message, HasSubstr("exit code 1"));
  EXPECT_THAT(metrics.Serialize(), HasSubstr("reason=\"pod_failed\""));

  // Before the backoff passes nothing is placed, even with the old pods gone.
  scene.cluster.FinishTerminatingPods();
  scene.clock.Advance(std::chrono::seconds(4));
  scene.Heartbeat();
  ASSERT_OK_AND_ASSIGN(result, reconciler.Reconcile(kNs, "train"));
  EXPECT_TRUE(scene.cluster.AllPods().empty());
  EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(std::chrono::seconds(6)));

  scene.clock.Advance(std::chrono::seconds(6));
  scene.Heartbeat();
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_THAT(PodNames(scene.cluster.AllPods()), ElementsAre("train-g1-0", "train-g1-1"));
  job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(job.status.restarts, 1);
}

TEST_F(RunningGang, PastTheBackoffLimitTheJobFailsAndItsOtherPodsGo) {
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.backoff_limit = 0; }));
  ASSERT_OK(scene.cluster.SetPodPhase(kNs, "train-g0-0", "Failed", 137, "OOMKilled"));
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "train"));
  EXPECT_FALSE(result.requeue_after.has_value());
  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kFailed);
  const api::Condition& failed = ConditionOf(job, api::kConditionFailed);
  EXPECT_EQ(failed.status, api::ConditionStatus::kTrue);
  EXPECT_EQ(failed.reason, "BackoffLimitExceeded");
  EXPECT_THAT(failed.message, HasSubstr("train-g0-0"));
  EXPECT_THAT(failed.message, HasSubstr("exit code 137 (OOMKilled)"));
  EXPECT_FALSE(scene.cluster.PodTerminating(kNs, "train-g0-0"));  // Kept for its logs.
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "train-g0-1"));
  const auto events = scene.cluster.EventsWithReason("Failed");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].warning);

  const auto writes = scene.cluster.writes();  // Finished: nothing more.
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), writes);
}

TEST_F(RunningGang, ANodeThatIsNotReadyRestartsTheGangWithoutCounting) {
  scene.cluster.SetNodeState("node-a", NodeState{false, true, false});
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "train"));
  api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.restarts, 0);
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(0));
  EXPECT_THAT(metrics.Serialize(), HasSubstr("reason=\"node_lost\""));
  // The new gang goes to the healthy node at once (no backoff for infrastructure losses).
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  job = scene.Job("train");
  ASSERT_EQ(job.status.placement.size(), 2u);
  EXPECT_EQ(job.status.placement[0].node, "node-b");
}

TEST_F(RunningGang, AStaleAgentHeartbeatRestartsTheGangWithoutCounting) {
  // heartbeat_timeout is 60 s; node-b's agent beats.
  scene.clock.Advance(std::chrono::seconds(61));
  api::GpuNode b = scene.cluster.ListGpuNodes().at(1);
  ASSERT_EQ(b.metadata.name, "node-b");
  b.status.heartbeat_time = api::FormatRfc3339(scene.Now());
  scene.cluster.PutGpuNode(b);
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.restarts, 0);
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_THAT(scene.cluster.EventsWithReason("GangRestart").at(0).message, HasSubstr("heartbeats"));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.placement.at(0).node, "node-b");
}

TEST_F(RunningGang, HeartbeatsGoStaleAsTimePassesThoughNoGpuNodeChanges) {
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());  // Fresh now, judged on this clock.
  EXPECT_THAT(scene.cluster.EventsWithReason("GangRestart"), IsEmpty());
  scene.clock.Advance(std::chrono::seconds(61));  // heartbeat_timeout is 60 s; nobody beats.
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.restarts, 0);
  ASSERT_THAT(scene.cluster.EventsWithReason("GangRestart"), SizeIs(1));
  EXPECT_THAT(scene.cluster.EventsWithReason("GangRestart").at(0).message, HasSubstr("heartbeats"));
}

TEST_F(RunningGang, APodDeletedBySomeoneElseRestartsTheGangWithoutCounting) {
  scene.cluster.RemovePod(kNs, "train-g0-0");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.restarts, 0);
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "train-g0-1"));
  EXPECT_THAT(metrics.Serialize(), HasSubstr("reason=\"pod_deleted\""));
}

TEST(ReconcilerFailures, APodNeverRunningPastTheStartTimeoutRestartsTheGang) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  ReconcilerOptions options = scene.Options();
  options.start_timeout = std::chrono::seconds(30);
  Reconciler reconciler(scene.cluster, scene.cluster, options);
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "train"));
  EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(options.start_timeout));
  scene.clock.Advance(std::chrono::seconds(31));
  scene.Heartbeat();
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.gang_generation, 1);
  EXPECT_EQ(scene.Job("train").status.restarts, 0);
}

TEST(ReconcilerFailures, ABackgroundPodThatFailsRestartsWithABackoffThatDoublesUpToTheCap) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  scene.AddBackground("bg");
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "bg", [](api::TrainingJob& j) { j.spec.backoff_limit = 10; }));
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  // base 10 s x 2^(restarts-1): 10, 20, 40, 80, 160, 320, then capped at 360 (not 640).
  const std::vector<int> expected = {10, 20, 40, 80, 160, 320, 360};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "restart " << i + 1);
    const std::string pod = PodName("bg", static_cast<std::int64_t>(i), 0);
    ASSERT_OK(scene.cluster.SetPodPhase(kNs, pod, "Failed", 2));
    ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "bg"));
    EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(std::chrono::seconds(expected[i])));
    EXPECT_EQ(scene.Job("bg").status.restarts, static_cast<std::int64_t>(i + 1));
    scene.cluster.FinishTerminatingPods();
    scene.clock.Advance(std::chrono::seconds(expected[i]));
    scene.Heartbeat();
    ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
    ASSERT_TRUE(scene.cluster.GetPod(kNs, PodName("bg", static_cast<std::int64_t>(i + 1), 0)));
  }
}

TEST_F(RunningGang, AJobThatFailedRunsAgainWhenItsSpecChanges) {
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.backoff_limit = 0; }));
  ASSERT_OK(scene.cluster.SetPodPhase(kNs, "train-g0-0", "Failed", 1));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kFailed);
  scene.cluster.FinishTerminatingPods();
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.backoff_limit = 3; }));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_EQ(job.status.restarts, 0);
  EXPECT_EQ(ConditionOf(job, api::kConditionFailed).status, api::ConditionStatus::kFalse);
  EXPECT_TRUE(scene.cluster.GetPod(kNs, "train-g1-0").has_value());
}

TEST(ReconcilerSuspend, SuspendDeletesThePodsAndResumePlacesANewGang) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.suspend = true; }));
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "train"));
  EXPECT_FALSE(result.requeue_after.has_value());
  api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kSuspended);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).reason, "Suspended");
  EXPECT_EQ(ConditionOf(job, api::kConditionRunning).reason, "Suspended");
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "train-g0-0"));
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "train-g0-1"));

  scene.cluster.FinishTerminatingPods();
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.suspend = false; }));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  job = scene.Job("train");
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_THAT(PodNames(scene.cluster.AllPods()), ElementsAre("train-g1-0", "train-g1-1"));
}

TEST(ReconcilerSuspend, AJobKueueHasNotAdmittedGetsNoPodsUntilAdmitted) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  api::TrainingJob job = scene.AddForeground("queued", 2);
  ASSERT_OK(scene.cluster.EditJob(kNs, "queued", [](api::TrainingJob& j) {
    j.metadata.labels["kueue.x-k8s.io/queue-name"] = "team-queue";
    j.spec.suspend = true;
  }));
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "queued").status());
  EXPECT_EQ(scene.Job("queued").status.phase, api::JobPhase::kSuspended);
  EXPECT_TRUE(scene.cluster.AllPods().empty());
  // Kueue admits the job by flipping spec.suspend.
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "queued", [](api::TrainingJob& j) { j.spec.suspend = false; }));
  ASSERT_OK(reconciler.Reconcile(kNs, "queued").status());
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "queued").size(), 2u);
}

TEST_F(RunningGang, AllPodsSucceededMakesTheJobSucceededAndKeepsThePods) {
  scene.SetGangPhase("train", "Succeeded");
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "train"));
  EXPECT_FALSE(result.requeue_after.has_value());
  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kSucceeded);
  EXPECT_EQ(ConditionOf(job, api::kConditionSucceeded).status, api::ConditionStatus::kTrue);
  EXPECT_EQ(scene.cluster.EventsWithReason("Succeeded").size(), 1u);
  EXPECT_EQ(scene.cluster.AllPods().size(), 2u);
  EXPECT_FALSE(scene.cluster.PodTerminating(kNs, "train-g0-0"));
  const auto writes = scene.cluster.writes();
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), writes);
}

TEST_F(RunningGang, ProgressIsReportedAndSlowdownAboveTheSloIsDegraded) {
  auto report = [&](double slowdown, std::int64_t step0, std::int64_t step1) {
    api::GpuNode a = scene.cluster.ListGpuNodes().at(0);
    for (int rank = 0; rank < 2; ++rank) {
      api::GpuTask task;
      task.namespace_ = std::string(kNs);
      task.job = "train";
      task.pod = PodName("train", 0, rank);
      task.progress = api::TrainingProgress{rank == 0 ? step0 : step1, 100, 0.2, slowdown};
      const std::string uuid = scene.Job("train").status.placement[rank].gpu_uuids[0];
      for (api::GpuStatus& gpu : a.status.gpus) {
        if (gpu.uuid == uuid) gpu.tasks = {task};
      }
    }
    scene.cluster.PutGpuNode(a);
  };
  report(1.3, 40, 42);
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  api::TrainingJob job = scene.Job("train");
  ASSERT_TRUE(job.status.progress.has_value());
  EXPECT_EQ(job.status.progress->step, 40);  // The slowest rank.
  EXPECT_DOUBLE_EQ(job.status.progress->samples_per_second, 200);
  EXPECT_EQ(ConditionOf(job, api::kConditionDegraded).status, api::ConditionStatus::kTrue);
  EXPECT_EQ(ConditionOf(job, api::kConditionDegraded).reason, "SlowdownAboveSLO");

  report(1.05, 50, 50);  // Within the default 1.10 SLO.
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  job = scene.Job("train");
  EXPECT_EQ(job.status.progress->step, 50);
  EXPECT_EQ(ConditionOf(job, api::kConditionDegraded).status, api::ConditionStatus::kFalse);
}

}  // namespace
}  // namespace wavepool::controller
