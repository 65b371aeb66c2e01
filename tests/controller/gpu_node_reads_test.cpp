// What a ClusterReader hands out of a GPUNode (controller/cluster.h): the placement part, and
// the reads ClusterReader derives from ListGpuNodes by default.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "wavepool/controller/cluster.h"

namespace wavepool::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

api::GpuTask Task(const std::string& ns, const std::string& job) {
  api::GpuTask task;
  task.namespace_ = ns;
  task.job = job;
  task.pod = job + "-g0-0";
  task.progress = api::TrainingProgress{};
  task.progress->step = 3;
  return task;
}

// A GPUNode as an agent publishes it: every field set, one task on its second GPU.
api::GpuNode Published(const std::string& name) {
  api::GpuNode node;
  node.metadata.name = name;
  node.metadata.resource_version = "17";
  node.spec.node_name = name;
  node.status.heartbeat_time = "2026-05-01T10:00:00Z";
  node.status.agent_version = "0.1.0";
  api::Condition ready;
  ready.type = "Ready";
  ready.status = api::ConditionStatus::kTrue;
  ready.reason = "GpusReported";
  node.status.conditions.push_back(ready);
  for (int i = 0; i < 2; ++i) {
    api::GpuStatus gpu;
    gpu.index = i;
    gpu.uuid = name + "-GPU-" + std::to_string(i);
    gpu.model = "NVIDIA H100 80GB HBM3";
    gpu.memory_bytes = std::int64_t{80} << 30;
    gpu.occupancy = {0.5, 0.25};
    gpu.memory_wave = api::MemoryWave{std::int64_t{40} << 30, std::int64_t{10} << 30, 0.2, 0.1,
                                      std::int64_t{40} << 30};
    node.status.gpus.push_back(gpu);
  }
  node.status.gpus[1].tasks.push_back(Task("team", "resnet"));
  return node;
}

TEST(PlacementPart, LeavesOutWhatEveryHeartbeatRewritesAndKeepsWhatPlacementReads) {
  const api::GpuNode whole = Published("node-a");
  const api::GpuNode part = PlacementPartOf(whole);
  EXPECT_TRUE(part.status.heartbeat_time.empty());
  for (const api::GpuStatus& gpu : part.status.gpus) {
    EXPECT_THAT(gpu.tasks, IsEmpty());
    EXPECT_EQ(gpu.occupancy.foreground, 0);
    EXPECT_EQ(gpu.occupancy.background, 0);
    ASSERT_TRUE(gpu.memory_wave.has_value());
    EXPECT_EQ(gpu.memory_wave->peak_bytes, std::int64_t{40} << 30);
    EXPECT_EQ(gpu.memory_wave->trough_bytes, 0);
    EXPECT_EQ(gpu.memory_wave->period_seconds, 0);
  }
  EXPECT_EQ(part.metadata.resource_version, "17");
  EXPECT_EQ(part.spec.node_name, "node-a");
  ASSERT_THAT(part.status.gpus, SizeIs(2));
  EXPECT_EQ(part.status.gpus[1].uuid, "node-a-GPU-1");
  EXPECT_EQ(part.status.gpus[1].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(part.status.gpus[1].memory_bytes, std::int64_t{80} << 30);
  ASSERT_THAT(part.status.conditions, SizeIs(1));
  EXPECT_EQ(part.status.conditions[0].reason, "GpusReported");
}

TEST(PlacementPart, AHeartbeatLeavesItTheSameAndAPlacementChangeDoesNot) {
  const api::GpuNode before = PlacementPartOf(Published("node-a"));
  api::GpuNode beat = Published("node-a");
  beat.metadata.resource_version = "18";
  beat.status.heartbeat_time = "2026-05-01T10:00:30Z";
  beat.status.gpus[0].occupancy = {0.9, 0.1};
  beat.status.gpus[0].memory_wave->trough_bytes = 1;
  beat.status.gpus[1].tasks.at(0).progress->step = 4;
  EXPECT_TRUE(SamePlacementPart(before, PlacementPartOf(beat)));

  api::GpuNode memory = beat;
  memory.status.gpus[0].memory_bytes -= 1;
  EXPECT_FALSE(SamePlacementPart(before, PlacementPartOf(memory)));
  api::GpuNode peak = beat;
  peak.status.gpus[0].memory_wave->peak_bytes += 1;
  EXPECT_FALSE(SamePlacementPart(before, PlacementPartOf(peak)));
  api::GpuNode condition = beat;
  condition.status.conditions[0].status = api::ConditionStatus::kFalse;
  EXPECT_FALSE(SamePlacementPart(before, PlacementPartOf(condition)));
  api::GpuNode uuid = beat;
  uuid.status.gpus[1].uuid = "GPU-other";
  EXPECT_FALSE(SamePlacementPart(before, PlacementPartOf(uuid)));
}

TEST(ClusterReaderGpuNodes, TheDefaultsReadTheWholeGpuNodes) {
  FakeCluster source;
  source.PutGpuNode(Published("node-a"));
  api::GpuNode b = Published("node-b");
  b.status.gpus[1].tasks = {Task("team", "bert")};
  source.PutGpuNode(b);
  const ForwardingReader cluster(source);  // ClusterReader's defaults.

  const std::optional<api::GpuNode> a = cluster.GetGpuNode("node-a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->status.heartbeat_time, "2026-05-01T10:00:00Z");
  EXPECT_FALSE(cluster.GetGpuNode("node-c").has_value());

  const HeartbeatChanges times = cluster.GpuNodeHeartbeatsSince(0);
  EXPECT_TRUE(times.complete);
  ASSERT_THAT(times.changed, SizeIs(2));
  EXPECT_EQ(times.changed[1].first, "node-b");
  EXPECT_EQ(*times.changed[1].second, "2026-05-01T10:00:00Z");

  const std::vector<api::GpuNode> resnet = cluster.GpuNodesWithTasksOf("team", "resnet");
  ASSERT_THAT(resnet, SizeIs(1));
  EXPECT_EQ(resnet[0].metadata.name, "node-a");
  EXPECT_THAT(resnet[0].status.gpus[1].tasks, SizeIs(1));
  EXPECT_THAT(cluster.GpuNodesWithTasksOf("other", "resnet"), IsEmpty());

  std::vector<std::string> listed;
  const std::shared_ptr<const std::vector<api::GpuNode>> parts = cluster.GpuNodes();
  for (const api::GpuNode& node : *parts) {
    listed.push_back(node.metadata.name);
    EXPECT_TRUE(node.status.heartbeat_time.empty());
  }
  EXPECT_THAT(listed, ElementsAre("node-a", "node-b"));
}

}  // namespace
}  // namespace wavepool::controller
