// What the GPUNode publisher writes, built without an API server: the status made from the
// agent's snapshot (memory waves, occupancy, task progress, headroom never negative), tasks that
// could not be published dropped with their reason, the reason a node without GPUs gives, and the
// publisher's options checked before it starts.
#include <chrono>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/gpunode_publisher.h"
#include "wavepool/api/validation.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::wavepool::testing::SimulatedClock;
using ::wavepool::testing::StatusIs;

constexpr char kNode[] = "gpu-node-1";

TEST(NoGpuReason, TellsAMissingNvmlFromANodeWithoutGpus) {
  EXPECT_EQ(NoGpuReasonFor(absl::UnavailableError("dlopen libnvidia-ml.so.1: not found")),
            "NVMLUnavailable");
  EXPECT_EQ(NoGpuReasonFor(absl::UnavailableError("nvmlInit_v2: Driver Not Loaded")),
            "NVMLUnavailable");
  EXPECT_EQ(NoGpuReasonFor(absl::UnavailableError(
                "nvmlDeviceGetCount_v2: NVML sees no GPU (are the devices visible?)")),
            "NoGPUs");
  EXPECT_EQ(NoGpuReasonFor(absl::UnavailableError("NVML lists 2 GPUs and none is usable: x")),
            "NoGPUs");
}

TEST(GpuNodeStatus, ANegativeHeadroomIsPublishedAsNone) {
  AgentStatus snapshot;
  GpuStatus gpu;
  gpu.info.uuid = "GPU-sim-0";
  gpu.info.memory_total_bytes = 80ull << 30;
  MemoryWave wave;
  wave.peak_bytes = 90ull << 30;  // no capacity given: the GPU's memory minus the peak
  gpu.memory_wave = wave;
  snapshot.gpus.push_back(gpu);
  api::GpuNode node;
  node.metadata.name = "node-a";
  node.spec.node_name = "node-a";
  GpuNodeStatusInputs inputs;
  inputs.now = ::wavepool::testing::kSimulatedWallStart;
  node.status = MakeGpuNodeStatus(snapshot, inputs);
  ASSERT_TRUE(node.status.gpus[0].memory_wave.has_value());
  EXPECT_EQ(node.status.gpus[0].memory_wave->headroom_bytes, 0);
  EXPECT_OK(api::Validate(node));
}

TEST(GpuNodeStatus, UnpublishableTasksAreDroppedWithTheReason) {
  AgentStatus snapshot;
  GpuStatus gpu;
  TaskStatus good;
  good.namespace_name = "team-a";
  good.job = "train";
  good.pod = "train-0";
  TaskStatus bad = good;
  bad.job = std::string(254, 'a');
  gpu.tasks = {good, bad};
  snapshot.gpus.push_back(gpu);
  const std::vector<std::string> dropped = DropUnpublishableTasks(&snapshot);
  ASSERT_THAT(dropped, SizeIs(1));
  EXPECT_THAT(dropped[0], HasSubstr("task.job: must be a Kubernetes name"));
  ASSERT_THAT(snapshot.gpus[0].tasks, SizeIs(1));
  EXPECT_EQ(snapshot.gpus[0].tasks[0].pod, "train-0");
}

TEST(GpuNodeStatus, MemoryWaveAndOccupancyAreCarriedOver) {
  AgentStatus snapshot;
  snapshot.devices = "simulated, 1 GPUs";
  GpuStatus gpu;
  gpu.info.index = 0;
  gpu.info.uuid = "GPU-sim-0";
  gpu.info.name = "Simulated H100";
  gpu.info.memory_total_bytes = 80ull << 30;
  MemoryWave wave;
  wave.period = Seconds(0.5);
  wave.peak_bytes = 60ull << 30;
  wave.trough_bytes = 20ull << 30;
  gpu.memory_wave = wave;  // no capacity given: headroom is the GPU's memory minus the peak
  gpu.phase_offset = Seconds(0.25);
  gpu.foreground_sm_occupancy = 0.6;
  gpu.background_sm_occupancy = 0.3;
  snapshot.gpus.push_back(gpu);
  GpuNodeStatusInputs inputs;
  inputs.agent_version = "v";
  inputs.now = ::wavepool::testing::kSimulatedWallStart;  // 2026-05-01T10:00:00Z
  const api::GpuNodeStatus status = MakeGpuNodeStatus(snapshot, inputs);
  ASSERT_THAT(status.gpus, SizeIs(1));
  ASSERT_TRUE(status.gpus[0].memory_wave.has_value());
  const api::MemoryWave& out = *status.gpus[0].memory_wave;
  EXPECT_EQ(out.peak_bytes, 60ll << 30);
  EXPECT_EQ(out.trough_bytes, 20ll << 30);
  EXPECT_EQ(out.headroom_bytes, 20ll << 30);  // 80 GiB - 60 GiB
  EXPECT_DOUBLE_EQ(out.period_seconds, 0.5);
  EXPECT_DOUBLE_EQ(out.phase_offset_seconds, 0.25);
  EXPECT_DOUBLE_EQ(status.gpus[0].occupancy.foreground, 0.6);
  EXPECT_DOUBLE_EQ(status.gpus[0].occupancy.background, 0.3);
  EXPECT_TRUE(status.message.empty());
}

TEST(GpuNodeStatus, TaskProgressComesFromTheLastIterationReport) {
  AgentStatus snapshot;
  GpuStatus gpu;
  gpu.info.uuid = "GPU-sim-0";
  TaskStatus fg;
  fg.pod = "train-0";
  fg.role = Role::kForeground;
  fg.foreground_slowdown = 1.07;
  fg.last_iteration = ReportIteration{1000, 0.125, 16};
  TaskStatus idle = fg;  // an iteration of 0 s: no throughput rather than infinity
  idle.pod = "train-1";
  idle.last_iteration = ReportIteration{3, 0, 16};
  TaskStatus bg;
  bg.pod = "sweep-0";
  bg.role = Role::kBackground;  // foreground_slowdown keeps its default of 1
  bg.last_iteration = ReportIteration{5, 4.0, 2};
  TaskStatus fresh;  // registered, no iteration finished yet
  fresh.pod = "train-2";
  gpu.tasks = {fg, idle, bg, fresh};
  snapshot.gpus.push_back(gpu);
  const api::GpuNodeStatus status = MakeGpuNodeStatus(snapshot, {});
  const std::vector<api::GpuTask>& tasks = status.gpus.at(0).tasks;
  ASSERT_THAT(tasks, SizeIs(4));
  ASSERT_TRUE(tasks[0].progress.has_value());
  EXPECT_EQ(tasks[0].progress->step, 1000);
  EXPECT_DOUBLE_EQ(tasks[0].progress->iteration_seconds, 0.125);
  EXPECT_DOUBLE_EQ(tasks[0].progress->samples_per_second, 128.0);  // 16 / 0.125
  EXPECT_DOUBLE_EQ(tasks[0].progress->foreground_slowdown, 1.07);
  ASSERT_TRUE(tasks[1].progress.has_value());
  EXPECT_DOUBLE_EQ(tasks[1].progress->samples_per_second, 0);
  ASSERT_TRUE(tasks[2].progress.has_value());
  EXPECT_DOUBLE_EQ(tasks[2].progress->samples_per_second, 0.5);  // 2 / 4
  EXPECT_DOUBLE_EQ(tasks[2].progress->foreground_slowdown, 0);
  EXPECT_FALSE(tasks[3].progress.has_value());
}

TEST(GpuNodePublisherOptions, BadOptionsAreRefusedNamingTheOption) {
  GpuNodePublisherOptions options;
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node_name")));
  options.node_name = kNode;
  options.interval = std::chrono::seconds(0);
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("interval")));
  options.interval = std::chrono::seconds(10);
  options.max_backoff = std::chrono::milliseconds(10);
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("initial_backoff")));
  options.max_backoff = std::chrono::seconds(60);
  EXPECT_OK(Validate(options));
  SimulatedClock clock;
  EXPECT_THAT(GpuNodePublisher::Create(
                  options, nullptr, [] { return AgentStatus{}; }, &clock)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client")));
}

}  // namespace
}  // namespace wavepool::agent
