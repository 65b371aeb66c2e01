// The whole agent on simulated GPUs, with real workers' connections (AgentClient) over its unix
// socket: registration and pacing, the feedback loop reaching the gate, dead workers reclaimed,
// metrics. Waits are bounded polls; nothing asserts a duration.
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/peer_process.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/client/agent_client.h"
#include "wavepool/agent/simulated_gpu.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::IsOkAndHolds;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;

constexpr std::chrono::seconds kCatchUp(20);  // A safety net for the agent's threads.

class AgentEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-agent"));
    dir_ = temp_dir_.path();
    clock_ = MakeRealClock();
    runner_ = MakeSystemCommandRunner();
    SimulatedGpuOptions gpus;
    gpus.gpus = 2;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SimulatedGpus> devices,
                         SimulatedGpus::Create(*clock_, gpus));
    AgentOptions options;
    options.directory = dir_;
    options.hostname = "node-a";
    options.version = "test";
    options.mps.mode = MpsMode::kOff;
    options.trust_register = true;  // workers are this test's threads and its peer process
    ASSERT_OK_AND_ASSIGN(agent_,
                         Agent::Start(options, std::move(devices), clock_.get(), runner_.get()));
  }
  void TearDown() override { agent_.reset(); }

  AgentClient::Options Worker(Role role, const std::string& pod, std::uint32_t gpu = 0) {
    AgentClient::Options options;
    options.socket_path = agent_->socket_path();
    options.registration.namespace_name = "team-a";
    options.registration.job = role == Role::kForeground ? "train" : "sweep";
    options.registration.pod = pod;
    options.registration.role = role;
    options.registration.gpu_index = gpu;
    options.registration.max_foreground_slowdown = 1.10;
    options.registration.batch_size = 64;
    options.flush_interval = std::chrono::milliseconds(5);
    options.log = [](std::string_view) {};
    return options;
  }

  std::size_t TasksOn(std::uint32_t gpu) { return agent_->Status().gpus[gpu].tasks.size(); }

  TempDir temp_dir_;  // removed after everything below
  std::string dir_;   // temp_dir_.path()
  ClockPtr clock_;
  CommandRunnerPtr runner_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentEndToEnd, PacesTheBackgroundByWhetherAForegroundSharesItsGpu) {
  ASSERT_OK_AND_ASSIGN(auto background, AgentClient::Connect(Worker(Role::kBackground, "bg-0")));
  EXPECT_EQ(background->registration().credit_limit, 4u);  // alone on GPU 0
  EXPECT_EQ(background->registration().stream_priority, StreamPriority::kLow);
  EXPECT_EQ(background->registration().mps_client_priority, 1u);
  {
    ASSERT_OK_AND_ASSIGN(auto foreground, AgentClient::Connect(Worker(Role::kForeground, "fg-0")));
    EXPECT_EQ(foreground->registration().credit_limit, 2u);
    EXPECT_EQ(foreground->registration().stream_priority, StreamPriority::kHigh);
    // The background is told, and its gate changes, as soon as the foreground arrives.
    EXPECT_TRUE(Eventually(
        [&] {
          auto policy = background->LatestPolicy();
          return policy && policy->credit_limit == 1 && background->gate()->credit_limit() == 1;
        },
        kCatchUp));
    foreground->Close();
  }
  EXPECT_TRUE(Eventually(
      [&] {
        auto policy = background->LatestPolicy();
        return policy && policy->credit_limit == 4 && background->gate()->credit_limit() == 4;
      },
      kCatchUp));
  background->Close();
  EXPECT_TRUE(Eventually([&] { return TasksOn(0) == 0; }, kCatchUp));
}

TEST_F(AgentEndToEnd, ForegroundReportsMarkSlowedGroupsSensitiveInItsGate) {
  ASSERT_OK_AND_ASSIGN(auto foreground, AgentClient::Connect(Worker(Role::kForeground, "fg-0")));
  // Solo: group 5 takes 100 us alone.
  for (int i = 0; i < 5; ++i) ASSERT_OK(foreground->ReportOp({5, OpKind::kCompute, 100'000}));
  ASSERT_TRUE(Eventually(
      [&] {
        return agent_->metrics().ExpositionText().find("wavepool_task_sensitive_op_groups") !=
               std::string::npos;
      },
      kCatchUp));
  EXPECT_FALSE(foreground->gate()->IsSensitive(5));
  ASSERT_OK_AND_ASSIGN(auto background, AgentClient::Connect(Worker(Role::kBackground, "bg-0")));
  // With the background, 140 us: past 1.10x.
  ASSERT_OK(foreground->ReportOp({5, OpKind::kCompute, 140'000}));
  EXPECT_TRUE(Eventually([&] { return foreground->gate()->IsSensitive(5); }, kCatchUp));
  // All-reduces are sensitive from the first report.
  ASSERT_OK(foreground->ReportOp({9, OpKind::kAllReduce, 80'000}));
  EXPECT_TRUE(Eventually([&] { return foreground->gate()->IsSensitive(9); }, kCatchUp));
  EXPECT_TRUE(Eventually(
      [&] {
        const AgentStatus status = agent_->Status();
        for (const TaskStatus& t : status.gpus[0].tasks) {
          if (t.role == Role::kForeground) return t.sensitive_op_groups == 2;
        }
        return false;
      },
      kCatchUp));
}

TEST_F(AgentEndToEnd, ReclaimsTheSlotOfAWorkerThatDies) {
  // A worker in another process that registers, takes a credit, and is then killed without a
  // goodbye.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PeerProcess> doomed,
                       PeerProcess::Start(WorkerFlags(Worker(Role::kBackground, "doomed"))));
  ASSERT_THAT(doomed->ReadLine(kCatchUp), IsOkAndHolds("y"));
  ASSERT_TRUE(Eventually([&] { return TasksOn(0) == 1; }, kCatchUp));
  EXPECT_EQ(agent_->Status().gpus[0].tasks[0].pid, doomed->pid());  // SO_PEERCRED, not the message
  doomed->Signal(SIGKILL);
  EXPECT_EQ(doomed->Wait(kCatchUp), 128 + SIGKILL);
  EXPECT_TRUE(Eventually([&] { return TasksOn(0) == 0; }, kCatchUp));
  EXPECT_THAT(agent_->metrics().ExpositionText(),
              HasSubstr("wavepool_agent_reclaimed_slots_total{hostname=\"node-a\"} 1"));
  // The slot is free again for the next worker.
  ASSERT_OK_AND_ASSIGN(auto next, AgentClient::Connect(Worker(Role::kBackground, "next")));
  EXPECT_EQ(next->gate()->held(), 0);
  EXPECT_TRUE(next->gate()->TryAcquire());
}

TEST_F(AgentEndToEnd, RejectsARegistrationForAGpuTheNodeDoesNotHave) {
  EXPECT_THAT(AgentClient::Connect(Worker(Role::kForeground, "fg-0", 7)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Register.gpu_index: 7 is not a GPU of this node (it has 2)")));
  EXPECT_THAT(
      agent_->metrics().ExpositionText(),
      HasSubstr("wavepool_agent_registrations_total{hostname=\"node-a\",result=\"rejected\","
                "role=\"foreground\"} 1"));
}

TEST_F(AgentEndToEnd, ExportsTaskAndGpuSeries) {
  ASSERT_OK_AND_ASSIGN(auto foreground, AgentClient::Connect(Worker(Role::kForeground, "fg-0", 1)));
  ASSERT_OK(foreground->ReportIteration({1, 0.25, 64}));
  const std::string task =
      "{hostname=\"node-a\",gpu=\"1\",job=\"train\",namespace=\"team-a\",pod=\"fg-0\","
      "role=\"foreground\"}";
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string text = agent_->metrics().ExpositionText();
        return text.find("wavepool_task_samples_total" + task + " 64") != std::string::npos &&
               text.find("wavepool_task_launch_credit_limit" + task + " 2") != std::string::npos &&
               // The job's maxForegroundSlowdown from Register (1.10).
               text.find("wavepool_task_foreground_slowdown_slo_ratio" + task + " 1.1") !=
                   std::string::npos &&
               text.find("wavepool_gpu_memory_total_bytes{hostname=\"node-a\",UUID=\"GPU-sim-") !=
                   std::string::npos;
      },
      kCatchUp))
      << agent_->metrics().ExpositionText();
  foreground->Close();
  // A finished task's series go away.
  EXPECT_TRUE(Eventually(
      [&] { return agent_->metrics().ExpositionText().find("pod=\"fg-0\"") == std::string::npos; },
      kCatchUp));
}

TEST(AgentOptions, RejectsBadOptionsNamingThem) {
  AgentOptions options;
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory")));
  options.directory = "/tmp/x";
  options.hostname = "h";
  options.slots_per_gpu = 33;
  EXPECT_THAT(Validate(options), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("slots_per_gpu: must be in [1, 32]")));
  options.slots_per_gpu = 8;
  options.pacing.foreground_credits = 0;
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("foreground_credits")));
  options.pacing.foreground_credits = 2;
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("identity: must be set")));
  options.trust_register = true;
  EXPECT_OK(Validate(options));
}

TEST_F(AgentEndToEnd, AFlatDeviceTakesItsMemoryWaveFromTheForegroundsAllocator) {
  // The simulated GPU's used memory stays flat, as a caching allocator keeps it on a real one;
  // the foreground reports a 100 ms triangle wave between 1 and 3 GiB every 5 ms.
  constexpr std::uint64_t kGiB = 1ULL << 30;
  constexpr std::int64_t kPeriodNs = 100'000'000;
  ASSERT_OK_AND_ASSIGN(auto foreground, AgentClient::Connect(Worker(Role::kForeground, "fg-0")));
  const std::int64_t start = ToMonotonicNanos(clock_->Now());
  for (std::int64_t t = 0; t <= 15 * kPeriodNs; t += 5'000'000) {
    const double phase = static_cast<double>(t % kPeriodNs) / kPeriodNs;
    const double rise = phase < 0.5 ? 2 * phase : 2 - 2 * phase;
    const auto allocated = static_cast<std::uint64_t>(kGiB * (1 + 2 * rise));
    ASSERT_OK(foreground->ReportMemory({start + t, allocated, 3 * kGiB}));
  }
  ASSERT_TRUE(
      Eventually([&] { return agent_->Status().gpus[0].memory_wave.has_value(); }, kCatchUp));
  const MemoryWave wave = *agent_->Status().gpus[0].memory_wave;
  EXPECT_NEAR(wave.period.count(), 0.1, 0.01);
  EXPECT_NEAR(static_cast<double>(wave.peak_bytes), 3.0 * kGiB, 0.1 * kGiB);
  EXPECT_NEAR(static_cast<double>(wave.trough_bytes), 1.0 * kGiB, 0.1 * kGiB);
  // What other tasks may use is under the peak of what the device handed out.
  ASSERT_TRUE(wave.headroom_bytes.has_value());
  EXPECT_LE(*wave.headroom_bytes,
            static_cast<std::int64_t>(agent_->Status().gpus[0].info.memory_total_bytes - 3 * kGiB));
  EXPECT_FALSE(agent_->Status().gpus[1].memory_wave.has_value());  // no foreground there
}

TEST_F(AgentEndToEnd, ATickTockWorkersTwoWavesGiveTheirPhaseOffset) {
  // One worker runs both waves (tick-tock): each holds a 100 ms triangle wave between 1 and
  // 3 GiB, the tock 30 ms behind the tick; the task's total is their sum.
  constexpr std::uint64_t kGiB = 1ULL << 30;
  constexpr std::int64_t kPeriodNs = 100'000'000;
  constexpr std::int64_t kDelayNs = 30'000'000;
  const auto held = [&](std::int64_t t) {
    const double phase = static_cast<double>(((t % kPeriodNs) + kPeriodNs) % kPeriodNs) / kPeriodNs;
    const double rise = phase < 0.5 ? 2 * phase : 2 - 2 * phase;
    return static_cast<std::uint64_t>(kGiB * (1 + 2 * rise));
  };
  ASSERT_OK_AND_ASSIGN(auto worker, AgentClient::Connect(Worker(Role::kForeground, "fg-0")));
  const std::int64_t start = ToMonotonicNanos(clock_->Now());
  for (std::int64_t t = 0; t <= 15 * kPeriodNs; t += 5'000'000) {
    ASSERT_OK(worker->ReportWaveMemory({0, start + t, held(t)}));
    ASSERT_OK(worker->ReportWaveMemory({1, start + t, held(t - kDelayNs)}));
    ASSERT_OK(worker->ReportMemory({start + t, held(t) + held(t - kDelayNs), 6 * kGiB}));
  }
  ASSERT_TRUE(
      Eventually([&] { return agent_->Status().gpus[0].phase_offset.has_value(); }, kCatchUp));
  EXPECT_NEAR(agent_->Status().gpus[0].phase_offset->count(), 0.030, 0.005);
  EXPECT_NEAR(agent_->Status().gpus[0].phase_offset_ratio.value_or(0), 0.3, 0.05);
  EXPECT_THAT(agent_->metrics().ExpositionText(),
              HasSubstr("wavepool_agent_reports_total{hostname=\"node-a\",type=\"wave_memory\"}"));
}

TEST_F(AgentEndToEnd, HandsOutEachWorkersMemorySamplesOnceAndItsGateTotals) {
  ASSERT_OK_AND_ASSIGN(auto worker, AgentClient::Connect(Worker(Role::kBackground, "bg-0", 1)));
  for (std::int64_t t = 1; t <= 10; ++t) {
    ASSERT_OK(worker->ReportMemory(
        {t * 1000, static_cast<std::uint64_t>(100 * t), static_cast<std::uint64_t>(200 * t)}));
  }
  const std::int32_t pid = getpid();  // the task's process, as the socket's peer credentials say
  ASSERT_TRUE(
      Eventually([&] { return agent_->TaskMemorySamples(1, pid, 0).size() == 10; }, kCatchUp));
  // A caller that passes the newest time it read gets only what came after.
  const std::vector<MemorySample> later = agent_->TaskMemorySamples(1, pid, 6000);
  ASSERT_EQ(later.size(), 4u);
  EXPECT_EQ(later.front().time_ns, 7000);
  EXPECT_EQ(later.back().allocated_bytes, 1000u);
  EXPECT_EQ(later.back().reserved_bytes, 2000u);
  EXPECT_TRUE(agent_->TaskMemorySamples(1, pid, 10000).empty());
  EXPECT_TRUE(agent_->TaskMemorySamples(0, pid, 0).empty());  // no task of it on GPU 0
  // Alone, the background gets 4 credits: a fifth waits until the timeout, and the gate's
  // totals (what local mode's report charts as pacing) count the wait.
  WorkerGate& gate = *worker->gate();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(gate.TryAcquire());
  EXPECT_THAT(gate.Acquire(std::chrono::milliseconds(30)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("no launch credit")));
  const TaskStatus task = agent_->Status().gpus[1].tasks.at(0);
  // Most of the 30 ms: the gate starts counting after its first try, not when Acquire is called.
  EXPECT_GE(task.launch_wait.count(), 0.020);
  EXPECT_EQ(task.launch_paused.count(), 0);  // no foreground held it
  for (int i = 0; i < 4; ++i) gate.Release();
}

}  // namespace
}  // namespace wavepool::agent
