#include "wavepool/api/gpu_node.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_fixtures.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/manifest.h"
#include "wavepool/api/validation.h"
#include "wavepool/api/yaml.h"

namespace wavepool::api {
namespace {

using ::testing::HasSubstr;
using ::wavepool::api::testing::EveryFieldGpuNode;
using ::wavepool::api::testing::ValidGpuNode;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

TEST(GpuNodeJson, EveryFieldSurvivesJsonAndYamlRoundTrips) {
  ASSERT_OK_AND_ASSIGN(GpuNode node, GpuNode::FromJson(EveryFieldGpuNode()));
  EXPECT_EQ(ToJson(node), EveryFieldGpuNode());
  EXPECT_EQ(node.status.gpus.at(0).tasks.at(1).role, Role::kBackground);
  EXPECT_EQ(node.status.gpus.at(0).memory_wave->headroom_bytes, 25899345920);
  EXPECT_DOUBLE_EQ(node.status.gpus.at(0).occupancy.foreground, 0.75);
  EXPECT_FALSE(node.status.gpus.at(1).memory_wave.has_value());
  EXPECT_EQ(node.metadata.unknown_fields["managedFields"][0]["manager"], "agent");
  EXPECT_THAT(Validate(node), IsOk());

  const std::string yaml = ToYaml(node);
  ASSERT_OK_AND_ASSIGN(GpuNode back, ParseGpuNode(yaml));
  EXPECT_EQ(ToJson(back).dump(), EveryFieldGpuNode().dump()) << yaml;
}

TEST(GpuNodeJson, DecodingIsStrict) {
  nlohmann::json document = EveryFieldGpuNode();
  document["status"]["gpus"][0]["occupancy"]["forground"] = 0.5;
  EXPECT_THAT(GpuNode::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.gpus[0].occupancy.forground: unknown field (did you "
                                 "mean \"foreground\"?)")));
  document = EveryFieldGpuNode();
  document["status"]["gpus"][0]["tasks"][0]["role"] = "fg";
  EXPECT_THAT(GpuNode::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.gpus[0].tasks[0].role: must be one of Foreground, "
                                 "Background, got \"fg\"")));
  document = EveryFieldGpuNode();
  document["status"]["gpus"][0]["tasks"][0].erase("role");
  EXPECT_THAT(GpuNode::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.gpus[0].tasks[0].role: required")));
  document = EveryFieldGpuNode();
  document["status"]["gpus"][1]["memoryBytes"] = "80Gi";
  EXPECT_THAT(GpuNode::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.gpus[1].memoryBytes: must be an integer, got string "
                                 "\"80Gi\"")));
  document = EveryFieldGpuNode();
  document["kind"] = "GpuNode";
  EXPECT_THAT(GpuNode::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("kind: must be \"GPUNode\", got \"GpuNode\"")));
}

TEST(GpuNodeJson, AnAgentWithoutGpusStillReports) {
  GpuNode node;
  node.metadata.name = "cpu-node";
  node.spec.node_name = "cpu-node";
  node.status.message = "NVML not found: no GPUs reported";
  EXPECT_THAT(Validate(node), IsOk());
  EXPECT_EQ(ToJson(node)["status"],
            nlohmann::json({{"message", "NVML not found: no GPUs reported"}}));
}

TEST(GpuNodeValidation, RulesReportPathAndProblem) {
  struct Case {
    std::function<void(GpuNode&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](GpuNode& n) { n.metadata.name = "Node_A"; },
       "GPUNode Node_A: metadata.name: must be a DNS-1123 subdomain"},
      {[](GpuNode& n) { n.metadata.namespace_ = "default"; },
       "GPUNode node-a: metadata.namespace: must be empty for a cluster-scoped object, got "
       "\"default\""},
      {[](GpuNode& n) { n.spec.node_name.clear(); }, "GPUNode node-a: spec.nodeName: required"},
      {[](GpuNode& n) { n.status.gpus[1].index = 0; },
       "GPUNode node-a: status.gpus[1].index: duplicates status.gpus[0].index (0)"},
      {[](GpuNode& n) { n.status.gpus[1].uuid = "GPU-aaaa"; },
       "GPUNode node-a: status.gpus[1].uuid: duplicates status.gpus[0].uuid \"GPU-aaaa\""},
      {[](GpuNode& n) { n.status.gpus[0].uuid.clear(); },
       "GPUNode node-a: status.gpus[0].uuid: required"},
      {[](GpuNode& n) { n.status.gpus[0].index = -1; },
       "GPUNode node-a: status.gpus[0].index: must be >= 0, got -1"},
      {[](GpuNode& n) { n.status.gpus[0].occupancy.foreground = 1.5; },
       "GPUNode node-a: status.gpus[0].occupancy.foreground: must be in [0.0, 1.0], got 1.5"},
      {[](GpuNode& n) { n.status.gpus[1].occupancy.background = -0.1; },
       "GPUNode node-a: status.gpus[1].occupancy.background: must be in [0.0, 1.0], got -0.1"},
      {[](GpuNode& n) { n.status.gpus[0].memory_bytes = -1; },
       "GPUNode node-a: status.gpus[0].memoryBytes: must be >= 0, got -1"},
      {[](GpuNode& n) { n.status.gpus[0].memory_wave->trough_bytes = 70000000000; },
       "GPUNode node-a: status.gpus[0].memoryWave.troughBytes: must be <= peakBytes "
       "(60000000000), got 70000000000"},
      {[](GpuNode& n) { n.status.gpus[0].memory_wave->phase_offset_seconds = -0.5; },
       "GPUNode node-a: status.gpus[0].memoryWave.phaseOffsetSeconds: must be >= 0.0, got -0.5"},
      {[](GpuNode& n) { n.status.gpus[0].memory_wave->headroom_bytes = -5; },
       "GPUNode node-a: status.gpus[0].memoryWave.headroomBytes: must be >= 0, got -5"},
      {[](GpuNode& n) { n.status.gpus[0].tasks[0].pid = 0; },
       "GPUNode node-a: status.gpus[0].tasks[0].pid: must be >= 1, got 0"},
      {[](GpuNode& n) { n.status.gpus[0].tasks[0].namespace_.clear(); },
       "GPUNode node-a: status.gpus[0].tasks[0].namespace: required"},
      {[](GpuNode& n) { n.status.gpus[0].tasks[0].job.clear(); },
       "GPUNode node-a: status.gpus[0].tasks[0].job: required"},
      {[](GpuNode& n) { n.status.heartbeat_time = "10:00"; },
       "GPUNode node-a: status.heartbeatTime: must be an RFC 3339 time"},
      {[](GpuNode& n) {
         n.status.conditions = {{"Ready", ConditionStatus::kTrue, 0, "", "AgentRunning", ""}};
       },
       "GPUNode node-a: status.conditions[0].lastTransitionTime: required"},
  };
  ASSERT_THAT(Validate(ValidGpuNode()), IsOk());
  for (const Case& c : cases) {
    GpuNode node = ValidGpuNode();
    c.change(node);
    EXPECT_THAT(Validate(node), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
}

}  // namespace
}  // namespace wavepool::api
