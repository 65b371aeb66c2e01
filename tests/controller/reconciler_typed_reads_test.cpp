// The reconciler reads pods, Services and ConfigMaps as typed objects (cluster.h): an object with
// a field of the wrong type is named with that field, left out (pods, Services) or reported
// (ConfigMaps), and never crashes a reconcile or silently reads as a default.
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
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr std::string_view kNs = FakeScene::kNamespace;

TEST(ReconcilerTypedReads, MistypedPodIsLeftOutWithAWarningNamingTheFieldAndNothingCrashes) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_EQ(scene.cluster.PodsOfJob(kNs, "train").size(), 2u);
  ASSERT_TRUE(scene.cluster.DecodeWarnings().empty());

  ASSERT_OK(
      scene.cluster.EditPod(kNs, "train-g0-1", [](json& pod) { pod["spec"]["nodeName"] = 42; }));
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "train").size(), 1u);
  EXPECT_THAT(scene.cluster.DecodeWarnings(),
              Contains(AllOf(HasSubstr("team/train-g0-1"),
                             HasSubstr("spec.nodeName: must be a string, got number"))));
  // Its GPUs are not counted: the decoding error is AssignmentFromPod's.
  const std::optional<json> stored = scene.cluster.GetPod(kNs, "train-g0-1");
  ASSERT_TRUE(stored.has_value());
  EXPECT_THAT(AssignmentFromPod(*stored),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("Pod team/train-g0-1: spec.nodeName"),
                             HasSubstr("not a wavepool pod"))));
  EXPECT_EQ(scene.cluster.Assignments().size(), 1u);

  // The reconcile goes on with what it can read; the pod's name stays taken (AlreadyExists),
  // so the stored pod is neither replaced nor deleted.
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  const std::optional<json> after = scene.cluster.GetPod(kNs, "train-g0-1");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ((*after)["spec"]["nodeName"], 42);
  EXPECT_FALSE(scene.cluster.PodTerminating(kNs, "train-g0-1"));
}

TEST(ReconcilerTypedReads, MistypedLayerTableConfigMapWaitsWithTheFieldNamed) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  api::TrainingJob job =
      scene.AddLayerTableJob("custom", api::ConfigMapKeyRef{"layers", "table.csv"});
  scene.cluster.PutConfigMap(json::parse(R"({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "layers", "namespace": "team"},
      "data": {"table.csv": ["not", "text"]}})"));
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "custom").status());
  job = scene.Job("custom");
  const api::Condition& planned = ConditionOf(job, api::kConditionPlanned);
  EXPECT_EQ(planned.status, api::ConditionStatus::kFalse);
  EXPECT_THAT(planned.message, HasSubstr("spec.model.layerTable"));
  EXPECT_THAT(planned.message,
              HasSubstr("ConfigMap team/layers: data[table.csv]: must be a string, got array"));
  EXPECT_TRUE(scene.cluster.AllPods().empty());
}

TEST(ReconcilerTypedReads, MistypedPlanConfigMapIsAnErrorNamingTheField) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  scene.cluster.PutConfigMap(json::parse(R"({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "train-plan", "namespace": "team", "annotations": {"a": 1.5}}})"));
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  EXPECT_THAT(
      reconciler.Reconcile(kNs, "train").status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ConfigMap: metadata.annotations")));
  EXPECT_TRUE(scene.cluster.AllPods().empty());
  // The ConfigMap is left as it was.
  const std::optional<json> stored = scene.cluster.StoredConfigMap(kNs, "train-plan");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["metadata"]["annotations"]["a"], 1.5);
}

TEST(ReconcilerTypedReads, MistypedServiceIsLeftOutWithAWarningNamingTheField) {
  FakeScene scene;
  scene.AddNode("node-a", 4);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_EQ(scene.cluster.ServicesOfJob(kNs, "train").size(), 1u);
  json service = scene.cluster.AllServices().front();
  ASSERT_OK(scene.cluster.DeleteService(kNs, "train-g0", ""));
  service["metadata"].erase("resourceVersion");
  service["spec"]["selector"] = "everything";
  ASSERT_OK(scene.cluster.CreateService(service).status());
  EXPECT_TRUE(scene.cluster.ServicesOfJob(kNs, "train").empty());
  EXPECT_THAT(scene.cluster.DecodeWarnings(),
              Contains(AllOf(HasSubstr("team/train-g0"),
                             HasSubstr("spec.selector: must be an object, got string"))));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());  // Creating it gets AlreadyExists.
}

}  // namespace
}  // namespace wavepool::controller
