// The reconciler keeps one headless Service per gang (reconcile_service.cpp, against FakeCluster):
// created before the gang's first pod, created again when deleted, replaced with the gang, and
// removed when the job is suspended.
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
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
using ::testing::IsEmpty;

constexpr std::string_view kNs = FakeScene::kNamespace;

std::vector<std::string> ServiceNames(const FakeCluster& cluster) {
  std::vector<std::string> names;
  for (const json& service : cluster.AllServices()) {
    names.push_back(service["metadata"]["name"].get<std::string>());
  }
  return names;
}

std::int64_t ResourceVersion(const json& object) {
  std::int64_t version = 0;
  EXPECT_TRUE(absl::SimpleAtoi(object["metadata"]["resourceVersion"].get<std::string>(), &version));
  return version;
}

TEST(ReconcilerService, TheGangsServiceIsCreatedBeforeItsFirstPod) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  const api::TrainingJob job = scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_THAT(ServiceNames(scene.cluster), ElementsAre("train-g0"));
  const json service = scene.cluster.AllServices().front();
  EXPECT_EQ(service["metadata"]["ownerReferences"][0]["uid"], job.metadata.uid);
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  for (const json& pod : scene.cluster.AllPods()) {
    EXPECT_LT(ResourceVersion(service), ResourceVersion(pod)) << "created before the pods";
    EXPECT_EQ(pod["spec"]["subdomain"], "train-g0");
  }

  // Its creation failing creates no pod; the next reconcile creates both.
  FakeScene failing;
  failing.AddNode("node-a", 4);
  failing.AddForeground("train", 2);
  Reconciler first(failing.cluster, failing.cluster, failing.Options());
  // Writes: the status (Planned), the Plan ConfigMap, the status (placement), the Service.
  failing.cluster.FailNthWrite(4, absl::UnavailableError("connection reset"));
  EXPECT_FALSE(first.Reconcile(kNs, "train").ok());
  EXPECT_THAT(failing.cluster.AllServices(), IsEmpty());
  EXPECT_THAT(failing.cluster.AllPods(), IsEmpty());
  ASSERT_OK(first.Reconcile(kNs, "train").status());
  EXPECT_THAT(ServiceNames(failing.cluster), ElementsAre("train-g0"));
  EXPECT_THAT(PodNames(failing.cluster.AllPods()), ElementsAre("train-g0-0", "train-g0-1"));
}

TEST(ReconcilerService, AServiceDeletedWhileTheGangRunsIsCreatedAgainAndOnlyThen) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const auto writes = scene.cluster.writes();
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_EQ(scene.cluster.writes(), writes) << "an existing Service is left alone";

  scene.cluster.RemoveService(kNs, "train-g0");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_THAT(ServiceNames(scene.cluster), ElementsAre("train-g0"));
  EXPECT_EQ(scene.Job("train").status.gang_generation, 0) << "the gang itself runs on";
}

TEST(ReconcilerService, AGangRestartReplacesTheServiceWithTheNewGenerations) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(scene.cluster.SetPodPhase(kNs, "train-g0-1", "Failed", 1, "Error"));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());  // Restart: generation 1.
  ASSERT_EQ(scene.Job("train").status.gang_generation, 1);

  scene.cluster.FinishTerminatingPods();
  scene.clock.Advance(std::chrono::seconds(10));  // Past the restart backoff.
  scene.Heartbeat();
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_THAT(PodNames(scene.cluster.AllPods()), ElementsAre("train-g1-0", "train-g1-1"));
  EXPECT_THAT(ServiceNames(scene.cluster), ElementsAre("train-g1"));
  const json service = scene.cluster.AllServices().front();
  EXPECT_EQ(service["spec"]["selector"][std::string(kLabelGangGeneration)], "1");
  for (const json& pod : scene.cluster.AllPods()) {
    EXPECT_EQ(pod["spec"]["subdomain"], "train-g1");
  }
}

TEST(ReconcilerService, SuspendRemovesTheServiceAndResumeMakesTheNextOne) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.suspend = true; }));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_THAT(scene.cluster.AllServices(), IsEmpty());

  scene.cluster.FinishTerminatingPods();
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "train", [](api::TrainingJob& j) { j.spec.suspend = false; }));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_THAT(ServiceNames(scene.cluster), ElementsAre("train-g1"));
}

TEST(ReconcilerService, AServiceTheJobDoesNotOwnIsNeverDeleted) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  const api::TrainingJob job = scene.AddForeground("train", 2);
  // Labelled as the job's, for an old generation, but owned by something else.
  api::TrainingJob impostor = job;
  impostor.metadata.uid = "someone-else";
  ASSERT_OK_AND_ASSIGN(json foreign, BuildGangService(impostor, 7));
  ASSERT_OK(scene.cluster.CreateService(foreign).status());
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  EXPECT_THAT(ServiceNames(scene.cluster), ElementsAre("train-g0", "train-g7"));
}

}  // namespace
}  // namespace wavepool::controller
