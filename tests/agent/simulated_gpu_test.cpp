// The simulated GPU: hand-computed overlaps of foreground and background op groups, properties of
// the interference model, memory over time, windows, and the GpuDevices view.
#include "wavepool/agent/simulated_gpu.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"

namespace wavepool::agent {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Optional;
using wavepool::testing::SimulatedClock;
using wavepool::testing::StatusIs;
using namespace std::chrono_literals;

constexpr std::int64_t kMs = 1'000'000;

// Times as integer nanoseconds since the clock's epoch, so that expectations read as numbers.
MonotonicTime At(std::int64_t ns) { return MonotonicTimeFromNanos(ns); }
std::int64_t Ns(MonotonicTime t) { return ToMonotonicNanos(t); }

// alpha 0.5, beta 0.5, p 0.2, gamma 0.5: the model of the worked examples.
SimulatedGpuOptions ExampleOptions() {
  SimulatedGpuOptions options;
  options.interference = {0.5, 0.5, 0.2, 0.5};
  return options;
}

SimulatedTask Foreground(std::int32_t pid, StreamPriority priority = StreamPriority::kHigh) {
  return {Role::kForeground, pid, priority};
}
SimulatedTask Background(std::int32_t pid) {
  return {Role::kBackground, pid, StreamPriority::kLow};
}
OpGroupSpec Group(std::chrono::nanoseconds solo, double intensity,
                  std::chrono::nanoseconds kernel = 0ns) {
  return {solo, intensity, kernel};
}

class SimulatedGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(ExampleOptions()); }
  void Make(const SimulatedGpuOptions& options) {
    auto created = SimulatedGpus::Create(clock_, options);
    ASSERT_TRUE(created.ok()) << created.status();
    gpus_ = *std::move(created);
  }
  SimulatedTaskId Task(const SimulatedTask& task, GpuIndex gpu = 0) {
    auto id = gpus_->AddTask(gpu, task);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(0);
  }
  OpGroupId Submit(SimulatedTaskId task, const OpGroupSpec& group) {
    auto id = gpus_->Submit(task, group);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(0);
  }
  std::int64_t Completion(OpGroupId group) {
    auto timing = gpus_->Timing(group);
    EXPECT_TRUE(timing.ok()) << timing.status();
    return timing.ok() ? Ns(timing->completion) : -1;
  }

  SimulatedClock clock_;
  std::unique_ptr<SimulatedGpus> gpus_;
};

// fg: 10 ms solo, intensity 0.5, 1 ms kernels, high priority; bg: 20 ms solo, intensity 0.4,
// 4 ms kernels; both at t = 0.
//   S_f = 0.4 * (0.5 * 0.2 + 0.5 * 4 / (1 + 4)) = 0.4 * 0.5 = 0.2  -> fg at 10 * 1.2 = 12 ms
//   S_b = 0.5 * 0.5 = 0.25 -> bg rate 0.8: 9.6 ms of work by 12 ms, 10.4 ms alone -> 22.4 ms
TEST_F(SimulatedGpuTest, TwoOverlappingGroupsCompleteAtHandComputedTimes) {
  const OpGroupId fg = Submit(Task(Foreground(100)), Group(10ms, 0.5, 1ms));
  const OpGroupId bg = Submit(Task(Background(200)), Group(20ms, 0.4, 4ms));
  ASSERT_OK_AND_ASSIGN(GroupTiming projected, gpus_->Timing(bg));
  EXPECT_FALSE(projected.complete);
  EXPECT_TRUE(projected.started);
  EXPECT_EQ(Ns(projected.completion), 22'400'000);
  EXPECT_EQ(Completion(fg), 12 * kMs);

  clock_.Advance(30ms);
  ASSERT_OK_AND_ASSIGN(GroupTiming done, gpus_->Timing(bg));
  EXPECT_TRUE(done.complete);
  EXPECT_EQ(Ns(done.start), 0);
  EXPECT_EQ(Ns(done.completion), 22'400'000);
  EXPECT_EQ(Completion(fg), 12 * kMs);
}

// Same groups, the foreground stream at default priority: S_f = 0.4 * (0.5 + 0.4) = 0.36
// -> 13.6 ms.
TEST_F(SimulatedGpuTest, WithoutStreamPriorityTheForegroundSlowsMore) {
  const OpGroupId fg =
      Submit(Task(Foreground(100, StreamPriority::kDefault)), Group(10ms, 0.5, 1ms));
  Submit(Task(Background(200)), Group(20ms, 0.4, 4ms));
  EXPECT_EQ(Completion(fg), 13'600'000);
}

// fg (10 ms solo) alone for 5 ms, then the bg of the first example joins: the remaining 5 ms of
// work take 5 * 1.2 = 6 ms -> 11 ms.
TEST_F(SimulatedGpuTest, ALaterSubmissionSlowsOnlyTheRest) {
  const OpGroupId fg = Submit(Task(Foreground(100)), Group(10ms, 0.5, 1ms));
  EXPECT_EQ(Completion(fg), 10 * kMs) << "alone: solo speed";
  clock_.Advance(5ms);
  Submit(Task(Background(200)), Group(20ms, 0.4, 4ms));
  EXPECT_EQ(Completion(fg), 11 * kMs);
}

// Two fg tasks asking for 0.8 + 0.7 = 1.5 of the SMs time-share them: both 10 ms groups take 15.
TEST_F(SimulatedGpuTest, SameRoleGroupsShareOversubscribedSms) {
  const OpGroupId a = Submit(Task(Foreground(1)), Group(10ms, 0.8));
  const OpGroupId b = Submit(Task(Foreground(2)), Group(10ms, 0.7));
  EXPECT_EQ(Completion(a), 15 * kMs);
  EXPECT_EQ(Completion(b), 15 * kMs);
}

TEST_F(SimulatedGpuTest, ATasksGroupsRunOneAfterAnother) {
  const SimulatedTaskId task = Task(Foreground(1));
  const OpGroupId first = Submit(task, Group(4ms, 1.0));
  const OpGroupId second = Submit(task, Group(6ms, 1.0));
  ASSERT_OK_AND_ASSIGN(GroupTiming timing, gpus_->Timing(second));
  EXPECT_FALSE(timing.started);
  EXPECT_EQ(Ns(timing.start), 4 * kMs);
  EXPECT_EQ(Ns(timing.completion), 10 * kMs);
  EXPECT_EQ(Completion(first), 4 * kMs);
}

TEST_F(SimulatedGpuTest, ForegroundAloneRunsAtSoloSpeed) {
  const SimulatedTaskId task = Task(Foreground(1, StreamPriority::kDefault));
  std::int64_t expected = 0;
  for (int i = 1; i <= 20; ++i) {
    const auto solo = std::chrono::microseconds(137 * i);
    const OpGroupId group = Submit(task, Group(solo, 0.05 * i, solo / (1 + i % 3)));
    expected += std::chrono::duration_cast<std::chrono::nanoseconds>(solo).count();
    EXPECT_EQ(Completion(group), expected) << "group " << i;
  }
}

TEST_F(SimulatedGpuTest, MoreBackgroundIntensityNeverSpeedsTheForeground) {
  std::int64_t previous = 0;
  for (int step = 0; step <= 10; ++step) {
    Make(ExampleOptions());
    const OpGroupId fg = Submit(Task(Foreground(1)), Group(10ms, 0.6, 500us));
    if (step > 0) Submit(Task(Background(2)), Group(50ms, 0.1 * step, 2ms));
    const std::int64_t completion = Completion(fg);
    EXPECT_GE(completion, previous) << "background intensity " << 0.1 * step;
    previous = completion;
  }
  EXPECT_GT(previous, 10 * kMs);
}

// Figure 12: what hurts a high-priority kernel is a long low-priority one.
TEST(InterferenceModel, LongBackgroundKernelsHurtShortForegroundKernelsMost) {
  const InterferenceModel model;  // defaults
  double previous = 0;
  for (std::chrono::nanoseconds bg_kernel : {10us, 100us, 1000us, 10000us}) {
    const double slowdown = ForegroundSlowdown(model, 0.5, 50us, bg_kernel, true);
    EXPECT_GT(slowdown, previous);
    previous = slowdown;
  }
  EXPECT_GT(ForegroundSlowdown(model, 0.5, 50us, 10ms, true),
            4 * ForegroundSlowdown(model, 0.5, 10ms, 50us, true));
  EXPECT_EQ(ForegroundSlowdown(model, 0.0, 50us, 10ms, true), 0.0);
  // Hand check (defaults alpha 0.5, beta 1, p 0.2): 0.5 * (0.1 + 1 * 1000 / 1050) = 0.5262.
  EXPECT_NEAR(ForegroundSlowdown(model, 0.5, 50us, 1ms, true), 0.5 * (0.1 + 1000.0 / 1050), 1e-12);
  EXPECT_DOUBLE_EQ(BackgroundSlowdown(model, 0.5), 0.5);
}

TEST_F(SimulatedGpuTest, WindowReportsUtilizationAndOccupancyByRole) {
  Submit(Task(Foreground(100)), Group(10ms, 0.5, 1ms));
  Submit(Task(Background(200)), Group(20ms, 0.4, 4ms));
  clock_.Advance(30ms);
  // [0, 12): fg 0.5 + bg 0.4; [12, 22.4): bg 0.4; [22.4, 30): idle.
  ASSERT_OK_AND_ASSIGN(WindowStats stats, gpus_->Window(0, At(0), At(30 * kMs)));
  EXPECT_NEAR(stats.utilization, 22.4 / 30, 1e-9);
  EXPECT_NEAR(stats.busy.foreground, 12.0 / 30, 1e-9);
  EXPECT_NEAR(stats.busy.background, 22.4 / 30, 1e-9);
  EXPECT_NEAR(stats.sm_occupancy.foreground, 0.5 * 12 / 30, 1e-9);
  EXPECT_NEAR(stats.sm_occupancy.background, 0.4 * 22.4 / 30, 1e-9);
  ASSERT_EQ(stats.processes.size(), 2u);
  EXPECT_EQ(stats.processes[0].pid, 100);
  EXPECT_NEAR(stats.processes[0].sm_utilization, 0.2, 1e-9);
  EXPECT_EQ(stats.processes[1].pid, 200);
}

TEST_F(SimulatedGpuTest, OccupancyIsScaledWhenGroupsAskForMoreThanTheGpu) {
  Submit(Task(Foreground(1)), Group(10ms, 0.9));
  Submit(Task(Background(2)), Group(10ms, 0.6));
  clock_.Advance(1ms);
  ASSERT_OK_AND_ASSIGN(WindowStats stats, gpus_->Window(0, At(0), At(1 * kMs)));
  EXPECT_NEAR(stats.sm_occupancy.foreground, 0.9 / 1.5, 1e-9);
  EXPECT_NEAR(stats.sm_occupancy.background, 0.6 / 1.5, 1e-9);
}

TEST_F(SimulatedGpuTest, MemoryFollowsReportedAllocations) {
  const SimulatedTaskId a = Task(Foreground(1));
  const SimulatedTaskId b = Task(Background(2));
  ASSERT_OK(gpus_->SetAllocatedBytes(a, 10ull << 30));
  clock_.Advance(10ms);
  ASSERT_OK(gpus_->SetAllocatedBytes(b, 30ull << 30));
  clock_.Advance(10ms);
  ASSERT_OK(gpus_->SetAllocatedBytes(a, 4ull << 30));
  auto used_at = [&](std::int64_t t) { return gpus_->MemoryUsedAt(0, At(t)).value_or(0); };
  EXPECT_EQ(used_at(5 * kMs), 10ull << 30);
  EXPECT_EQ(used_at(15 * kMs), 40ull << 30);
  EXPECT_EQ(used_at(20 * kMs), 34ull << 30);
  // 30 GiB (b) + 51 GiB = 81 GiB = 86973087744 bytes > 80 GiB.
  EXPECT_THAT(gpus_->SetAllocatedBytes(a, 51ull << 30),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("would use 86973087744 of the GPU's 85899345920 bytes")));
  EXPECT_EQ(used_at(20 * kMs), 34ull << 30) << "a refused allocation changes nothing";
  ASSERT_OK(gpus_->RemoveTask(b));
  ASSERT_OK_AND_ASSIGN(GpuSample sample, gpus_->Sample(0));
  EXPECT_EQ(sample.memory_used_bytes, 4ull << 30);
  EXPECT_THAT(gpus_->MemoryUsedAt(0, At(25 * kMs)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("in the future")));
}

TEST_F(SimulatedGpuTest, SampleIsTheDevicesViewOfTheLastWindow) {
  Submit(Task(Foreground(100)), Group(10ms, 0.5, 1ms));
  Submit(Task(Background(200)), Group(20ms, 0.4, 4ms));
  clock_.Advance(150ms);  // the default sample window is 100 ms: [50, 150) is idle
  ASSERT_OK_AND_ASSIGN(GpuSample idle, gpus_->Sample(0));
  EXPECT_EQ(Ns(idle.time), 150 * kMs);
  EXPECT_THAT(idle.utilization, Optional(0.0));
  EXPECT_TRUE(idle.processes.empty());

  Submit(Task(Foreground(300)), Group(100ms, 0.25));
  clock_.Advance(50ms);
  ASSERT_OK_AND_ASSIGN(GpuSample busy, gpus_->Sample(0));
  EXPECT_THAT(busy.utilization, Optional(DoubleNear(0.5, 1e-9)));
  EXPECT_THAT(busy.sm_occupancy, Optional(DoubleNear(0.125, 1e-9)));
  ASSERT_EQ(busy.processes.size(), 1u);
  EXPECT_EQ(busy.processes[0].pid, 300);
  EXPECT_NEAR(busy.processes[0].sm_utilization, 0.125, 1e-9);
}

TEST_F(SimulatedGpuTest, DescribesItselfWithSimulatedUuidsFixedBySeed) {
  SimulatedGpuOptions options = ExampleOptions();
  options.gpus = 2;
  options.seed = 7;
  Make(options);
  EXPECT_EQ(gpus_->Describe(), "simulated, 2 GPUs (seed 7)");
  ASSERT_EQ(gpus_->gpus().size(), 2u);
  const std::string uuid = gpus_->gpus()[1].uuid;
  EXPECT_THAT(uuid, MatchesRegex("GPU-sim-0001-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"));
  EXPECT_NE(uuid, gpus_->gpus()[0].uuid);
  Make(options);
  EXPECT_EQ(gpus_->gpus()[1].uuid, uuid) << "same seed, same UUID";
  options.seed = 8;
  Make(options);
  EXPECT_NE(gpus_->gpus()[1].uuid, uuid);
}

TEST_F(SimulatedGpuTest, UuidsDependOnTheNodeNameAndStayTheSameAcrossRestarts) {
  SimulatedGpuOptions options = ExampleOptions();
  options.gpus = 8;  // Two agents of `--devices simulated:8`, both with the default seed.
  options.node_name = "node-a";
  Make(options);
  std::vector<std::string> node_a;
  for (const auto& gpu : gpus_->gpus()) node_a.push_back(gpu.uuid);
  Make(options);  // The agent on node-a restarted.
  for (std::size_t i = 0; i < node_a.size(); ++i) {
    EXPECT_EQ(gpus_->gpus()[i].uuid, node_a[i]) << "node-a's GPU " << i << " after a restart";
  }
  options.node_name = "node-b";
  Make(options);
  for (const auto& gpu : gpus_->gpus()) {
    EXPECT_THAT(gpu.uuid, MatchesRegex("GPU-sim-000[0-7]-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"));
    for (const std::string& uuid : node_a)
      EXPECT_NE(gpu.uuid, uuid) << "node-b clashes with node-a";
  }
}

TEST_F(SimulatedGpuTest, DurationJitterIsDeterministicForASeed) {
  SimulatedGpuOptions options = ExampleOptions();
  options.duration_jitter = 0.1;
  auto run = [&] {
    Make(options);
    const SimulatedTaskId task = Task(Foreground(1));
    OpGroupId last = 0;
    for (int i = 0; i < 50; ++i) last = Submit(task, Group(1ms, 1.0));
    return Completion(last);
  };
  const std::int64_t first = run();
  EXPECT_EQ(run(), first);
  EXPECT_NE(first, 50 * kMs) << "jitter changed the durations";
  EXPECT_NEAR(static_cast<double>(first), 50.0 * kMs, 0.1 * 50 * kMs);
}

TEST_F(SimulatedGpuTest, WaitForCompletionSleepsOnTheClock) {
  const OpGroupId fg = Submit(Task(Foreground(100)), Group(10ms, 0.5, 1ms));
  Submit(Task(Background(200)), Group(20ms, 0.4, 4ms));
  absl::Status waited;
  std::thread worker([&] { waited = gpus_->WaitForCompletion(fg); });
  clock_.WaitForSleepers(1);
  clock_.Advance(12ms);
  worker.join();
  EXPECT_OK(waited);
  EXPECT_EQ(Ns(clock_.Now()), 12 * kMs);
}

TEST_F(SimulatedGpuTest, RejectsBadInput) {
  const SimulatedTaskId task = Task(Foreground(1));
  EXPECT_THAT(
      gpus_->Submit(task, Group(1ms, 0.0)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("intensity: must be in (0, 1]")));
  EXPECT_THAT(gpus_->Submit(task, Group(1ms, 0.5, 2ms)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kernel_duration")));
  EXPECT_THAT(gpus_->Submit(task, Group(-1ms, 0.5)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("solo_duration")));
  EXPECT_THAT(gpus_->Submit(task + 64, Group(1ms, 0.5)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not found")));
  EXPECT_THAT(gpus_->AddTask(3, Foreground(1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("GPU 3")));
  EXPECT_THAT(gpus_->Timing(12345 << 6), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  clock_.Advance(10ms);
  EXPECT_THAT(gpus_->Window(0, At(5 * kMs), At(5 * kMs)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("from < to <= now")));
  EXPECT_THAT(gpus_->Window(0, At(0), At(11 * kMs)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(gpus_->Sample(2), StatusIs(absl::StatusCode::kNotFound, ::testing::_));

  SimulatedGpuOptions options;
  options.gpus = 0;
  EXPECT_THAT(SimulatedGpus::Create(clock_, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus: must be in 1..64")));
  options = SimulatedGpuOptions{};
  options.interference.priority_factor = 2;
  EXPECT_THAT(SimulatedGpus::Create(clock_, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("interference.priority_factor: must be in [0, 1], got 2")));
}

TEST_F(SimulatedGpuTest, WindowsOlderThanTheHistoryAreRefused) {
  SimulatedGpuOptions options = ExampleOptions();
  options.history = 1s;
  Make(options);
  Submit(Task(Foreground(1)), Group(10ms, 1.0));
  clock_.Advance(3s);
  EXPECT_THAT(gpus_->Window(0, At(1 * kMs), At(2 * kMs)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("history")));
  EXPECT_OK(gpus_->Window(0, At(2'500 * kMs), At(3'000 * kMs)).status());
}

}  // namespace
}  // namespace wavepool::agent
