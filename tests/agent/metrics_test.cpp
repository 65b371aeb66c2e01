#include "wavepool/agent/metrics.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/metrics_test_util.h"
#include "tests/support/http_get.h"
#include "tests/support/status_matchers.h"

namespace wavepool::agent {
namespace {

using metrics_testing::CountSamples;
using metrics_testing::Labels;
using metrics_testing::SampleValue;
using ::testing::HasSubstr;
using ::testing::Optional;
using ::wavepool::testing::HttpGet;
using ::wavepool::testing::StatusIs;

constexpr char kHost[] = "node-a";
constexpr char kUuid0[] = "GPU-11111111-2222-3333-4444-555555555555";
constexpr char kUuid1[] = "GPU-66666666-7777-8888-9999-000000000000";
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

MetricsOptions TwoGpuOptions() {
  MetricsOptions options;
  options.hostname = kHost;
  options.info = {"0.1.0", /*nvml=*/true, /*mps=*/false, /*gpm=*/true};
  options.gpus = {{0, kUuid0, /*has_gpm=*/true}, {1, kUuid1, /*has_gpm=*/false}};
  return options;
}

std::unique_ptr<AgentMetrics> MakeMetrics(MetricsOptions options = TwoGpuOptions()) {
  auto metrics = AgentMetrics::Create(options);
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  return metrics.ok() ? std::move(metrics).value() : nullptr;
}

TaskLabels Task(std::string pod, Role role, std::uint32_t gpu = 0) {
  return {"research", "vgg16", std::move(pod), role, gpu};
}

Labels GpuLabels(const char* gpu, const char* uuid) {
  return {{"hostname", kHost}, {"gpu", gpu}, {"UUID", uuid}};
}

Labels TaskSeriesLabels(const std::string& pod, const char* role, const char* gpu = "0") {
  return {{"hostname", kHost}, {"namespace", "research"},
          {"job", "vgg16"},    {"pod", pod},
          {"role", role},      {"gpu", gpu}};
}

Labels With(Labels labels, const std::string& key, const std::string& value) {
  labels[key] = value;
  return labels;
}

// The sample names of every per-task family (a histogram has three).
const std::vector<std::string>& TaskSampleNames() {
  static const std::vector<std::string> kNames = {"wavepool_task_iteration_seconds_bucket",
                                                  "wavepool_task_iteration_seconds_count",
                                                  "wavepool_task_iteration_seconds_sum",
                                                  "wavepool_task_samples_total",
                                                  "wavepool_task_launch_credits_in_flight",
                                                  "wavepool_task_launch_credit_limit",
                                                  "wavepool_task_gate_wait_seconds_total",
                                                  "wavepool_task_paused_seconds_total",
                                                  "wavepool_task_launches_total",
                                                  "wavepool_task_foreground_slowdown_ratio",
                                                  "wavepool_task_foreground_slowdown_slo_ratio",
                                                  "wavepool_task_sensitive_op_groups",
                                                  "wavepool_task_recommended_batch_size",
                                                  "wavepool_task_cheating"};
  return kNames;
}

int CountTaskSamples(const std::string& text, const std::string& pod) {
  int count = 0;
  for (const std::string& name : TaskSampleNames()) {
    count += CountSamples(text, name, {{"pod", pod}});
  }
  return count;
}

TEST(Metrics, ExportsEveryFamilyWithItsType) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK(metrics->AddTask(Task("fg-0", Role::kForeground)).status());
  ASSERT_OK(metrics->AddTask(Task("bg-0", Role::kBackground)).status());
  const std::string text = metrics->ExpositionText();
  const std::vector<std::pair<std::string, std::string>> families = {
      {"wavepool_gpu_memory_used_bytes", "gauge"},
      {"wavepool_gpu_memory_total_bytes", "gauge"},
      {"wavepool_gpu_utilization_ratio", "gauge"},
      {"wavepool_gpu_sm_occupancy_ratio", "gauge"},
      {"wavepool_gpu_memory_wave_peak_bytes", "gauge"},
      {"wavepool_gpu_memory_wave_trough_bytes", "gauge"},
      {"wavepool_gpu_memory_wave_period_seconds", "gauge"},
      {"wavepool_gpu_memory_wave_phase_offset_seconds", "gauge"},
      {"wavepool_gpu_memory_wave_phase_offset_ratio", "gauge"},
      {"wavepool_gpu_memory_headroom_bytes", "gauge"},
      {"wavepool_gpu_background_hold", "gauge"},
      {"wavepool_gpu_tasks", "gauge"},
      {"wavepool_task_iteration_seconds", "histogram"},
      {"wavepool_task_samples_total", "counter"},
      {"wavepool_task_launch_credits_in_flight", "gauge"},
      {"wavepool_task_launch_credit_limit", "gauge"},
      {"wavepool_task_gate_wait_seconds_total", "counter"},
      {"wavepool_task_paused_seconds_total", "counter"},
      {"wavepool_task_launches_total", "counter"},
      {"wavepool_task_foreground_slowdown_ratio", "gauge"},
      {"wavepool_task_foreground_slowdown_slo_ratio", "gauge"},
      {"wavepool_task_sensitive_op_groups", "gauge"},
      {"wavepool_task_recommended_batch_size", "gauge"},
      {"wavepool_task_cheating", "gauge"},
      {"wavepool_agent_info", "gauge"},
      {"wavepool_agent_reports_total", "counter"},
      {"wavepool_agent_protocol_errors_total", "counter"},
      {"wavepool_agent_reclaimed_slots_total", "counter"},
      {"wavepool_agent_registrations_total", "counter"},
      {"wavepool_agent_cheating_detections_total", "counter"},
      {"wavepool_agent_heartbeat_timestamp_seconds", "gauge"},
  };
  for (const auto& [name, type] : families) {
    EXPECT_THAT(text, HasSubstr("# TYPE " + name + " " + type + "\n")) << name;
    EXPECT_THAT(text, HasSubstr("# HELP " + name + " ")) << name;
  }
  // Every sample carries the node's hostname.
  for (const auto& sample : metrics_testing::ParseSamples(text)) {
    EXPECT_EQ(sample.labels.count("hostname"), 1u) << sample.name;
  }
}

TEST(Metrics, GpuSeriesCarryTheDcgmJoinLabelsAndTheValuesSet) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  GpuMetrics* gpu = metrics->gpu(0);
  ASSERT_NE(gpu, nullptr);
  gpu->SetMemory(123456789, 80 * kGiB);
  gpu->SetUtilization(0.75);
  gpu->SetRoleSmOccupancy(0.5, 0.25);
  gpu->SetSmOccupancy(0.8);
  // An 80 GiB GPU whose wave peaks at 60 GiB: headroom = 80 - 60 = 20 GiB = 21474836480 bytes.
  gpu->SetMemoryWave({60 * kGiB, 20 * kGiB, Seconds(0.25), Seconds(0.125), 20 * kGiB, 0.5});
  gpu->SetBackgroundHold(true);

  const std::string text = metrics->ExpositionText();
  const Labels gpu0 = GpuLabels("0", kUuid0);
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_used_bytes", gpu0), Optional(123456789.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_total_bytes", gpu0), Optional(85899345920.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_utilization_ratio", gpu0), Optional(0.75));
  EXPECT_THAT(
      SampleValue(text, "wavepool_gpu_sm_occupancy_ratio", With(gpu0, "role", "foreground")),
      Optional(0.5));
  EXPECT_THAT(
      SampleValue(text, "wavepool_gpu_sm_occupancy_ratio", With(gpu0, "role", "background")),
      Optional(0.25));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_sm_occupancy_ratio", With(gpu0, "role", "all")),
              Optional(0.8));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_wave_peak_bytes", gpu0),
              Optional(64424509440.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_wave_trough_bytes", gpu0),
              Optional(21474836480.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_wave_period_seconds", gpu0), Optional(0.25));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_wave_phase_offset_seconds", gpu0),
              Optional(0.125));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_wave_phase_offset_ratio", gpu0),
              Optional(0.5));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_headroom_bytes", gpu0),
              Optional(21474836480.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_background_hold", gpu0), Optional(1.0));
  // The other GPU keeps its own series, untouched.
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_memory_used_bytes", GpuLabels("1", kUuid1)),
              Optional(0.0));
  EXPECT_EQ(metrics->gpu(2), nullptr);
}

TEST(Metrics, SmOccupancyOfTheWholeGpuOnlyWhereGpmReportsIt) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  metrics->gpu(1)->SetSmOccupancy(0.9);  // GPU 1 has no GPM: ignored
  const std::string text = metrics->ExpositionText();
  EXPECT_EQ(CountSamples(text, "wavepool_gpu_sm_occupancy_ratio", {{"gpu", "1"}, {"role", "all"}}),
            0);
  EXPECT_EQ(CountSamples(text, "wavepool_gpu_sm_occupancy_ratio", {{"gpu", "1"}}), 2);
  EXPECT_EQ(CountSamples(text, "wavepool_gpu_sm_occupancy_ratio", {{"gpu", "0"}, {"role", "all"}}),
            1);
}

TEST(Metrics, TaskSeriesCarryTheTaskLabelsAndTheValuesSet) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * task,
                       metrics->AddTask(Task("vgg16-worker-0", Role::kForeground)));
  task->ObserveGate({/*credit_limit=*/2, /*credits_in_flight=*/1, /*launches_total=*/100,
                     /*wait_ns_total=*/1'500'000'000, /*paused_ns_total=*/500'000'000});
  ASSERT_OK(task->ObserveIteration(Seconds(0.25), 64));
  task->SetForegroundSlowdown(1.08);
  task->SetForegroundSlowdownSlo(1.2);
  task->SetSensitiveOpGroups(3);

  const std::string text = metrics->ExpositionText();
  const Labels labels = TaskSeriesLabels("vgg16-worker-0", "foreground");
  EXPECT_THAT(SampleValue(text, "wavepool_task_launch_credit_limit", labels), Optional(2.0));
  EXPECT_THAT(SampleValue(text, "wavepool_task_launch_credits_in_flight", labels), Optional(1.0));
  EXPECT_THAT(SampleValue(text, "wavepool_task_launches_total", labels), Optional(100.0));
  EXPECT_THAT(SampleValue(text, "wavepool_task_gate_wait_seconds_total", labels), Optional(1.5));
  EXPECT_THAT(SampleValue(text, "wavepool_task_paused_seconds_total", labels), Optional(0.5));
  EXPECT_THAT(SampleValue(text, "wavepool_task_samples_total", labels), Optional(64.0));
  EXPECT_THAT(SampleValue(text, "wavepool_task_iteration_seconds_count", labels), Optional(1.0));
  EXPECT_THAT(SampleValue(text, "wavepool_task_iteration_seconds_sum", labels), Optional(0.25));
  EXPECT_THAT(SampleValue(text, "wavepool_task_foreground_slowdown_ratio", labels), Optional(1.08));
  EXPECT_THAT(SampleValue(text, "wavepool_task_foreground_slowdown_slo_ratio", labels),
              Optional(1.2));
  EXPECT_THAT(SampleValue(text, "wavepool_task_sensitive_op_groups", labels), Optional(3.0));
}

TEST(Metrics, IterationHistogramBucketsSpanOneMillisecondToTenSeconds) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * task, metrics->AddTask(Task("w", Role::kForeground)));
  for (double seconds : {0.003, 0.003, 0.2, 7.0}) {
    ASSERT_OK(task->ObserveIteration(Seconds(seconds), 32));
  }
  // Cumulative buckets: 0.003 s twice lands in le=0.005 onwards, 0.2 s in le=0.25 onwards,
  // 7 s only in le=10. Sum = 0.003 + 0.003 + 0.2 + 7 = 7.206; samples = 4 * 32 = 128.
  const std::string text = metrics->ExpositionText();
  const Labels labels = TaskSeriesLabels("w", "foreground");
  const std::vector<std::pair<const char*, double>> expected = {
      {"0.001", 0}, {"0.0025", 0}, {"0.005", 2}, {"0.01", 2}, {"0.025", 2},
      {"0.05", 2},  {"0.1", 2},    {"0.25", 3},  {"0.5", 3},  {"1", 3},
      {"2.5", 3},   {"5", 3},      {"10", 4},    {"+Inf", 4}};
  for (const auto& [le, count] : expected) {
    EXPECT_THAT(SampleValue(text, "wavepool_task_iteration_seconds_bucket", With(labels, "le", le)),
                Optional(count))
        << "le=" << le;
  }
  EXPECT_THAT(SampleValue(text, "wavepool_task_iteration_seconds_count", labels), Optional(4.0));
  const auto sum = SampleValue(text, "wavepool_task_iteration_seconds_sum", labels);
  ASSERT_TRUE(sum.has_value());
  EXPECT_NEAR(*sum, 7.206, 1e-9);
  EXPECT_THAT(SampleValue(text, "wavepool_task_samples_total", labels), Optional(128.0));
}

TEST(Metrics, RemovedTaskSeriesDisappear) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * ended, metrics->AddTask(Task("ended", Role::kForeground)));
  ASSERT_OK_AND_ASSIGN(TaskMetrics * running, metrics->AddTask(Task("running", Role::kBackground)));
  ended->ObserveGate({2, 1, 10, 1000, 0});
  running->ObserveGate({1, 1, 10, 1000, 0});
  // Foreground: 6 families every task has, slowdown, its objective and sensitive groups, and the
  // histogram's 14 buckets (13 bounds and +Inf) with _sum and _count: 6 + 3 + 16 = 25.
  EXPECT_EQ(CountTaskSamples(metrics->ExpositionText(), "ended"), 25);

  metrics->RemoveTask(ended);
  const std::string text = metrics->ExpositionText();
  EXPECT_EQ(CountTaskSamples(text, "ended"), 0);
  // Background: recommended batch size and the cheating flag instead of slowdown and sensitive
  // groups: 6 + 2 + 16 = 24.
  EXPECT_EQ(CountTaskSamples(text, "running"), 24);
  metrics->RemoveTask(nullptr);  // a no-op
}

TEST(Metrics, GateCountersAreIncrementsOfCumulativeReadings) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * task, metrics->AddTask(Task("w", Role::kBackground)));
  const Labels labels = TaskSeriesLabels("w", "background");
  // Readings of launches 100, 250, then 40 (the slot's statistics restarted), then 60:
  // increments 100 + 150 + 40 + 20, so the counter reads 100, 250, 290, 310.
  // Waits of 1 s, 3 s, then 0.5 s (restarted): 1 + 2 + 0.5 = 3.5 s.
  const std::vector<std::pair<GateReading, std::pair<double, double>>> steps = {
      {{1, 0, 100, 1'000'000'000, 0}, {100, 1.0}},
      {{1, 1, 250, 3'000'000'000, 0}, {250, 3.0}},
      {{1, 0, 40, 500'000'000, 0}, {290, 3.5}},
      {{1, 0, 60, 500'000'000, 0}, {310, 3.5}},
  };
  double previous_launches = 0;
  for (const auto& [reading, expected] : steps) {
    task->ObserveGate(reading);
    const std::string text = metrics->ExpositionText();
    const auto launches = SampleValue(text, "wavepool_task_launches_total", labels);
    ASSERT_TRUE(launches.has_value());
    EXPECT_EQ(*launches, expected.first);
    EXPECT_GE(*launches, previous_launches);
    previous_launches = *launches;
    EXPECT_THAT(SampleValue(text, "wavepool_task_gate_wait_seconds_total", labels),
                Optional(expected.second));
  }
}

TEST(Metrics, SlotReusedByANewTaskStartsANewSeriesFromZero) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * first, metrics->AddTask(Task("a", Role::kBackground)));
  first->ObserveGate({1, 0, 500, 0, 0});
  metrics->RemoveTask(first);
  // The slot's next worker: the gate counts its launches from zero; 30 so far.
  ASSERT_OK_AND_ASSIGN(TaskMetrics * second, metrics->AddTask(Task("b", Role::kBackground)));
  second->ObserveGate({1, 0, 30, 0, 0});
  std::string text = metrics->ExpositionText();
  EXPECT_EQ(CountTaskSamples(text, "a"), 0);
  EXPECT_THAT(
      SampleValue(text, "wavepool_task_launches_total", TaskSeriesLabels("b", "background")),
      Optional(30.0));
  // The same pod name again (a restarted pod) also counts from its own zero.
  metrics->RemoveTask(second);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * again, metrics->AddTask(Task("a", Role::kBackground)));
  again->ObserveGate({1, 0, 7, 0, 0});
  text = metrics->ExpositionText();
  EXPECT_THAT(
      SampleValue(text, "wavepool_task_launches_total", TaskSeriesLabels("a", "background")),
      Optional(7.0));
}

TEST(Metrics, TasksWithIdenticalLabelsShareSeriesUntilBothAreRemoved) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * old_worker, metrics->AddTask(Task("w", Role::kForeground)));
  ASSERT_OK_AND_ASSIGN(TaskMetrics * new_worker, metrics->AddTask(Task("w", Role::kForeground)));
  old_worker->ObserveGate({2, 0, 10, 0, 0});
  new_worker->ObserveGate({2, 0, 5, 0, 0});
  const Labels labels = TaskSeriesLabels("w", "foreground");
  const Labels foreground_tasks = With(GpuLabels("0", kUuid0), "role", "foreground");
  std::string text = metrics->ExpositionText();
  EXPECT_THAT(SampleValue(text, "wavepool_task_launches_total", labels), Optional(15.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_tasks", foreground_tasks), Optional(2.0));

  metrics->RemoveTask(old_worker);
  new_worker->ObserveGate({2, 0, 6, 0, 0});  // 10 + 6
  text = metrics->ExpositionText();
  EXPECT_THAT(SampleValue(text, "wavepool_task_launches_total", labels), Optional(16.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_tasks", foreground_tasks), Optional(1.0));

  metrics->RemoveTask(new_worker);
  text = metrics->ExpositionText();
  EXPECT_EQ(CountTaskSamples(text, "w"), 0);
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_tasks", foreground_tasks), Optional(0.0));
}

TEST(Metrics, GpuTaskCountsFollowAddAndRemoveByRole) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK(metrics->AddTask(Task("fg", Role::kForeground)).status());
  ASSERT_OK(metrics->AddTask(Task("bg-1", Role::kBackground)).status());
  ASSERT_OK_AND_ASSIGN(TaskMetrics * bg2, metrics->AddTask(Task("bg-2", Role::kBackground)));
  ASSERT_OK(metrics->AddTask(Task("bg-3", Role::kBackground, /*gpu=*/1)).status());
  metrics->RemoveTask(bg2);
  const std::string text = metrics->ExpositionText();
  const Labels gpu0 = GpuLabels("0", kUuid0);
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_tasks", With(gpu0, "role", "foreground")),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "wavepool_gpu_tasks", With(gpu0, "role", "background")),
              Optional(1.0));
  EXPECT_THAT(
      SampleValue(text, "wavepool_gpu_tasks", With(GpuLabels("1", kUuid1), "role", "background")),
      Optional(1.0));
}

TEST(Metrics, RoleSpecificTaskSeriesExistOnlyForTheirRole) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * fg, metrics->AddTask(Task("fg", Role::kForeground)));
  ASSERT_OK_AND_ASSIGN(TaskMetrics * bg, metrics->AddTask(Task("bg", Role::kBackground)));
  fg->SetRecommendedBatchSize(16);    // ignored: foreground
  bg->SetForegroundSlowdown(2.0);     // ignored: background
  bg->SetForegroundSlowdownSlo(2.0);  // ignored: background
  bg->SetSensitiveOpGroups(5);        // ignored: background
  bg->SetRecommendedBatchSize(24);
  const std::string text = metrics->ExpositionText();
  EXPECT_EQ(CountSamples(text, "wavepool_task_recommended_batch_size", {{"pod", "fg"}}), 0);
  EXPECT_EQ(CountSamples(text, "wavepool_task_foreground_slowdown_ratio", {{"pod", "bg"}}), 0);
  EXPECT_EQ(CountSamples(text, "wavepool_task_foreground_slowdown_slo_ratio", {{"pod", "bg"}}), 0);
  EXPECT_EQ(CountSamples(text, "wavepool_task_sensitive_op_groups", {{"pod", "bg"}}), 0);
  EXPECT_THAT(SampleValue(text, "wavepool_task_recommended_batch_size",
                          TaskSeriesLabels("bg", "background")),
              Optional(24.0));
}

TEST(Metrics, AgentCountersInfoAndHeartbeat) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  metrics->CountReport(ReportType::kOps);
  metrics->CountReport(ReportType::kOps);
  metrics->CountReport(ReportType::kMemory);
  metrics->CountProtocolError(ProtocolErrorKind::kOversized);
  metrics->CountRegistration(Role::kForeground, RegistrationResult::kAccepted);
  metrics->CountRegistration(Role::kBackground, RegistrationResult::kNoFreeSlot);
  metrics->CountReclaimedSlot();
  metrics->SetHeartbeat(std::chrono::system_clock::time_point(std::chrono::seconds(1700000000)));

  std::string text = metrics->ExpositionText();
  const Labels host = {{"hostname", kHost}};
  EXPECT_THAT(SampleValue(text, "wavepool_agent_reports_total", With(host, "type", "ops")),
              Optional(2.0));
  EXPECT_THAT(SampleValue(text, "wavepool_agent_reports_total", With(host, "type", "memory")),
              Optional(1.0));
  // Counters of every label value exist from start-up, at 0, so that rate() sees the first one.
  EXPECT_THAT(SampleValue(text, "wavepool_agent_reports_total", With(host, "type", "iteration")),
              Optional(0.0));
  EXPECT_THAT(
      SampleValue(text, "wavepool_agent_protocol_errors_total", With(host, "kind", "oversized")),
      Optional(1.0));
  EXPECT_EQ(CountSamples(text, "wavepool_agent_protocol_errors_total", {}), 5);
  EXPECT_THAT(SampleValue(text, "wavepool_agent_registrations_total",
                          {{"hostname", kHost}, {"role", "foreground"}, {"result", "accepted"}}),
              Optional(1.0));
  EXPECT_THAT(
      SampleValue(text, "wavepool_agent_registrations_total",
                  {{"hostname", kHost}, {"role", "background"}, {"result", "no_free_slot"}}),
      Optional(1.0));
  EXPECT_EQ(CountSamples(text, "wavepool_agent_registrations_total", {}), 6);
  EXPECT_THAT(SampleValue(text, "wavepool_agent_reclaimed_slots_total", host), Optional(1.0));
  EXPECT_THAT(SampleValue(text, "wavepool_agent_heartbeat_timestamp_seconds", host),
              Optional(1700000000.0));
  const Labels info = {{"hostname", kHost},
                       {"version", "0.1.0"},
                       {"nvml", "true"},
                       {"mps", "false"},
                       {"gpm", "true"}};
  EXPECT_THAT(SampleValue(text, "wavepool_agent_info", info), Optional(1.0));

  ASSERT_OK(metrics->SetInfo({"0.1.0", true, /*mps=*/true, true}));
  text = metrics->ExpositionText();
  EXPECT_EQ(CountSamples(text, "wavepool_agent_info", {}), 1);
  EXPECT_THAT(SampleValue(text, "wavepool_agent_info", With(info, "mps", "true")), Optional(1.0));
}

TEST(Metrics, CreateRejectsBadOptions) {
  MetricsOptions no_host = TwoGpuOptions();
  no_host.hostname.clear();
  EXPECT_THAT(AgentMetrics::Create(no_host),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hostname")));
  MetricsOptions no_uuid = TwoGpuOptions();
  no_uuid.gpus[1].uuid.clear();
  EXPECT_THAT(AgentMetrics::Create(no_uuid),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus[1].uuid")));
  MetricsOptions twice = TwoGpuOptions();
  twice.gpus[1].index = 0;
  EXPECT_THAT(AgentMetrics::Create(twice),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus[1].index: 0")));
  // The endpoint's limits: metrics_endpoint_test.cpp.
}

TEST(Metrics, AddTaskRejectsUnknownGpuEmptyNamesAndUnknownRole) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  EXPECT_THAT(metrics->AddTask(Task("w", Role::kForeground, /*gpu=*/7)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("gpu 7: not one of this node's "
                                                              "GPUs (0, 1)")));
  EXPECT_THAT(metrics->AddTask(Task("", Role::kForeground)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pod")));
  EXPECT_THAT(metrics->AddTask(Task("w", static_cast<Role>(9))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("role")));
  const std::string text = metrics->ExpositionText();
  EXPECT_EQ(CountTaskSamples(text, "w"), 0);
  EXPECT_EQ(CountSamples(text, "wavepool_gpu_tasks", {}), 4);
  for (const auto& sample : metrics_testing::ParseSamples(text)) {
    if (sample.name == "wavepool_gpu_tasks") {
      EXPECT_EQ(sample.value, 0) << "gpu_tasks";
    }
  }
}

TEST(Metrics, ObserveIterationRejectsNegativeNonFiniteOrHugeDurations) {
  auto metrics = MakeMetrics();
  ASSERT_NE(metrics, nullptr);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * task, metrics->AddTask(Task("w", Role::kForeground)));
  // 1e308: finite, but two of them would make the histogram's sum infinite.
  for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity(), 1e308}) {
    EXPECT_THAT(task->ObserveIteration(Seconds(bad), 8),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("iteration seconds")));
  }
  const std::string text = metrics->ExpositionText();
  const Labels labels = TaskSeriesLabels("w", "foreground");
  EXPECT_THAT(SampleValue(text, "wavepool_task_iteration_seconds_count", labels), Optional(0.0));
  EXPECT_THAT(SampleValue(text, "wavepool_task_samples_total", labels), Optional(0.0));
}

TEST(Metrics, EndpointServesTheMetricsOnThePickedPort) {
  MetricsOptions options = TwoGpuOptions();
  options.bind_address = "127.0.0.1";
  auto metrics = MakeMetrics(options);
  ASSERT_NE(metrics, nullptr);
  ASSERT_NE(metrics->port(), 0);
  metrics->gpu(0)->SetMemory(4242, 80 * kGiB);
  ASSERT_OK_AND_ASSIGN(auto response,
                       HttpGet(metrics->port(), "/metrics", std::chrono::seconds(30)));
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(SampleValue(response.body, "wavepool_gpu_memory_used_bytes", GpuLabels("0", kUuid0)),
              Optional(4242.0));

  auto no_endpoint = MakeMetrics();
  ASSERT_NE(no_endpoint, nullptr);
  EXPECT_EQ(no_endpoint->port(), 0);
}

TEST(Metrics, TakenPortIsUnavailable) {
  MetricsOptions options = TwoGpuOptions();
  options.bind_address = "127.0.0.1";
  auto first = MakeMetrics(options);
  ASSERT_NE(first, nullptr);
  options.port = first->port();
  EXPECT_THAT(AgentMetrics::Create(options),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("127.0.0.1:" + std::to_string(first->port()))));
}

TEST(Metrics, PromtoolCheckMetricsReportsNothingOnAScrape) {
  const auto promtool = metrics_testing::FindExecutable("promtool");
  if (!promtool.has_value()) {
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/setup "
                    "installs it)";
  }
  MetricsOptions options = TwoGpuOptions();
  options.bind_address = "127.0.0.1";
  auto metrics = MakeMetrics(options);
  ASSERT_NE(metrics, nullptr);
  // Every family with series and non-trivial values.
  GpuMetrics* gpu = metrics->gpu(0);
  gpu->SetMemory(30 * kGiB, 80 * kGiB);
  gpu->SetUtilization(0.9);
  gpu->SetRoleSmOccupancy(0.6, 0.3);
  gpu->SetSmOccupancy(0.85);
  gpu->SetMemoryWave({50 * kGiB, 10 * kGiB, Seconds(0.4), Seconds(0.2), 30 * kGiB});
  gpu->SetBackgroundHold(true);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * fg, metrics->AddTask(Task("fg-0", Role::kForeground)));
  ASSERT_OK_AND_ASSIGN(TaskMetrics * bg, metrics->AddTask(Task("bg-0", Role::kBackground)));
  for (TaskMetrics* task : {fg, bg}) {
    task->ObserveGate({2, 1, 1000, 2'000'000'000, 1'000'000'000});
    ASSERT_OK(task->ObserveIteration(Seconds(0.3), 128));
  }
  fg->SetForegroundSlowdown(1.05);
  fg->SetSensitiveOpGroups(2);
  bg->SetRecommendedBatchSize(32);
  metrics->CountReport(ReportType::kIteration);
  metrics->CountProtocolError(ProtocolErrorKind::kMalformed);
  metrics->CountRegistration(Role::kForeground, RegistrationResult::kAccepted);
  metrics->CountReclaimedSlot();
  metrics->SetHeartbeat(std::chrono::system_clock::now());

  ASSERT_OK_AND_ASSIGN(auto scrape, HttpGet(metrics->port(), "/metrics", std::chrono::seconds(30)));
  ASSERT_EQ(scrape.status, 200);
  ASSERT_OK_AND_ASSIGN(auto check,
                       metrics_testing::RunWithInput({*promtool, "check", "metrics"}, scrape.body,
                                                     std::chrono::seconds(120)));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output, "") << "scraped text:\n" << scrape.body;
}

}  // namespace
}  // namespace wavepool::agent
