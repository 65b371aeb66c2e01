// The reconcile flow against FakeCluster: validation, planning, placement, the intent record and
// crash safety, idempotence, optimistic concurrency and concurrent workers (reconciler.h).
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/controller/reconciler.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kNs = FakeScene::kNamespace;

TEST(ReconcilerValidation, BadSpecFailsWithInvalidConditionWarningEventAndNoRequeue) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  api::TrainingJob job = scene.AddForeground("train", 2);
  ASSERT_OK(scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.gpus = 0; }));
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());

  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "train"));
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_FALSE(result.waiting_for_gpus);
  job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kFailed);
  EXPECT_EQ(job.status.observed_generation, 2);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).status, api::ConditionStatus::kTrue);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).reason, "InvalidSpec");
  EXPECT_THAT(ConditionOf(job, api::kConditionInvalid).message, HasSubstr("spec.gpus"));
  const auto events = scene.cluster.EventsWithReason("InvalidSpec");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].warning);
  EXPECT_THAT(events[0].message, HasSubstr("spec.gpus"));
  EXPECT_TRUE(scene.cluster.AllPods().empty());

  // Looked at again without a change: nothing written, no second Event.
  const auto writes = scene.cluster.writes();
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), writes);
  EXPECT_EQ(scene.cluster.EventsWithReason("InvalidSpec").size(), 1u);

  // A fixed spec is a new generation, looked at afresh.
  ASSERT_OK(scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.gpus = 2; }));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  job = scene.Job("train");
  EXPECT_EQ(job.status.observed_generation, 3);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).status, api::ConditionStatus::kFalse);
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(scene.cluster.AllPods().size(), 2u);
}

TEST(ReconcilerPlan, IsStoredInTheConfigMapAndReplacedWhenTheSpecChanges) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const std::optional<json> first = scene.cluster.StoredConfigMap(kNs, "train-plan");
  ASSERT_TRUE(first.has_value());
  const std::string hash_key(kAnnotationPlanHash);
  const std::string first_hash = (*first)["metadata"]["annotations"][hash_key];
  ASSERT_OK_AND_ASSIGN(
      api::Plan plan,
      api::Plan::FromJson(json::parse((*first)["data"][std::string(kPlanKey)].get<std::string>())));
  EXPECT_EQ(plan.global_batch_size, 16);
  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(ConditionOf(job, api::kConditionPlanned).status, api::ConditionStatus::kTrue);
  ASSERT_TRUE(job.status.plan.has_value());

  ASSERT_OK(scene.cluster.EditJob(kNs, "train",
                                  [](api::TrainingJob& j) { j.spec.global_batch_size = 32; }));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const std::optional<json> second = scene.cluster.StoredConfigMap(kNs, "train-plan");
  EXPECT_NE((*second)["metadata"]["annotations"][hash_key], first_hash);
  ASSERT_OK_AND_ASSIGN(plan, api::Plan::FromJson(json::parse(
                                 (*second)["data"][std::string(kPlanKey)].get<std::string>())));
  EXPECT_EQ(plan.global_batch_size, 32);
}

TEST(ReconcilerPlan, MissingLayerTableWaitsWithPlannedFalseNamingTheField) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  api::TrainingJob job =
      scene.AddLayerTableJob("custom", api::ConfigMapKeyRef{"layers", "table.csv"});
  ReconcilerOptions options = scene.Options();
  Reconciler reconciler(scene.cluster, scene.cluster, options);
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "custom"));
  EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(options.waiting_requeue));
  job = scene.Job("custom");
  EXPECT_EQ(ConditionOf(job, api::kConditionPlanned).status, api::ConditionStatus::kFalse);
  EXPECT_THAT(ConditionOf(job, api::kConditionPlanned).message, HasSubstr("spec.model.layerTable"));
  EXPECT_THAT(ConditionOf(job, api::kConditionPlanned).message, HasSubstr("team/layers"));
  EXPECT_EQ(job.status.phase, api::JobPhase::kPending);
  EXPECT_TRUE(scene.cluster.AllPods().empty());
}

TEST(ReconcilerPlacement, ForegroundGangIsPlacedWholeWithDeterministicNames) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 4);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  ASSERT_EQ(job.status.placement.size(), 4u);
  std::set<std::string> uuids;
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(job.status.placement[r].pod, PodName("train", 0, static_cast<std::int64_t>(r)));
    EXPECT_EQ(job.status.placement[r].node, "node-a");
    uuids.insert(job.status.placement[r].gpu_uuids.at(0));
  }
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_THAT(PodNames(scene.cluster.AllPods()),
              ElementsAre("train-g0-0", "train-g0-1", "train-g0-2", "train-g0-3"));
  const json pod = *scene.cluster.GetPod(kNs, "train-g0-2");
  EXPECT_EQ(pod["spec"]["nodeName"], "node-a");
  EXPECT_EQ(pod["metadata"]["annotations"][std::string(kAnnotationGpuUuids)],
            job.status.placement[2].gpu_uuids[0]);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).status, api::ConditionStatus::kTrue);
  EXPECT_EQ(ConditionOf(job, api::kConditionRunning).reason, "PodsStarting");
  EXPECT_EQ(scene.cluster.EventsWithReason("Planned").size(), 1u);
  EXPECT_EQ(scene.cluster.EventsWithReason("Placed").size(), 1u);
}

TEST(ReconcilerPlacement, ASecondReconcileWritesNothing) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const auto writes = scene.cluster.writes();
  const auto events = scene.cluster.Events().size();
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), writes);
  EXPECT_EQ(scene.cluster.Events().size(), events);

  // Running: one status write and one Event, then quiet again.
  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), writes + 1);
  EXPECT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), writes + 1);
  EXPECT_EQ(scene.cluster.EventsWithReason("Running").size(), 1u);
}

TEST(ReconcilerCrashSafety, AStopAfterAnyPodCreationRecreatesExactlyTheMissingPods) {
  constexpr int kPods = 4;
  for (int k = 0; k < kPods; ++k) {
    SCOPED_TRACE(::testing::Message() << "stopped after " << k << " pod creations");
    FakeScene scene;
    scene.AddNode("node-a", 4);
    scene.AddNode("node-b", 4);
    scene.AddForeground("train", kPods);
    {
      Reconciler first(scene.cluster, scene.cluster, scene.Options());
      // Writes: the status (Planned), the Plan ConfigMap, the status (placement), the gang's
      // Service, then one per pod.
      scene.cluster.FailNthWrite(4 + k + 1, absl::UnavailableError("connection reset"));
      EXPECT_FALSE(first.Reconcile(kNs, "train").ok());
      EXPECT_EQ(scene.cluster.AllPods().size(), static_cast<std::size_t>(k));
    }
    const std::vector<api::PodPlacement> recorded = scene.Job("train").status.placement;
    ASSERT_EQ(recorded.size(), static_cast<std::size_t>(kPods));
    Reconciler restarted(scene.cluster, scene.cluster, scene.Options());  // Nothing remembered.
    ASSERT_OK(restarted.Reconcile(kNs, "train").status());
    ASSERT_OK(restarted.Reconcile(kNs, "train").status());
    EXPECT_THAT(PodNames(scene.cluster.AllPods()),
                ElementsAre("train-g0-0", "train-g0-1", "train-g0-2", "train-g0-3"));
    const api::TrainingJob job = scene.Job("train");
    ASSERT_EQ(job.status.placement.size(), recorded.size());
    for (std::size_t r = 0; r < recorded.size(); ++r) {
      EXPECT_EQ(job.status.placement[r].gpu_uuids, recorded[r].gpu_uuids);
      const json pod = *scene.cluster.GetPod(kNs, recorded[r].pod);
      EXPECT_EQ(pod["spec"]["nodeName"], recorded[r].node);
    }
    EXPECT_EQ(job.status.gang_generation, 0);
  }
}

TEST(ReconcilerCrashSafety, RecordedPlacementOnAVanishedGpuIsPlacedAfreshWithANewGeneration) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddNode("node-b", 2);
  scene.AddForeground("train", 2);
  {
    Reconciler first(scene.cluster, scene.cluster, scene.Options());
    scene.cluster.FailNthWrite(5, absl::UnavailableError("connection reset"));  // First pod.
    EXPECT_FALSE(first.Reconcile(kNs, "train").ok());
  }
  ASSERT_EQ(scene.Job("train").status.placement.at(0).node, "node-a");
  scene.cluster.SetNodeState("node-a", NodeState{false, true, false});
  Reconciler restarted(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(restarted.Reconcile(kNs, "train").status());
  api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.gang_generation, 1);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).reason, "PlacementConflict");
  ASSERT_OK(restarted.Reconcile(kNs, "train").status());
  job = scene.Job("train");
  ASSERT_EQ(job.status.placement.size(), 2u);
  EXPECT_EQ(job.status.placement[0].node, "node-b");
  EXPECT_THAT(PodNames(scene.cluster.AllPods()), ElementsAre("train-g1-0", "train-g1-1"));
}

TEST(ReconcilerCrashSafety, GpusRecordedByAnotherJobWithoutPodsYetAreNotGivenAway) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("first", 2);
  scene.AddForeground("second", 2);
  {
    Reconciler stopped(scene.cluster, scene.cluster, scene.Options());
    scene.cluster.FailNthWrite(5, absl::UnavailableError("connection reset"));  // First pod.
    EXPECT_FALSE(stopped.Reconcile(kNs, "first").ok());
  }
  ASSERT_EQ(scene.Job("first").status.placement.size(), 2u);
  Reconciler restarted(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK_AND_ASSIGN(ReconcileResult second, restarted.Reconcile(kNs, "second"));
  EXPECT_TRUE(second.waiting_for_gpus);
  ASSERT_OK(restarted.Reconcile(kNs, "first").status());
  EXPECT_THAT(PodNames(scene.cluster.AllPods()), ElementsAre("first-g0-0", "first-g0-1"));
}

TEST(ReconcilerCrashSafety, AnIntentWriteWhoseResponseWasLostKeepsItsGpuUntilTheCacheShowsIt) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  scene.AddBackground("first");
  scene.AddBackground("second");
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  // The API server records the placement, the connection breaks before the answer, and the
  // cache still shows the job without it.
  scene.cluster.FreezeJobView(kNs, "first");
  scene.cluster.LoseNextPlacementWriteResponse(absl::UnavailableError("connection reset"));
  EXPECT_FALSE(reconciler.Reconcile(kNs, "first").ok());
  ASSERT_EQ(scene.cluster.StoredJob(kNs, "first").status.placement.size(), 1u);
  const std::string gpu = scene.cluster.StoredJob(kNs, "first").status.placement[0].gpu_uuids.at(0);

  ASSERT_OK_AND_ASSIGN(ReconcileResult second, reconciler.Reconcile(kNs, "second"));
  EXPECT_TRUE(second.waiting_for_gpus);
  // Looked at again through the stale cache: the same placement is written again, which the
  // API server refuses (it holds a newer version); nothing is created meanwhile.
  EXPECT_FALSE(reconciler.Reconcile(kNs, "first").ok());
  EXPECT_TRUE(scene.cluster.AllPods().empty());
  ASSERT_OK_AND_ASSIGN(second, reconciler.Reconcile(kNs, "second"));
  EXPECT_TRUE(second.waiting_for_gpus);

  scene.cluster.ThawJobView(kNs, "first");
  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  ASSERT_OK_AND_ASSIGN(second, reconciler.Reconcile(kNs, "second"));
  EXPECT_TRUE(second.waiting_for_gpus);
  const std::vector<json> pods = scene.cluster.AllPods();
  ASSERT_THAT(PodNames(pods), ElementsAre("first-g0-0"));
  EXPECT_EQ(scene.Job("first").status.placement[0].gpu_uuids.at(0), gpu);
}

TEST(ReconcilerCrashSafety, ARecordedBackgroundPlacementOnAGpuThatFilledUpIsPlacedAfresh) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddBackground("first");
  scene.AddBackground("second");
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  const api::PodPlacement taken = scene.Job("first").status.placement.at(0);
  // A placement recorded on the same GPU by a controller that could not know (its cache behind).
  api::TrainingJob second = scene.Job("second");
  second.status.phase = api::JobPhase::kPlaced;
  second.status.placement = {{"second-g0-0", taken.node, taken.gpu_uuids}};
  ASSERT_OK(scene.cluster.UpdateJobStatus(second).status());

  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  second = scene.Job("second");
  EXPECT_EQ(second.status.gang_generation, 1);
  EXPECT_EQ(ConditionOf(second, api::kConditionPlaced).reason, "PlacementConflict");
  EXPECT_THAT(ConditionOf(second, api::kConditionPlaced).message,
              HasSubstr("taken by team/first-g0-0"));
  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  second = scene.Job("second");
  ASSERT_EQ(second.status.placement.size(), 1u);
  EXPECT_NE(second.status.placement[0].gpu_uuids, taken.gpu_uuids);
  EXPECT_THAT(PodNames(scene.cluster.AllPods()), ElementsAre("first-g0-0", "second-g1-0"));
}

TEST(ReconcilerPlacement, NotPlaceableSetsPlacedFalseAndTheWaitingFlag) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("big", 4);
  ReconcilerOptions options = scene.Options();
  ControllerMetrics metrics;
  Reconciler reconciler(scene.cluster, scene.cluster, options, &metrics);
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "big"));
  EXPECT_TRUE(result.waiting_for_gpus);
  EXPECT_EQ(result.requeue_after, std::chrono::nanoseconds(options.waiting_requeue));
  const api::TrainingJob job = scene.Job("big");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlanned);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).status, api::ConditionStatus::kFalse);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).reason, kNotPlaceableReason);
  EXPECT_THAT(ConditionOf(job, api::kConditionPlaced).message, HasSubstr("4 GPUs"));
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_TRUE(scene.cluster.AllPods().empty());
  EXPECT_THAT(metrics.Serialize(), HasSubstr("reason=\"not_placeable\""));
}

// Reads the job as it was when the reader was made: a lagging informer cache.
class StaleJobReader : public ForwardingReader {
 public:
  using ForwardingReader::ForwardingReader;
  std::optional<api::TrainingJob> GetJob(std::string_view ns,
                                         std::string_view name) const override {
    if (!snapshot_) snapshot_ = source_.GetJob(ns, name);
    return snapshot_;
  }

 private:
  mutable std::optional<api::TrainingJob> snapshot_;
};

TEST(ReconcilerConflict, AStatusWriteFromAStaleReadReturnsConflict) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  StaleJobReader stale(scene.cluster);
  ASSERT_TRUE(stale.GetJob(kNs, "train").has_value());  // Snapshot before anyone writes.
  Reconciler other(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(other.Reconcile(kNs, "train").status());  // Moves resourceVersion on.

  Reconciler lagging(stale, scene.cluster, scene.Options());
  const absl::StatusOr<ReconcileResult> result = lagging.Reconcile(kNs, "train");
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(kube::IsConflict(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("has been modified"));
}

TEST(ReconcilerConflict, AJobDeletedSinceTheCacheReadGetsNoOrphanObjects) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  StaleJobReader stale(scene.cluster);
  ASSERT_TRUE(stale.GetJob(kNs, "train").has_value());
  scene.cluster.RemoveJob(kNs, "train");  // Deleted; the cache has not seen it yet.
  Reconciler reconciler(stale, scene.cluster, scene.Options());
  const absl::StatusOr<ReconcileResult> result = reconciler.Reconcile(kNs, "train");
  EXPECT_TRUE(kube::IsNotFound(result.status())) << result.status();
  EXPECT_FALSE(scene.cluster.StoredConfigMap(kNs, "train-plan").has_value());
  EXPECT_TRUE(scene.cluster.AllPods().empty());
}

TEST(Reconciler, AJobBeingDeletedGetsNothingNew) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  ASSERT_OK(scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) {
    j.metadata.deletion_timestamp = "2026-05-01T10:00:00Z";
  }));
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), 0);
}

TEST(ReconcilerConcurrency, TwoWorkersReconcilingDifferentJobsNeverShareAGpu) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddNode("node-b", 2);
  const std::vector<std::string> jobs = {"j0", "j1", "j2", "j3", "j4", "j5"};
  for (const std::string& name : jobs) scene.AddForeground(name, 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  // Each worker owns half of the keys, as the work queue guarantees one worker per key.
  auto worker = [&](std::size_t first) {
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = first; i < jobs.size(); i += 2) {
        reconciler.Reconcile(kNs, jobs[i]).status().IgnoreError();
      }
    }
  };
  std::thread a(worker, 0);
  std::thread b(worker, 1);
  a.join();
  b.join();
  std::set<std::string> uuids;
  std::size_t placed_pods = 0;
  for (const json& pod : scene.cluster.AllPods()) {
    ++placed_pods;
    const std::string uuid = pod["metadata"]["annotations"][std::string(kAnnotationGpuUuids)];
    EXPECT_TRUE(uuids.insert(uuid).second) << "GPU " << uuid << " given twice";
  }
  EXPECT_EQ(placed_pods, 6u);  // Three 2-GPU gangs fill the 6 GPUs; the others wait.
  std::size_t waiting = 0;
  for (const std::string& name : jobs) {
    if (scene.Job(name).status.placement.empty()) ++waiting;
  }
  EXPECT_EQ(waiting, 3u);
}

TEST(Reconciler, AJobThatIsGoneNeedsNothing) {
  FakeScene scene;
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "missing"));
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_EQ(scene.cluster.writes(), 0);
}

}  // namespace
}  // namespace wavepool::controller
