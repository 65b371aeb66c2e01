#include "tests/support/cluster/simulated_node_agent.h"

#include <chrono>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cluster/cluster_test.h"
#include "tests/support/cluster/crds.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::testing {
namespace {

using ::testing::Eq;
using ::testing::SizeIs;

class SimulatedNodeAgentsTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    ASSERT_OK(RegisterWavepoolCrds(*client_));
    gpu_nodes_ = kube::TypedClient<api::GpuNode>(client_.get());
  }

  SimulatedNodeAgents::Options Options() {
    SimulatedNodeAgents::Options options;
    options.clock = &clock_;
    options.wall_start = WallStart();
    options.agent_version = "1.2.3";
    return options;
  }

  void StartAgents(SimulatedNodeAgents::Options options) {
    ASSERT_OK_AND_ASSIGN(
        agents_, SimulatedNodeAgents::Start(
                     *client_,
                     SimulatedNodeAgents::Uniform({"node-0", "node-1"}, 4, "NVIDIA A100-SXM4-80GB",
                                                  std::int64_t{80} << 30),
                     options));
  }

  std::string HeartbeatOf(const std::string& node) {
    absl::StatusOr<api::GpuNode> object = gpu_nodes_.Get("", node);
    return object.ok() ? object->status.heartbeat_time : "";
  }

  kube::TypedClient<api::GpuNode> gpu_nodes_{nullptr};
  std::unique_ptr<SimulatedNodeAgents> agents_;
};

TEST_F(SimulatedNodeAgentsTest, PublishesGpuNodesWithDeterministicUuids) {
  StartAgents(Options());
  for (const std::string node : {"node-0", "node-1"}) {
    ASSERT_OK_AND_ASSIGN(api::GpuNode object, gpu_nodes_.Get("", node));
    EXPECT_THAT(object.spec.node_name, Eq(node));
    EXPECT_THAT(object.status.agent_version, Eq("1.2.3"));
    EXPECT_THAT(object.status.heartbeat_time, Eq("2026-05-01T10:00:00Z"));
    EXPECT_THAT(object.metadata.labels["wavepool.dev/node"], Eq(node));
    const api::Condition* ready = api::FindCondition(object.status.conditions, "Ready");
    ASSERT_NE(ready, nullptr);
    EXPECT_THAT(ready->status, Eq(api::ConditionStatus::kTrue));
    EXPECT_THAT(ready->reason, Eq("GPUsReported"));
    ASSERT_THAT(object.status.gpus, SizeIs(4));
    for (std::int64_t i = 0; i < 4; ++i) {
      const api::GpuStatus& gpu = object.status.gpus[static_cast<std::size_t>(i)];
      EXPECT_THAT(gpu.index, Eq(i));
      EXPECT_THAT(gpu.uuid, Eq("GPU-" + node + "-" + std::to_string(i)));
      EXPECT_THAT(gpu.model, Eq("NVIDIA A100-SXM4-80GB"));
      EXPECT_THAT(gpu.memory_bytes, Eq(85899345920));  // 80 * 2^30
    }
  }
  EXPECT_THAT(SimulatedNodeAgents::GpuUuid("gpu-a", 7), Eq("GPU-gpu-a-7"));
}

TEST_F(SimulatedNodeAgentsTest, HeartbeatAdvancesWithTheClock) {
  StartAgents(Options());
  clock_.Advance(std::chrono::seconds(30));
  ASSERT_OK(agents_->Heartbeat());
  EXPECT_THAT(HeartbeatOf("node-0"), Eq("2026-05-01T10:00:30Z"));
  EXPECT_THAT(HeartbeatOf("node-1"), Eq("2026-05-01T10:00:30Z"));
  clock_.Advance(std::chrono::seconds(45));
  ASSERT_OK(agents_->Heartbeat("node-1"));
  EXPECT_THAT(HeartbeatOf("node-0"), Eq("2026-05-01T10:00:30Z"));
  EXPECT_THAT(HeartbeatOf("node-1"), Eq("2026-05-01T10:01:15Z"));
}

TEST_F(SimulatedNodeAgentsTest, StopHeartbeatFreezesTheNodeUntilResumed) {
  StartAgents(Options());
  ASSERT_OK(agents_->StopHeartbeat("node-1"));
  clock_.Advance(std::chrono::seconds(60));
  ASSERT_OK(agents_->Heartbeat());
  EXPECT_THAT(HeartbeatOf("node-0"), Eq("2026-05-01T10:01:00Z"));
  EXPECT_THAT(HeartbeatOf("node-1"), Eq("2026-05-01T10:00:00Z"));
  EXPECT_THAT(agents_->Heartbeat("node-1"),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));
  EXPECT_THAT(agents_->SetTasks("node-1", 0, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));

  ASSERT_OK(agents_->ResumeHeartbeat("node-1"));
  EXPECT_THAT(HeartbeatOf("node-1"), Eq("2026-05-01T10:01:00Z"));
  EXPECT_THAT(agents_->StopHeartbeat("node-9"),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST_F(SimulatedNodeAgentsTest, PeriodicHeartbeatFollowsTheClockAndSkipsStoppedAgents) {
  SimulatedNodeAgents::Options options = Options();
  options.heartbeat_period = std::chrono::seconds(10);
  StartAgents(options);
  ASSERT_OK(agents_->StopHeartbeat("node-0"));
  ASSERT_TRUE(AdvanceUntil(clock_, std::chrono::seconds(10),
                           [&] { return HeartbeatOf("node-1") != "2026-05-01T10:00:00Z"; }));
  // The clock only takes multiples of 10 s, so every heartbeat lands on one.
  ASSERT_OK_AND_ASSIGN(auto beat, api::ParseRfc3339(HeartbeatOf("node-1")));
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(beat - WallStart());
  EXPECT_GE(seconds.count(), 10);
  EXPECT_THAT(seconds.count() % 10, Eq(0));
  // node-0 comes first in every round, so the round that wrote node-1 had skipped it.
  EXPECT_THAT(HeartbeatOf("node-0"), Eq("2026-05-01T10:00:00Z"));
}

TEST_F(SimulatedNodeAgentsTest, SetTasksMirrorsPodsOntoAGpu) {
  StartAgents(Options());
  api::GpuTask task;
  task.namespace_ = "team-a";
  task.job = "vgg";
  task.pod = "vgg-worker-0";
  task.role = api::Role::kBackground;
  task.pid = 4242;
  ASSERT_OK(agents_->SetTasks("node-0", 2, {task}));
  ASSERT_OK_AND_ASSIGN(api::GpuNode object, gpu_nodes_.Get("", "node-0"));
  ASSERT_THAT(object.status.gpus, SizeIs(4));
  ASSERT_THAT(object.status.gpus[2].tasks, SizeIs(1));
  EXPECT_THAT(object.status.gpus[2].tasks[0].pod, Eq("vgg-worker-0"));
  EXPECT_THAT(object.status.gpus[2].tasks[0].role, Eq(api::Role::kBackground));
  EXPECT_THAT(object.status.gpus[1].tasks, SizeIs(0));

  EXPECT_THAT(agents_->SetTasks("node-0", 4, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(agents_->SetTasks("node-0", -1, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(agents_->SetTasks("node-5", 0, {}),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST_F(SimulatedNodeAgentsTest, GpuNodeIsOwnedByItsNodeWhenOneExists) {
  ASSERT_OK(
      client_
          ->Create(kube::kNodes,
                   {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-0"}}}})
          .status());
  StartAgents(Options());
  ASSERT_OK_AND_ASSIGN(nlohmann::json node, client_->Get(kube::kNodes, "", "node-0"));
  ASSERT_OK_AND_ASSIGN(api::GpuNode owned, gpu_nodes_.Get("", "node-0"));
  ASSERT_THAT(owned.metadata.owner_references, SizeIs(1));
  EXPECT_THAT(owned.metadata.owner_references[0].kind, Eq("Node"));
  EXPECT_THAT(owned.metadata.owner_references[0].uid,
              Eq(node["metadata"]["uid"].get<std::string>()));
  ASSERT_OK_AND_ASSIGN(api::GpuNode unowned, gpu_nodes_.Get("", "node-1"));
  EXPECT_THAT(unowned.metadata.owner_references, SizeIs(0));
}

TEST_F(SimulatedNodeAgentsTest, RefusesBadNodes) {
  EXPECT_THAT(SimulatedNodeAgents::Start(*client_, {}, Options()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(
      SimulatedNodeAgents::Start(*client_, SimulatedNodeAgents::Uniform({"a", "a"}, 1), Options())
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(
      SimulatedNodeAgents::Start(*client_, SimulatedNodeAgents::Uniform({"a"}, -1), Options())
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(SimulatedNodeAgentsWithoutCrd, StartFailsWithNotFound) {
  ASSERT_OK_AND_ASSIGN(auto server, apiserver::TestApiServer::Start({}));
  kube::ClientConfig config;
  config.server = server->url();
  ASSERT_OK_AND_ASSIGN(auto client, kube::Client::Connect(config));
  SimulatedClock clock;
  SimulatedNodeAgents::Options options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<SimulatedNodeAgents>> agents =
      SimulatedNodeAgents::Start(*client, SimulatedNodeAgents::Uniform({"a"}, 1), options);
  EXPECT_TRUE(kube::IsNotFound(agents.status())) << agents.status();
}

}  // namespace
}  // namespace wavepool::testing
