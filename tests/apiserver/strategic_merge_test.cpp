// Strategic merge patch: the merge keys of the built-in kinds and the patch directives, with
// results worked out by hand from k8s.io/apimachinery's strategicpatch rules.
#include "tests/support/apiserver/strategic_merge.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json J(const char* text) { return json::parse(text); }

// `original` patched by `patch` as group/kind; the test fails on an error.
json Patch(const json& original, const json& patch, std::string_view group = "apps",
           std::string_view kind = "Deployment") {
  absl::StatusOr<json> result = StrategicMergePatch(original, patch, group, kind);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : json();
}

// A Deployment whose pod template has `containers`.
json Deployment(json containers) {
  return {{"metadata", {{"name", "web"}}},
          {"spec", {{"template", {{"spec", {{"containers", std::move(containers)}}}}}}}};
}

json PodSpecPatch(json pod_spec) { return {{"spec", {{"template", {{"spec", pod_spec}}}}}}; }

const json& Containers(const json& deployment) {
  return deployment["spec"]["template"]["spec"]["containers"];
}

TEST(StrategicMerge, ContainersMergeByName) {
  const json original = Deployment(J(R"([{"name": "a", "image": "a:1"},
                                         {"name": "b", "image": "b:1", "args": ["x"]}])"));
  const json result = Patch(original, PodSpecPatch(J(R"({"containers": [
                                                        {"name": "b", "image": "b:2"}]})")));
  EXPECT_EQ(Containers(result), J(R"([{"name": "a", "image": "a:1"},
                                      {"name": "b", "image": "b:2", "args": ["x"]}])"));
}

TEST(StrategicMerge, NewItemsFollowTheOriginalsTheyComeAfterInThePatch) {
  // Original a, b, c; the patch names b (changed) then d (new). Patch items keep the patch's
  // order, server-only items (a, c) the original's, interleaved by original position:
  // a (0) before b (1); c vs b: 2 > 1 so b; c vs d: d is new so d; then c.
  const json original = Deployment(J(R"([{"name": "a"}, {"name": "b"}, {"name": "c"}])"));
  const json result = Patch(original, PodSpecPatch(J(R"({"containers": [
                                                        {"name": "b", "image": "b:2"},
                                                        {"name": "d"}]})")));
  EXPECT_EQ(Containers(result), J(R"([{"name": "a"}, {"name": "b", "image": "b:2"},
                                      {"name": "d"}, {"name": "c"}])"));
}

TEST(StrategicMerge, EnvPortsAndVolumeMountsMergeByTheirKeys) {
  const json original = Deployment(J(R"([{"name": "a",
      "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
      "ports": [{"containerPort": 80, "name": "http"}],
      "volumeMounts": [{"mountPath": "/data", "name": "d"}]}])"));
  const json result = Patch(original, PodSpecPatch(J(R"({"containers": [{"name": "a",
      "env": [{"name": "Y", "value": "3"}],
      "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 9090}],
      "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}]})")));
  EXPECT_EQ(Containers(result)[0], J(R"({"name": "a",
      "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}],
      "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 9090}],
      "volumeMounts": [{"mountPath": "/data", "name": "d", "readOnly": true}]})"));
}

TEST(StrategicMerge, TolerationsAndUnkeyedListsAreReplaced) {
  json original = Deployment(J(R"([{"name": "a", "args": ["1", "2"]}])"));
  original["spec"]["template"]["spec"]["tolerations"] = J(R"([{"key": "gpu"}, {"key": "spot"}])");
  const json result = Patch(original, PodSpecPatch(J(R"({"tolerations": [{"key": "tpu"}],
      "containers": [{"name": "a", "args": ["3"]}]})")));
  EXPECT_EQ(result["spec"]["template"]["spec"]["tolerations"], J(R"([{"key": "tpu"}])"));
  EXPECT_EQ(Containers(result)[0]["args"], J(R"(["3"])"));
}

TEST(StrategicMerge, PatchDeleteAndReplaceInLists) {
  const json original = Deployment(J(R"([{"name": "a"}, {"name": "b"}, {"name": "c"}])"));
  EXPECT_EQ(Containers(Patch(original, PodSpecPatch(J(R"({"containers": [
                                          {"name": "b", "$patch": "delete"}]})")))),
            J(R"([{"name": "a"}, {"name": "c"}])"));
  EXPECT_EQ(Containers(Patch(original, PodSpecPatch(J(R"({"containers": [
                                          {"name": "z"}, {"$patch": "replace"}]})")))),
            J(R"([{"name": "z"}])"));
}

TEST(StrategicMerge, PatchReplaceAndDeleteOnMapsAndNullDeletesAKey) {
  json original = Deployment(json::array());
  original["metadata"]["labels"] = {{"app", "web"}, {"tier", "front"}};
  original["spec"]["template"]["spec"]["nodeSelector"] = {{"zone", "a"}, {"disk", "ssd"}};
  original["spec"]["strategy"] =
      J(R"({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}})");
  const json result = Patch(original, J(R"({
      "metadata": {"labels": {"app": null}},
      "spec": {"strategy": {"rollingUpdate": {"$patch": "delete"}},
               "template": {"spec": {"nodeSelector": {"$patch": "replace", "zone": "b"}}}}})"));
  EXPECT_EQ(result["metadata"]["labels"], J(R"({"tier": "front"})"));
  EXPECT_EQ(result["spec"]["template"]["spec"]["nodeSelector"], J(R"({"zone": "b"})"));
  EXPECT_EQ(result["spec"]["strategy"], J(R"({"type": "RollingUpdate", "rollingUpdate": {}})"));
}

TEST(StrategicMerge, FinalizersMergeAsASetAndDeleteFromPrimitiveList) {
  const json original = J(R"({"metadata": {"finalizers": ["a", "b"]}})");
  // Union without duplicates: a (server only) before b (both), then c (new).
  EXPECT_EQ(Patch(original, J(R"({"metadata": {"finalizers": ["b", "c"]}})"), "", "ConfigMap"),
            J(R"({"metadata": {"finalizers": ["a", "b", "c"]}})"));
  EXPECT_EQ(Patch(original, J(R"({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}})"),
                  "", "ConfigMap"),
            J(R"({"metadata": {"finalizers": ["a"]}})"));
}

TEST(StrategicMerge, SetElementOrderReordersPrimitivesAndMaps) {
  EXPECT_EQ(
      Patch(J(R"({"metadata": {"finalizers": ["a", "b", "c"]}})"),
            J(R"({"metadata": {"$setElementOrder/finalizers": ["c", "a", "b"]}})"), "", "Pod"),
      J(R"({"metadata": {"finalizers": ["c", "a", "b"]}})"));
  const json original = Deployment(J(R"([{"name": "a"}, {"name": "b"}])"));
  json patch = PodSpecPatch(J(R"({"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                                  "containers": [{"name": "a", "image": "a:2"}]})"));
  EXPECT_EQ(Containers(Patch(original, patch)),
            J(R"([{"name": "b"}, {"name": "a", "image": "a:2"}])"));
}

TEST(StrategicMerge, RetainKeysClearsTheOtherMembersOfAUnion) {
  json original = Deployment(json::array());
  original["spec"]["strategy"] =
      J(R"({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}})");
  original["spec"]["template"]["spec"]["volumes"] = J(R"([{"name": "v", "emptyDir": {}}])");
  const json result = Patch(original, J(R"({"spec": {
      "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
      "template": {"spec": {"volumes": [{"name": "v", "$retainKeys": ["configMap", "name"],
                                         "configMap": {"name": "c"}}]}}}})"));
  EXPECT_EQ(result["spec"]["strategy"], J(R"({"type": "Recreate"})"));
  EXPECT_EQ(result["spec"]["template"]["spec"]["volumes"],
            J(R"([{"name": "v", "configMap": {"name": "c"}}])"));
}

TEST(StrategicMerge, OwnerReferencesMergeByUid) {
  const json original = J(R"({"metadata": {"ownerReferences": [
      {"uid": "1", "name": "x"}, {"uid": "2", "name": "y"}]}})");
  EXPECT_EQ(
      Patch(original, J(R"({"metadata": {"ownerReferences": [{"uid": "2", "controller": true}]}})"),
            "batch", "Job"),
      J(R"({"metadata": {"ownerReferences": [{"uid": "1", "name": "x"},
                                                   {"uid": "2", "name": "y", "controller": true}]}})"));
}

TEST(StrategicMerge, ConditionsMergeByTypeForPodNodeAndNamespace) {
  const json original = J(R"({"status": {"conditions": [
      {"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "False"}]}})");
  const json patch = J(R"({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})");
  const json expected = J(R"({"status": {"conditions": [
      {"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]}})");
  EXPECT_EQ(Patch(original, patch, "", "Node"), expected);
  EXPECT_EQ(Patch(original, patch, "", "Pod"), expected);
  EXPECT_EQ(Patch(original, patch, "", "Namespace"), expected);
}

TEST(StrategicMerge, NodeTaintsAreReplacedAndServicePortsMergeByPort) {
  // k8s.io/api gives NodeSpec.taints no patch strategy: the list is replaced.
  EXPECT_EQ(Patch(J(R"({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}})"),
                  J(R"({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}})"), "", "Node"),
            J(R"({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}})"));
  EXPECT_EQ(
      Patch(J(R"({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}]}})"),
            J(R"({"spec": {"ports": [{"port": 443, "name": "https"}]}})"), "", "Service"),
      J(R"({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}})"));
}

TEST(StrategicMerge, JobAndCronJobTemplatesMergeContainers) {
  const json job = J(R"({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}})");
  // A new item is not in the original, so it cannot be placed after a: it comes first (the
  // server's order; kubectl's own documentation shows the added container first).
  EXPECT_EQ(Patch(job, J(R"({"spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}})"),
                  "batch", "Job")["spec"]["template"]["spec"]["containers"],
            J(R"([{"name": "b"}, {"name": "a"}])"));
  const json cron = {{"spec", {{"jobTemplate", job}}}};
  const json cron_patch = {
      {"spec", {{"jobTemplate", J(R"({"spec": {"template": {"spec": {"containers": [
                                       {"name": "a", "image": "x"}]}}}})")}}}};
  EXPECT_EQ(Patch(cron, cron_patch, "batch",
                  "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"],
            J(R"([{"name": "a", "image": "x"}])"));
}

TEST(StrategicMerge, AddedListsLoseTheirDirectives) {
  const json result = Patch(J(R"({"metadata": {"name": "web"}})"), PodSpecPatch(J(R"({
      "containers": [{"name": "a", "env": null}, {"name": "b", "$patch": "delete"}]})")));
  EXPECT_EQ(Containers(result), J(R"([{"name": "a"}])"));
}

TEST(StrategicMerge, CustomKindsMergeLikeAJsonMergePatch) {
  const json original =
      J(R"({"metadata": {"finalizers": ["a"]}, "spec": {"gpus": 2, "items": [1, 2]}})");
  EXPECT_EQ(Patch(original, J(R"({"metadata": {"finalizers": ["b"]}, "spec": {"gpus": null,
                                  "items": [3]}})"),
                  "wavepool.dev", "TrainingJob"),
            J(R"({"metadata": {"finalizers": ["b"]}, "spec": {"items": [3]}})"));
}

// --- Bad patches ------------------------------------------------------------------------------

TEST(StrategicMergeErrors, PatchMustBeAnObject) {
  EXPECT_THAT(StrategicMergePatch(json::object(), json::array(), "apps", "Deployment"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a JSON object")));
}

TEST(StrategicMergeErrors, UnknownPatchTypeNamesTheField) {
  json original = Deployment(json::array());
  original["spec"]["strategy"] = J(R"({"type": "Recreate"})");
  EXPECT_THAT(StrategicMergePatch(original, J(R"({"spec": {"strategy": {"$patch": "merge"}}})"),
                                  "apps", "Deployment"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.strategy: unknown patch type: \"merge\"")));
}

TEST(StrategicMergeErrors, ItemsMustCarryTheMergeKey) {
  const json original = Deployment(J(R"([{"name": "a"}])"));
  EXPECT_THAT(StrategicMergePatch(original, PodSpecPatch(J(R"({"containers": [{"image": "x"}]})")),
                                  "apps", "Deployment"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.template.spec.containers: map: {\"image\":\"x\"} does not "
                                 "contain declared merge key: name")));
  EXPECT_THAT(
      StrategicMergePatch(original, PodSpecPatch(J(R"({"containers": [{"$patch": "delete"}]})")),
                          "apps", "Deployment"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("merge key: name")));
  EXPECT_THAT(
      StrategicMergePatch(original, PodSpecPatch(J(R"({"containers": [{"$patch": "merge"}]})")),
                          "apps", "Deployment"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("merging lists cannot yet be specified in the patch")));
}

TEST(StrategicMergeErrors, RetainKeysMustListEveryPatchedKey) {
  json original = Deployment(json::array());
  original["spec"]["strategy"] = J(R"({"type": "RollingUpdate"})");
  EXPECT_THAT(StrategicMergePatch(original, J(R"({"spec": {"strategy": {"$retainKeys": ["type"],
                                                  "rollingUpdate": {"maxSurge": 2}}}})"),
                                  "apps", "Deployment"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.strategy.$retainKeys: invalid patch format of retainKeys")));
  EXPECT_THAT(StrategicMergePatch(original, J(R"({"spec": {"strategy": {"$retainKeys": "type"}}})"),
                                  "apps", "Deployment"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("retainKeys")));
}

TEST(StrategicMergeErrors, SetElementOrderMustAgreeWithThePatchList) {
  const json original = J(R"({"metadata": {"finalizers": ["a", "b"]}})");
  EXPECT_THAT(
      StrategicMergePatch(original, J(R"({"metadata": {
                                      "$setElementOrder/finalizers": ["a"],
                                      "finalizers": ["b"]}})"),
                          "", "Pod"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("metadata.finalizers: the order in the patch list doesn't match")));
  EXPECT_THAT(
      StrategicMergePatch(
          original, J(R"({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}})"), "", "Pod"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a list")));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
