// What a job's owner sees of the reconciler's work in `kubectl get tj` and `kubectl describe`:
// the GPUs the plan uses, restarts shown as 0 once the job has started, and conditions in plain
// words that claim nothing that was not observed (reconciler.h, against FakeCluster).
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/controller/reconciler.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kNs = FakeScene::kNamespace;

// Every rank of the job's current gang reports `slowdown` (0: not measured) at step 10.
void ReportSlowdown(FakeScene& scene, const std::string& job, double slowdown) {
  api::GpuNode node = scene.cluster.ListGpuNodes().at(0);
  const api::TrainingJob current = scene.Job(job);
  for (std::size_t rank = 0; rank < current.status.placement.size(); ++rank) {
    api::GpuTask task;
    task.namespace_ = std::string(kNs);
    task.job = job;
    task.pod = current.status.placement[rank].pod;
    task.progress = api::TrainingProgress{10, 100, 0.2, slowdown};
    for (api::GpuStatus& gpu : node.status.gpus) {
      if (gpu.uuid == current.status.placement[rank].gpu_uuids.at(0)) gpu.tasks = {task};
    }
  }
  scene.cluster.PutGpuNode(node);
}

TEST(ReconcilerUserView, PlannedJobShowsTheGpusItsPlanUsesAndZeroRestarts) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const api::TrainingJob job = scene.Job("train");
  ASSERT_TRUE(job.status.gpus.has_value());
  EXPECT_EQ(*job.status.gpus, 2);
  // What the printer columns read: status.gpus, and status.restarts present as 0.
  const json status = api::ToJson(job)["status"];
  EXPECT_EQ(status["gpus"], 2);
  ASSERT_TRUE(status.contains("restarts")) << status.dump();
  EXPECT_EQ(status["restarts"], 0);
}

TEST(ReconcilerUserView, BackgroundJobShowsOneGpu) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  scene.AddBackground("bg");
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  EXPECT_EQ(scene.Job("bg").status.gpus, std::optional<std::int64_t>(1));
}

TEST(ReconcilerUserView, StartingPodsSayWhatTheJobWaitsFor) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const api::Condition running = ConditionOf(scene.Job("train"), api::kConditionRunning);
  EXPECT_EQ(running.status, api::ConditionStatus::kFalse);
  EXPECT_THAT(running.message, HasSubstr("0 of 2 pods running; waiting for the rest to start"));
  EXPECT_THAT(running.message, HasSubstr("within 600 s"));

  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(ConditionOf(scene.Job("train"), api::kConditionRunning).message, "all 2 pods running");
}

TEST(ReconcilerUserView, DegradedIsNotClaimedBeforeASlowdownIsMeasured) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);
  // Running, but no worker has reported: no Degraded condition at all (not "False: 0").
  EXPECT_EQ(api::FindCondition(scene.Job("train").status.conditions, api::kConditionDegraded),
            nullptr);

  // Workers that report steps but no slowdown yet: still nothing claimed.
  ReportSlowdown(scene, "train", 0);
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(api::FindCondition(scene.Job("train").status.conditions, api::kConditionDegraded),
            nullptr);

  ReportSlowdown(scene, "train", 1.05);
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  api::Condition degraded = ConditionOf(scene.Job("train"), api::kConditionDegraded);
  EXPECT_EQ(degraded.status, api::ConditionStatus::kFalse);
  EXPECT_THAT(degraded.message, HasSubstr("1.05x as long as alone"));
  EXPECT_THAT(degraded.message, Not(HasSubstr("slowdown 0")));

  // A measurement that goes away again (a new gang not reporting yet): Unknown, in words.
  ReportSlowdown(scene, "train", 0);
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  degraded = ConditionOf(scene.Job("train"), api::kConditionDegraded);
  EXPECT_EQ(degraded.status, api::ConditionStatus::kUnknown);
  EXPECT_EQ(degraded.reason, "SlowdownNotMeasured");
  EXPECT_THAT(degraded.message, HasSubstr("not measured yet"));
}

}  // namespace
}  // namespace wavepool::controller
