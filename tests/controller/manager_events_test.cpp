// Which work-queue keys an informer event concerns (controller/src/manager/manager_events.h), on
// raw objects as an informer hands them over: fields that are absent, null or of another type
// read as absent, objects that are not objects (a null old object) have no fields, and nothing
// throws.
#include "controller/src/manager/manager_events.h"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Values that are not objects, as an event may carry where an object belongs.
std::vector<json> NotObjects() {
  return {json(), json::array(), json::array({json::object()}), json("pod"), json(3), json(true)};
}

TEST(ManagerEvents, NodePodIndexReadsAStringNodeNameOnly) {
  EXPECT_THAT(internal::NodePodIndex(json::parse(R"({"spec": {"nodeName": "node-a"}})")),
              ElementsAre("node-a"));
  for (const char* pod : {R"({"spec": {"nodeName": 7}})", R"({"spec": {"nodeName": ["node-a"]}})",
                          R"({"spec": {"nodeName": null}})", R"({"spec": {"nodeName": ""}})",
                          R"({"spec": ["node-a"]})", R"({"spec": "node-a"})", R"({})"}) {
    EXPECT_THAT(internal::NodePodIndex(json::parse(pod)), IsEmpty()) << pod;
  }
  for (const json& pod : NotObjects()) {
    EXPECT_THAT(internal::NodePodIndex(pod), IsEmpty()) << pod.dump();
  }
}

TEST(ManagerEvents, NodeNameOfReadsAStringNodeNameOnly) {
  EXPECT_EQ(internal::NodeNameOf(json::parse(R"({"spec": {"nodeName": "node-a"}})")), "node-a");
  for (const char* node : {R"({"spec": {"nodeName": 7}})", R"({"spec": {"nodeName": {}}})",
                           R"({"spec": {"nodeName": null}})", R"({"spec": [{"nodeName": "a"}]})",
                           R"({"spec": "node-a"})", R"({})"}) {
    EXPECT_EQ(internal::NodeNameOf(json::parse(node)), "") << node;
  }
  for (const json& node : NotObjects()) EXPECT_EQ(internal::NodeNameOf(node), "") << node.dump();
}

TEST(ManagerEvents, OwningJobKeyPrefersTheControllerOwnerThenTheAnnotation) {
  json pod = json::parse(R"({"metadata": {"namespace": "team", "ownerReferences": [
      {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "controller": true},
      {"apiVersion": "wavepool.dev/v1", "kind": "TrainingJob", "name": "vgg", "controller": true}],
      "annotations": {"wavepool.dev/job-name": "resnet"}}})");
  EXPECT_EQ(internal::OwningJobKey(pod), "team/vgg");
  pod["metadata"].erase("ownerReferences");
  EXPECT_EQ(internal::OwningJobKey(pod), "team/resnet");
  pod["metadata"]["annotations"]["wavepool.dev/job-name"] = "";
  EXPECT_EQ(internal::OwningJobKey(pod), std::nullopt);
}

TEST(ManagerEvents, OwningJobKeySkipsMistypedOwnersAndAnnotations) {
  const json base = json::parse(R"({"metadata": {"namespace": "team",
      "annotations": {"wavepool.dev/job-name": "resnet", "wavepool.dev/replicas": 4}}})");
  const json owner = json::parse(
      R"({"apiVersion": "wavepool.dev/v1", "kind": "TrainingJob", "name": "vgg", "controller": true})");
  // Each owner below has one field mistyped: it names no job, and the annotation decides.
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, json>>{{"controller", "true"},
                                                 {"controller", 1},
                                                 {"controller", false},
                                                 {"kind", json::array({"TrainingJob"})},
                                                 {"apiVersion", 1},
                                                 {"apiVersion", "apps/v1"},
                                                 {"name", 42},
                                                 {"name", ""}}) {
    json pod = base;
    json mistyped = owner;
    mistyped[field] = value;
    pod["metadata"]["ownerReferences"] = json::array({mistyped, "not an owner", nullptr});
    EXPECT_EQ(internal::OwningJobKey(pod), "team/resnet") << field << ": " << value.dump();
  }
  json pod = base;
  pod["metadata"]["ownerReferences"] = owner;  // An object, not a list.
  EXPECT_EQ(internal::OwningJobKey(pod), "team/resnet");
  pod["metadata"]["annotations"]["wavepool.dev/job-name"] = 7;
  EXPECT_EQ(internal::OwningJobKey(pod), std::nullopt);
  pod["metadata"]["annotations"] = json::array({"wavepool.dev/job-name"});
  EXPECT_EQ(internal::OwningJobKey(pod), std::nullopt);
  // Without a namespace (or with one that is not a string) nothing is owned.
  json owned = base;
  owned["metadata"]["ownerReferences"] = json::array({owner});
  EXPECT_EQ(internal::OwningJobKey(owned), "team/vgg");
  owned["metadata"]["namespace"] = json::array({"team"});
  EXPECT_EQ(internal::OwningJobKey(owned), std::nullopt);
  owned["metadata"]["namespace"] = nullptr;
  EXPECT_EQ(internal::OwningJobKey(owned), std::nullopt);
  owned["metadata"] = "team/vgg";
  EXPECT_EQ(internal::OwningJobKey(owned), std::nullopt);
  for (const json& object : NotObjects()) {
    EXPECT_EQ(internal::OwningJobKey(object), std::nullopt) << object.dump();
  }
}

TEST(ManagerEvents, PodFreedGpusWhenAStringPhaseTurnsTerminal) {
  const json running = json::parse(R"({"status": {"phase": "Running"}})");
  const json failed = json::parse(R"({"status": {"phase": "Failed"}})");
  const json succeeded = json::parse(R"({"status": {"phase": "Succeeded"}})");
  EXPECT_TRUE(internal::PodFreedGpus(running, failed));
  EXPECT_TRUE(internal::PodFreedGpus(running, succeeded));
  EXPECT_FALSE(internal::PodFreedGpus(failed, succeeded));
  EXPECT_FALSE(internal::PodFreedGpus(failed, running));
  // A null old pod, or one whose status or phase is mistyped, was not terminal.
  for (const json& old_pod :
       {json(), json::array(), json::parse(R"({"status": ["Failed"]})"),
        json::parse(R"({"status": "Failed"})"), json::parse(R"({"status": {"phase": 3}})"),
        json::parse(R"({"status": {"phase": ["Failed"]}})")}) {
    EXPECT_TRUE(internal::PodFreedGpus(old_pod, failed)) << old_pod.dump();
    EXPECT_FALSE(internal::PodFreedGpus(failed, old_pod)) << old_pod.dump();
  }
}

TEST(ManagerEvents, GpuNodePlacementViewCopiesTheFieldsAsTheyAre) {
  const json node = json::parse(R"({
    "spec": {"nodeName": 12},
    "status": {"heartbeatTime": "2026-05-01T10:00:00Z",
      "conditions": [{"type": "Ready", "status": true, "reason": "x"}, "not a condition"],
      "gpus": [{"index": "0", "uuid": null, "memoryBytes": 80, "memoryWave": 5,
                "occupancy": 0.5},
               {"index": 1, "uuid": "GPU-1", "memoryWave": {"peakBytes": [1]}}]}})");
  EXPECT_EQ(internal::GpuNodePlacementView(node), json::parse(R"({
    "nodeName": 12,
    "conditions": [["Ready", true], [null, null]],
    "gpus": [["0", null, 80, null], [1, "GPU-1", null, [1]]]})"));
  const json empty = json::parse(R"({"nodeName": null, "conditions": [], "gpus": []})");
  for (const char* mistyped :
       {R"({"spec": [], "status": []})", R"({"spec": "a", "status": "b"})",
        R"({"status": {"conditions": {"type": "Ready"}, "gpus": 2}})", R"({})"}) {
    EXPECT_EQ(internal::GpuNodePlacementView(json::parse(mistyped)), empty) << mistyped;
  }
  for (const json& object : NotObjects()) {
    EXPECT_EQ(internal::GpuNodePlacementView(object), empty) << object.dump();
  }
}

TEST(ManagerEvents, HeartbeatOfReadsAStringHeartbeatOnly) {
  EXPECT_EQ(internal::HeartbeatOf(json::parse(R"({"status": {"heartbeatTime": "t1"}})")), "t1");
  for (const char* node :
       {R"({"status": {"heartbeatTime": 1714557600}})", R"({"status": {"heartbeatTime": null}})",
        R"({"status": [{"heartbeatTime": "t1"}]})", R"({})"}) {
    EXPECT_EQ(internal::HeartbeatOf(json::parse(node)), "") << node;
  }
  for (const json& node : NotObjects()) EXPECT_EQ(internal::HeartbeatOf(node), "") << node.dump();
}

TEST(ManagerEvents, JobDeletionStartedReadsAStringTimestampOnly) {
  const json live = json::parse(R"({"metadata": {"name": "vgg"}})");
  const json deleting =
      json::parse(R"({"metadata": {"name": "vgg", "deletionTimestamp": "2026-05-01T10:00:00Z"}})");
  EXPECT_TRUE(internal::JobDeletionStarted(live, deleting));
  EXPECT_FALSE(internal::JobDeletionStarted(deleting, deleting));
  EXPECT_FALSE(internal::JobDeletionStarted(deleting, live));
  for (const json& not_deleting :
       {json(), json::array(), json::parse(R"({"metadata": {"deletionTimestamp": 17}})"),
        json::parse(R"({"metadata": {"deletionTimestamp": {}}})"),
        json::parse(R"({"metadata": [{"deletionTimestamp": "2026-05-01T10:00:00Z"}]})")}) {
    EXPECT_TRUE(internal::JobDeletionStarted(not_deleting, deleting)) << not_deleting.dump();
    EXPECT_FALSE(internal::JobDeletionStarted(live, not_deleting)) << not_deleting.dump();
  }
}

TEST(ManagerEvents, JobsWithChangedTasksAgainstANullOrMistypedNode) {
  const json node = json::parse(R"({"status": {"gpus": [
      {"index": 0, "tasks": [
        {"namespace": "team", "job": "vgg", "pod": "vgg-g0-0", "progress": {"step": 3}},
        {"namespace": "team", "job": "bert", "pod": 5},
        {"namespace": 1, "job": "gpt", "pod": "gpt-g0-0"},
        {"namespace": "team", "job": ["t5"], "pod": "t5-g0-0"},
        "not a task"]},
      {"index": 1, "tasks": {"namespace": "lab", "job": "probe"}},
      "not a GPU"]}})");
  // A deleted GPUNode (the new object null) and a new one (the old object null) both change
  // every job with a well-formed task; a pod that is not a string still names its task's job.
  EXPECT_EQ(internal::JobsWithChangedTasks(node, nullptr),
            (std::set<std::string>{"team/bert", "team/vgg"}));
  EXPECT_EQ(internal::JobsWithChangedTasks(nullptr, node),
            (std::set<std::string>{"team/bert", "team/vgg"}));
  EXPECT_THAT(internal::JobsWithChangedTasks(node, node), IsEmpty());
  EXPECT_THAT(internal::JobsWithChangedTasks(nullptr, nullptr), IsEmpty());
  // A status or task list that turns into something else drops the tasks.
  for (const char* mistyped : {R"({"status": []})", R"({"status": {"gpus": {}}})",
                               R"({"status": {"gpus": [{"tasks": "vgg"}]}})"}) {
    EXPECT_EQ(internal::JobsWithChangedTasks(node, json::parse(mistyped)),
              (std::set<std::string>{"team/bert", "team/vgg"}))
        << mistyped;
  }
  // A progress that turns into another type is a change; the mistyped pod is the same pod.
  json progressed = node;
  progressed["status"]["gpus"][0]["tasks"][0]["progress"] = "3";
  progressed["status"]["gpus"][0]["tasks"][1]["pod"] = 6;
  EXPECT_EQ(internal::JobsWithChangedTasks(node, progressed), (std::set<std::string>{"team/vgg"}));
}

TEST(ManagerEvents, JobsFlaggedCheatingSkipsMistypedConditionsAndTasks) {
  const json node = json::parse(R"({
    "status": {
      "gpus": [{"index": 0, "tasks": [
        {"namespace": "team", "job": "sweep", "pod": "sweep-g0-0"},
        {"namespace": "team", "job": 3, "pod": "probe-g0-0"}]}],
      "conditions": [
        {"type": ["BackgroundCheating"], "status": "True", "reason": "LaunchesOutsideGate",
         "message": "team/probe-g0-0 (GPU 0): x"},
        "not a condition",
        {"type": "BackgroundCheating", "status": "True", "reason": "LaunchesOutsideGate",
         "message": "team/sweep-g0-0 (GPU 0): x; team/probe-g0-0 (GPU 0): y"}]}})");
  EXPECT_EQ(internal::JobsFlaggedCheating(node), (std::set<std::string>{"team/sweep"}));
  for (const json& object : NotObjects()) {
    EXPECT_THAT(internal::JobsFlaggedCheating(object), IsEmpty()) << object.dump();
  }
}

}  // namespace
}  // namespace wavepool::controller
