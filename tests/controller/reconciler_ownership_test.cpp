// Ownership by uid (reconciler.h, docs/controller.md "Ownership", against FakeCluster): a job
// re-created under the same name, pods orphaned from their job, pods and ConfigMaps or Services
// of the job's names that someone else made. None is adopted, counted, updated or deleted.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

bool Terminating(const json& pod) { return pod["metadata"].contains("deletionTimestamp"); }

// Every pod of status.placement exists, is controlled by the job's uid, and runs where the
// placement says (node and GPU annotation).
void ExpectPlacementMatchesOwnPods(const FakeCluster& cluster, const api::TrainingJob& job) {
  ASSERT_THAT(job.status.placement, Not(IsEmpty()));
  for (const api::PodPlacement& p : job.status.placement) {
    const std::optional<json> pod = cluster.GetPod(kNs, p.pod);
    ASSERT_TRUE(pod.has_value()) << p.pod;
    EXPECT_TRUE(IsControlledBy(MetaOf(*pod), job.metadata.uid)) << p.pod << " is not the job's";
    EXPECT_EQ((*pod)["spec"]["nodeName"], p.node) << p.pod;
    EXPECT_EQ((*pod)["metadata"]["annotations"][std::string(kAnnotationGpuUuids)],
              p.gpu_uuids.at(0))
        << p.pod;
  }
}

std::set<std::string> AssignedPods(const FakeCluster& cluster) {
  std::set<std::string> pods;
  for (const GpuAssignment& a : cluster.Assignments()) pods.insert(a.pod);
  return pods;
}

// A fg job `train` on both GPUs of node-a, Running; node-b has 2 free GPUs.
struct OldJobRunning : ::testing::Test {
  void SetUp() override {
    scene.AddNode("node-a", 2);
    scene.AddNode("node-b", 2);
    old_uid = scene.AddForeground("train", 2).metadata.uid;
    ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
    scene.SetGangPhase("train", "Running");
    ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
    ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);
    ASSERT_EQ(scene.Job("train").status.placement.at(0).node, "node-a");
  }

  FakeScene scene;
  Reconciler reconciler{scene.cluster, scene.cluster, scene.Options()};
  std::string old_uid;
};

TEST_F(OldJobRunning, ARecreatedJobDoesNotAdoptItsPredecessorsTerminatingPods) {
  // `kubectl delete tj train`: garbage collection deletes the pods (they terminate for their
  // grace period) and the Plan ConfigMap, and the job is gone; then it is created again.
  for (const std::string pod : {"train-g0-0", "train-g0-1"}) {
    ASSERT_OK(scene.cluster.DeletePod(kNs, pod, "", std::nullopt));
  }
  scene.cluster.RemoveConfigMap(kNs, PlanConfigMapName("train"));
  scene.cluster.RemoveJob(kNs, "train");
  const api::TrainingJob recreated = scene.AddForeground("train", 2);
  ASSERT_NE(recreated.metadata.uid, old_uid);

  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const api::TrainingJob job = scene.Job("train");
  // Not Running on the predecessor's Running pods, and at a generation whose names are free.
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(job.status.gang_generation, 1);
  ASSERT_THAT(job.status.placement, SizeIs(2));
  EXPECT_EQ(job.status.placement[0].pod, "train-g1-0");
  // The terminating pods still hold node-a's GPUs: the new gang goes to node-b.
  EXPECT_EQ(job.status.placement[0].node, "node-b");
  ExpectPlacementMatchesOwnPods(scene.cluster, job);
  // The predecessor's pods are left to finish, neither deleted again nor counted.
  for (const std::string pod : {"train-g0-0", "train-g0-1"}) {
    const std::optional<json> old = scene.cluster.GetPod(kNs, pod);
    ASSERT_TRUE(old.has_value());
    EXPECT_TRUE(IsControlledBy(MetaOf(*old), old_uid));
  }
  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);
}

TEST_F(OldJobRunning, AfterAnOrphaningDeleteTheNewJobDoesNotCountTheOrphans) {
  // `kubectl delete tj train --cascade=orphan`: the dependents lose their ownerReferences.
  for (const std::string pod : {"train-g0-0", "train-g0-1"}) {
    ASSERT_OK(
        scene.cluster.EditPod(kNs, pod, [](json& p) { p["metadata"].erase("ownerReferences"); }));
  }
  json plan = *scene.cluster.StoredConfigMap(kNs, PlanConfigMapName("train"));
  plan["metadata"].erase("ownerReferences");
  scene.cluster.PutConfigMap(plan);
  scene.cluster.RemoveJob(kNs, "train");
  const api::TrainingJob recreated = scene.AddForeground("train", 2);

  // The orphaned Plan ConfigMap is not the new job's: reported, not overwritten.
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(ConditionOf(job, api::kConditionPlanned).reason, "NameClash");
  EXPECT_THAT(ConditionOf(job, api::kConditionPlanned).message,
              HasSubstr("ConfigMap team/train-plan"));
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_FALSE(IsControlledBy(MetaOf(*scene.cluster.StoredConfigMap(kNs, "train-plan")),
                              recreated.metadata.uid));

  // The operator removes it; the job plans and places its own gang.
  scene.cluster.RemoveConfigMap(kNs, "train-plan");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced) << "the orphans are Running, not its pods";
  EXPECT_EQ(job.status.gang_generation, 1);
  ExpectPlacementMatchesOwnPods(scene.cluster, job);
  // The orphans are not its pods, not deleted by it, and hold no GPU in placement.
  for (const std::string pod : {"train-g0-0", "train-g0-1"}) {
    const std::optional<json> orphan = scene.cluster.GetPod(kNs, pod);
    ASSERT_TRUE(orphan.has_value());
    EXPECT_FALSE(Terminating(*orphan)) << pod;
  }
  EXPECT_THAT(AssignedPods(scene.cluster), ElementsAre("team/train-g1-0", "team/train-g1-1"));
  EXPECT_TRUE(IsControlledBy(MetaOf(*scene.cluster.StoredConfigMap(kNs, "train-plan")),
                             recreated.metadata.uid));
}

// A pod a tenant made to look like the controller's: the job's labels, gang generation 0, rank
// 0's name, GPU annotations claiming node-a's GPUs, Running; but no ownerReference.
json ForeignPod(const std::string& name, const std::string& job, const std::string& uuids) {
  json labels = json::object();
  for (const auto& [key, value] : JobSelector(job)) labels[key] = value;
  labels[std::string(kLabelRole)] = "Foreground";
  labels[std::string(kLabelGangGeneration)] = "0";
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", std::string(kNs)},
            {"labels", labels},
            {"annotations",
             {{std::string(kAnnotationJobName), job},
              {std::string(kAnnotationGpuUuids), uuids},
              {std::string(kAnnotationMemoryPerGpu), "1073741824"},
              {std::string(kAnnotationIdleFraction), "0"},
              {std::string(kAnnotationMaxSlowdown), "1.5"},
              {std::string(kAnnotationAllowBackground), "false"}}}}},
          {"spec", {{"nodeName", "node-a"}, {"containers", json::array()}}}};
}

TEST(Ownership, AdversarialForeignManagedByPodNeverCountsAsTheJobsNorHoldsGpus) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  ASSERT_OK(scene.cluster.CreatePod(ForeignPod("train-g0-0", "train", "GPU-node-a-0")).status());
  ASSERT_OK(scene.cluster.CreatePod(ForeignPod("squat", "other", "GPU-node-a-1")).status());
  ASSERT_OK(scene.cluster.SetPodPhase(kNs, "train-g0-0", "Running"));
  EXPECT_THAT(AssignedPods(scene.cluster), IsEmpty()) << "annotations alone reserve no GPU";

  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(job.status.gang_generation, 1) << "train-g0-0 is taken by someone else's pod";
  ExpectPlacementMatchesOwnPods(scene.cluster, job);
  EXPECT_THAT(AssignedPods(scene.cluster), ElementsAre("team/train-g1-0", "team/train-g1-1"));
  // Left alone.
  for (const std::string pod : {"train-g0-0", "squat"}) {
    ASSERT_TRUE(scene.cluster.GetPod(kNs, pod).has_value());
    EXPECT_FALSE(Terminating(*scene.cluster.GetPod(kNs, pod)));
  }
}

TEST(Ownership, APlanConfigMapTheJobDoesNotOwnIsNeitherOverwrittenNorAdopted) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  const json theirs = {{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"metadata", {{"name", "train-plan"}, {"namespace", std::string(kNs)}}},
                       {"data", {{"plan.json", "somebody else's data"}}}};
  scene.cluster.PutConfigMap(theirs);
  const api::TrainingJob created = scene.AddForeground("train", 1);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());

  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPending);
  const api::Condition& planned = ConditionOf(job, api::kConditionPlanned);
  EXPECT_EQ(planned.status, api::ConditionStatus::kFalse);
  EXPECT_EQ(planned.reason, "NameClash");
  EXPECT_THAT(planned.message, HasSubstr("ConfigMap team/train-plan"));
  const std::vector<FakeCluster::RecordedEvent> events =
      scene.cluster.EventsWithReason("NameClash");
  ASSERT_THAT(events, SizeIs(1)) << "reported once, not on every look";
  EXPECT_TRUE(events[0].warning);
  EXPECT_THAT(events[0].message, HasSubstr("ConfigMap team/train-plan"));
  const json stored = *scene.cluster.StoredConfigMap(kNs, "train-plan");
  EXPECT_EQ(stored["data"]["plan.json"], "somebody else's data");
  EXPECT_FALSE(stored["metadata"].contains("ownerReferences"));
  EXPECT_THAT(scene.cluster.AllPods(), IsEmpty()) << "no pod may mount another plan";

  scene.cluster.RemoveConfigMap(kNs, "train-plan");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(ConditionOf(scene.Job("train"), api::kConditionPlanned).status,
            api::ConditionStatus::kTrue);
  EXPECT_TRUE(IsControlledBy(MetaOf(*scene.cluster.StoredConfigMap(kNs, "train-plan")),
                             created.metadata.uid));
}

TEST(Ownership, AServiceOfTheGangsNameTheJobDoesNotOwnMovesTheGangToAFreeName) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  json labels = json::object();
  for (const auto& [key, value] : JobSelector("train")) labels[key] = value;
  const json theirs = {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", {{"name", "train-g0"}, {"namespace", std::string(kNs)}, {"labels", labels}}},
      {"spec", {{"clusterIP", "None"}}}};
  ASSERT_OK(scene.cluster.CreateService(theirs).status());
  scene.AddForeground("train", 1);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());

  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.gang_generation, 1);
  ExpectPlacementMatchesOwnPods(scene.cluster, job);
  std::vector<std::string> services;
  for (const json& s : scene.cluster.AllServices()) {
    services.push_back(s["metadata"]["name"].get<std::string>());
    if (s["metadata"]["name"] == "train-g0") {
      EXPECT_FALSE(s["metadata"].contains("ownerReferences")) << "not adopted";
    }
  }
  EXPECT_THAT(services, ElementsAre("train-g0", "train-g1"));
}

}  // namespace
}  // namespace wavepool::controller
