// Bad manifests: for every rule of api/validation.h that a schema can express (enums, minimums,
// required fields, patterns, types), the test API server's 422 names the same field path as
// api's own error. Spec rules are checked on create, status rules through the status
// subresource, as the controller and the agent write them.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/crds/crd_fixture.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::crds {
namespace {

using apiserver::HttpCodeOf;
using nlohmann::json;
using ::testing::Contains;

struct BadCase {
  std::string name;
  std::string base;   // an example manifest, or "" for the GPUNode below
  json patch;         // RFC 7386 merge patch that breaks one rule
  std::string field;  // the path both api and the server name
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) { return os << c.name; }

std::string TestName(const ::testing::TestParamInfo<BadCase>& param) { return param.param.name; }

const char kVgg[] = "examples/vgg16-foreground.yaml";
const char kResnet[] = "examples/resnet50-background.yaml";

json Spec(json fields) { return {{"spec", std::move(fields)}}; }

std::vector<BadCase> SpecCases() {
  return {
      {"RoleMissing", kVgg, Spec({{"role", nullptr}}), "spec.role"},
      {"RoleLowercase", kVgg, Spec({{"role", "foreground"}}), "spec.role"},
      {"ModelNameUppercase", kVgg, Spec({{"model", {{"name", "VGG16"}}}}), "spec.model.name"},
      {"ModelNameTooLong", kVgg, Spec({{"model", {{"name", std::string(64, 'a')}}}}),
       "spec.model.name"},
      {"LayerTableConfigMapInvalid", kVgg,
       Spec({{"model",
              {{"name", nullptr}, {"layerTable", {{"configMap", "Bad_Name"}, {"key", "k"}}}}}}),
       "spec.model.layerTable.configMap"},
      {"LayerTableKeyMissing", kVgg,
       Spec({{"model", {{"name", nullptr}, {"layerTable", {{"configMap", "layers"}}}}}}),
       "spec.model.layerTable.key"},
      {"ProfileKeyInvalid", kVgg,
       Spec({{"model", {{"profile", {{"configMap", "p"}, {"key", "a/b"}}}}}}),
       "spec.model.profile.key"},
      {"GlobalBatchSizeMissing", kVgg, Spec({{"globalBatchSize", nullptr}}),
       "spec.globalBatchSize"},
      {"GlobalBatchSizeZero", kVgg, Spec({{"globalBatchSize", 0}}), "spec.globalBatchSize"},
      {"GpusMissing", kVgg, Spec({{"gpus", nullptr}}), "spec.gpus"},
      {"GpusZero", kVgg, Spec({{"gpus", 0}}), "spec.gpus"},
      {"GpusString", kVgg, Spec({{"gpus", "eight"}}), "spec.gpus"},
      {"GpusFraction", kVgg, Spec({{"gpus", 2.5}}), "spec.gpus"},
      {"StepsZero", kVgg, Spec({{"steps", 0}}), "spec.steps"},
      {"EpochsZero", kResnet, Spec({{"epochs", 0}}), "spec.epochs"},
      {"DatasetSamplesZero", kResnet, Spec({{"datasetSamples", 0}}), "spec.datasetSamples"},
      {"OptimizerLowercase", kVgg, Spec({{"optimizer", "adam"}}), "spec.optimizer"},
      {"LearningRateZero", kVgg, Spec({{"learningRate", 0}}), "spec.learningRate"},
      {"LearningRateNegative", kVgg, Spec({{"learningRate", -0.1}}), "spec.learningRate"},
      {"LearningRatePastFloat32", kVgg, Spec({{"learningRate", 1e39}}), "spec.learningRate"},
      {"StrategyUnknown", kVgg, Spec({{"parallelism", {{"strategy", "Burst"}}}}),
       "spec.parallelism.strategy"},
      {"AmplificationLimitBelowOne", kVgg, Spec({{"parallelism", {{"amplificationLimit", 0.5}}}}),
       "spec.parallelism.amplificationLimit"},
      {"GpuCountsUnknown", kVgg, Spec({{"parallelism", {{"gpuCounts", "All"}}}}),
       "spec.parallelism.gpuCounts"},
      {"TickTockUnknown", kVgg, Spec({{"parallelism", {{"tickTock", "Maybe"}}}}),
       "spec.parallelism.tickTock"},
      {"CpuSplitUnknown", kVgg, Spec({{"dataMovement", {{"cpuSplit", "yes"}}}}),
       "spec.dataMovement.cpuSplit"},
      {"PreloadLowercase", kVgg, Spec({{"dataMovement", {{"preload", "off"}}}}),
       "spec.dataMovement.preload"},
      {"WeightCompressionUnknown", kVgg, Spec({{"dataMovement", {{"weightCompression", "Lossy"}}}}),
       "spec.dataMovement.weightCompression"},
      {"SlowdownBelowOne", kVgg, Spec({{"collocation", {{"maxForegroundSlowdown", 0.9}}}}),
       "spec.collocation.maxForegroundSlowdown"},
      {"AllowBackgroundString", kVgg, Spec({{"collocation", {{"allowBackground", "yes"}}}}),
       "spec.collocation.allowBackground"},
      {"MaxBatchSizeZero", kResnet, Spec({{"collocation", {{"maxBatchSize", 0}}}}),
       "spec.collocation.maxBatchSize"},
      {"CheckpointPathEmpty", kVgg, Spec({{"checkpoint", {{"path", ""}}}}), "spec.checkpoint.path"},
      {"IntervalStepsZero", kVgg, Spec({{"checkpoint", {{"intervalSteps", 0}}}}),
       "spec.checkpoint.intervalSteps"},
      {"IntervalSecondsZero", kVgg, Spec({{"checkpoint", {{"intervalSeconds", 0}}}}),
       "spec.checkpoint.intervalSeconds"},
      {"TemplateNotAnObject", kVgg, Spec({{"template", "pod.yaml"}}), "spec.template"},
      {"SuspendString", kVgg, Spec({{"suspend", "yes"}}), "spec.suspend"},
      {"BackoffLimitNegative", kVgg, Spec({{"backoffLimit", -1}}), "spec.backoffLimit"},
  };
}

class SpecRuleTest : public CrdStoreTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(SpecRuleTest, ServerAndApiNameTheSameField) {
  const BadCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(json manifest, LoadSourceYaml(c.base));
  manifest.merge_patch(c.patch);
  EXPECT_EQ(ApiErrorPath(manifest), c.field);
  absl::StatusOr<apiserver::WriteResult> made = CreateJob(manifest);
  ASSERT_EQ(HttpCodeOf(made.status()), 422) << made.status();
  EXPECT_THAT(CauseFields(made.status()), Contains(c.field)) << made.status();
}

INSTANTIATE_TEST_SUITE_P(Spec, SpecRuleTest, ::testing::ValuesIn(SpecCases()), TestName);

json Status(json fields) { return {{"status", std::move(fields)}}; }

json Condition(json change) {
  json condition = {{"type", "Planned"},
                    {"status", "True"},
                    {"reason", "PlanFound"},
                    {"message", ""},
                    {"lastTransitionTime", "2026-05-01T10:00:00Z"}};
  condition.merge_patch(change);
  return condition;
}

std::vector<BadCase> StatusCases() {
  return {
      {"PhaseUnknown", kVgg, Status({{"phase", "Done"}}), "status.phase"},
      {"ObservedGenerationNegative", kVgg, Status({{"observedGeneration", -1}}),
       "status.observedGeneration"},
      {"PlanStrategyAuto", kVgg, Status({{"plan", {{"strategy", "Auto"}}}}),
       "status.plan.strategy"},
      {"PlanPredictionNegative", kVgg,
       Status({{"plan", {{"strategy", "DataParallel"}, {"predictedIterationSeconds", -1.0}}}}),
       "status.plan.predictedIterationSeconds"},
      {"PlanMemoryNegative", kVgg,
       Status({{"plan", {{"strategy", "DataParallel"}, {"memoryPerGpuBytes", -1}}}}),
       "status.plan.memoryPerGpuBytes"},
      {"PlanStageWithoutGpus", kVgg,
       Status({{"plan", {{"strategy", "DataParallel"}, {"stageGpus", {4, 0}}}}}),
       "status.plan.stageGpus[1]"},
      {"PlanAmplificationNegative", kVgg,
       Status({{"plan", {{"strategy", "DataParallel"}, {"amplification", -0.5}}}}),
       "status.plan.amplification"},
      {"PlacementPodEmpty", kVgg, Status({{"placement", {{{"pod", ""}, {"node", "n"}}}}}),
       "status.placement[0].pod"},
      {"PlacementNodeMissing", kVgg, Status({{"placement", {{{"pod", "p"}}}}}),
       "status.placement[0].node"},
      {"PlacementUuidEmpty", kVgg,
       Status({{"placement", {{{"pod", "p"}, {"node", "n"}, {"gpuUUIDs", {"GPU-1", ""}}}}}}),
       "status.placement[0].gpuUUIDs[1]"},
      {"ProgressStepNegative", kVgg, Status({{"progress", {{"step", -1}}}}),
       "status.progress.step"},
      {"ProgressSamplesNegative", kVgg, Status({{"progress", {{"samplesPerSecond", -1.0}}}}),
       "status.progress.samplesPerSecond"},
      {"ProgressIterationNegative", kVgg, Status({{"progress", {{"iterationSeconds", -1.0}}}}),
       "status.progress.iterationSeconds"},
      {"ProgressSlowdownNegative", kVgg, Status({{"progress", {{"foregroundSlowdown", -1.0}}}}),
       "status.progress.foregroundSlowdown"},
      {"RestartsNegative", kVgg, Status({{"restarts", -1}}), "status.restarts"},
      {"GpusZero", kVgg, Status({{"gpus", 0}}), "status.gpus"},
      {"GangGenerationNegative", kVgg, Status({{"gangGeneration", -1}}), "status.gangGeneration"},
      {"ConditionStatusUnknown", kVgg, Status({{"conditions", {Condition({{"status", "Maybe"}})}}}),
       "status.conditions[0].status"},
      {"ConditionTypeInvalid", kVgg,
       Status({{"conditions", {Condition({{"type", "not a type"}})}}}),
       "status.conditions[0].type"},
      {"ConditionReasonInvalid", kVgg, Status({{"conditions", {Condition({{"reason", "1Bad"}})}}}),
       "status.conditions[0].reason"},
      {"ConditionReasonMissing", kVgg, Status({{"conditions", {Condition({{"reason", nullptr}})}}}),
       "status.conditions[0].reason"},
      {"ConditionTimeMissing", kVgg,
       Status({{"conditions", {Condition({{"lastTransitionTime", nullptr}})}}}),
       "status.conditions[0].lastTransitionTime"},
      {"ConditionGenerationNegative", kVgg,
       Status({{"conditions", {Condition({{"observedGeneration", -1}})}}}),
       "status.conditions[0].observedGeneration"},
  };
}

class StatusRuleTest : public CrdStoreTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(StatusRuleTest, ServerAndApiNameTheSameField) {
  const BadCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(json manifest, LoadSourceYaml(c.base));
  ASSERT_OK(CreateJob(manifest).status());
  manifest.merge_patch(c.patch);
  EXPECT_EQ(ApiErrorPath(manifest), c.field);
  absl::StatusOr<apiserver::WriteResult> written = WriteStatus(
      jobs_, "default", manifest["metadata"]["name"].get<std::string>(), manifest["status"]);
  ASSERT_EQ(HttpCodeOf(written.status()), 422) << written.status();
  EXPECT_THAT(CauseFields(written.status()), Contains(c.field)) << written.status();
}

INSTANTIATE_TEST_SUITE_P(Status, StatusRuleTest, ::testing::ValuesIn(StatusCases()), TestName);

// ---- GPUNode ----

json GpuNodeManifest() {
  return json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "GPUNode",
    "metadata": {"name": "node-a"}, "spec": {"nodeName": "node-a"},
    "status": {"agentVersion": "0.1.0", "heartbeatTime": "2026-05-01T10:00:00Z",
      "gpus": [{"index": 0, "uuid": "GPU-1", "model": "A100", "memoryBytes": 100,
                "occupancy": {"foreground": 0.5, "background": 0.25},
                "memoryWave": {"peakBytes": 80, "troughBytes": 20, "periodSeconds": 0.25,
                               "phaseOffsetSeconds": 0.125, "headroomBytes": 20},
                "tasks": [{"namespace": "team-a", "job": "vgg", "pod": "vgg-0",
                           "role": "Foreground", "pid": 42}]}]}})");
}

// A patch of the first GPU of the manifest above.
json Gpu(json fields) { return {{"status", {{"gpus", {std::move(fields)}}}}}; }

json GpuPatched(json gpu_change) {
  json gpu = GpuNodeManifest()["status"]["gpus"][0];
  gpu.merge_patch(gpu_change);
  return Gpu(gpu);
}

json TaskPatched(json task_change) {
  json task = GpuNodeManifest()["status"]["gpus"][0]["tasks"][0];
  task.merge_patch(task_change);
  return GpuPatched({{"tasks", {task}}});
}

json WavePatched(json wave_change) { return GpuPatched({{"memoryWave", wave_change}}); }

std::vector<BadCase> GpuNodeStatusCases() {
  const std::string gpu = "status.gpus[0].";
  return {
      {"IndexNegative", "", GpuPatched({{"index", -1}}), gpu + "index"},
      {"UuidEmpty", "", GpuPatched({{"uuid", ""}}), gpu + "uuid"},
      {"UuidMissing", "", GpuPatched({{"uuid", nullptr}}), gpu + "uuid"},
      {"MemoryNegative", "", GpuPatched({{"memoryBytes", -1}}), gpu + "memoryBytes"},
      {"ForegroundAboveOne", "", GpuPatched({{"occupancy", {{"foreground", 1.5}}}}),
       gpu + "occupancy.foreground"},
      {"BackgroundNegative", "", GpuPatched({{"occupancy", {{"background", -0.1}}}}),
       gpu + "occupancy.background"},
      {"PeakNegative", "", WavePatched({{"peakBytes", -1}}), gpu + "memoryWave.peakBytes"},
      {"TroughNegative", "", WavePatched({{"troughBytes", -1}}), gpu + "memoryWave.troughBytes"},
      {"PeriodNegative", "", WavePatched({{"periodSeconds", -1.0}, {"phaseOffsetSeconds", 0}}),
       gpu + "memoryWave.periodSeconds"},
      {"PhaseOffsetNegative", "", WavePatched({{"phaseOffsetSeconds", -0.1}}),
       gpu + "memoryWave.phaseOffsetSeconds"},
      {"HeadroomNegative", "", WavePatched({{"headroomBytes", -1}}),
       gpu + "memoryWave.headroomBytes"},
      {"TaskNamespaceInvalid", "", TaskPatched({{"namespace", "Team_A"}}),
       gpu + "tasks[0].namespace"},
      {"TaskJobEmpty", "", TaskPatched({{"job", ""}}), gpu + "tasks[0].job"},
      {"TaskPodMissing", "", TaskPatched({{"pod", nullptr}}), gpu + "tasks[0].pod"},
      {"TaskRoleLowercase", "", TaskPatched({{"role", "fg"}}), gpu + "tasks[0].role"},
      {"TaskRoleMissing", "", TaskPatched({{"role", nullptr}}), gpu + "tasks[0].role"},
      {"TaskPidZero", "", TaskPatched({{"pid", 0}}), gpu + "tasks[0].pid"},
      {"ConditionStatusUnknown",
       "",
       {{"status", {{"conditions", {Condition({{"status", "Maybe"}})}}}}},
       "status.conditions[0].status"},
  };
}

class GpuNodeRuleTest : public CrdStoreTest, public ::testing::WithParamInterface<BadCase> {
 protected:
  void SetUp() override {
    CrdStoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(ApiGpuNodeErrorPath(GpuNodeManifest()), std::nullopt);
    ASSERT_OK(CreateNode(GpuNodeManifest()).status());
    ASSERT_OK(WriteStatus(nodes_, "", "node-a", GpuNodeManifest()["status"]).status());
  }
};

TEST_P(GpuNodeRuleTest, ServerAndApiNameTheSameField) {
  const BadCase& c = GetParam();
  json manifest = GpuNodeManifest();
  manifest.merge_patch(c.patch);
  EXPECT_EQ(ApiGpuNodeErrorPath(manifest), c.field);
  absl::StatusOr<apiserver::WriteResult> written =
      WriteStatus(nodes_, "", "node-a", manifest["status"]);
  ASSERT_EQ(HttpCodeOf(written.status()), 422) << written.status();
  EXPECT_THAT(CauseFields(written.status()), Contains(c.field)) << written.status();
}

INSTANTIATE_TEST_SUITE_P(GpuNodeStatus, GpuNodeRuleTest, ::testing::ValuesIn(GpuNodeStatusCases()),
                         TestName);

TEST_F(CrdStoreTest, GpuNodeNodeNameIsRequiredAndANodeName) {
  for (const json& node_name : {json(nullptr), json("Bad_Node")}) {
    json manifest = GpuNodeManifest();
    manifest.erase("status");
    manifest["spec"]["nodeName"] = node_name;
    if (node_name.is_null()) manifest["spec"].erase("nodeName");
    EXPECT_EQ(ApiGpuNodeErrorPath(manifest), "spec.nodeName");
    absl::StatusOr<apiserver::WriteResult> made = CreateNode(manifest);
    ASSERT_EQ(HttpCodeOf(made.status()), 422) << made.status();
    EXPECT_THAT(CauseFields(made.status()), Contains("spec.nodeName"));
  }
}

// A duplicate GPU index: api names the second entry's index; the server, like kube-apiserver
// for a list-map key, names the second entry.
TEST_F(CrdStoreTest, GpuNodeDuplicateIndexIsRefusedByBoth) {
  json manifest = GpuNodeManifest();
  json second = manifest["status"]["gpus"][0];
  second["uuid"] = "GPU-2";
  manifest["status"]["gpus"].push_back(second);
  EXPECT_EQ(ApiGpuNodeErrorPath(manifest), "status.gpus[1].index");
  ASSERT_OK(CreateNode(GpuNodeManifest()).status());
  absl::StatusOr<apiserver::WriteResult> written =
      WriteStatus(nodes_, "", "node-a", manifest["status"]);
  ASSERT_EQ(HttpCodeOf(written.status()), 422) << written.status();
  EXPECT_THAT(CauseFields(written.status()), Contains("status.gpus[1]"));
}

}  // namespace
}  // namespace wavepool::testing::crds
