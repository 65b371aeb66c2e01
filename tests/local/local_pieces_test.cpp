// The pieces of local mode that need no process: reading the workers' progress lines, showing
// them on the run's clock and giving the jobs GPUs.
#include <chrono>
#include <ctime>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job_processes.h"
#include "local_jobs.h"
#include "progress.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"

namespace wavepool::local {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::StatusIs;

TEST(WorkerDevice, SimulatedGpusTrainOnTheCpuAndTheMachinesOnTheirOwnGpu) {
  using Env = std::map<std::string, std::string>;
  EXPECT_EQ(WorkerDeviceEnvironment(false, 3), (Env{{"WAVEPOOL_DEVICE", "cpu"}}));
  EXPECT_EQ(WorkerDeviceEnvironment(true, 3),
            (Env{{"WAVEPOOL_DEVICE", "cuda:3"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}));
}

TEST(StepLine, ReadsTheWorkersProgressLine) {
  std::optional<StepLine> line = ParseStepLine(
      "step 10/100 loss 2.34336019 samples/s 2314.2 iteration 0.0138 s (compute 0.0119, "
      "transfer 0.0001, all-reduce 0.0003, data 0.0005) tock");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->step, 10);
  EXPECT_EQ(line->steps, 100);
  EXPECT_DOUBLE_EQ(line->loss, 2.34336019);
  EXPECT_DOUBLE_EQ(line->samples_per_second, 2314.2);
  EXPECT_DOUBLE_EQ(line->iteration_seconds, 0.0138);
  EXPECT_DOUBLE_EQ(line->transfer_seconds, 0.0001);
  EXPECT_DOUBLE_EQ(line->allreduce_seconds, 0.0003);
  EXPECT_EQ(line->wave, "tock");
  EXPECT_FALSE(ParseStepLine("resumed from /x at step 4").has_value());
  EXPECT_FALSE(ParseStepLine("step ten/100 loss 1").has_value());
  EXPECT_FALSE(
      ParseStepLine("step 99999999999999999999/1 loss 1 samples/s 1 iteration 1 s (compute 1, "
                    "transfer 1, all-reduce 1, data 1)")
          .has_value());
}

// "%H:%M:%S" of `time` in local time, as the display's lines begin.
std::string LocalClockTime(WallTime time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[16];
  std::strftime(text, sizeof(text), "%H:%M:%S", &local);
  return text;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

agent::TaskStatus ForegroundTask(std::string job, double slowdown) {
  agent::TaskStatus task;
  task.namespace_name = "default";
  task.job = std::move(job);
  task.foreground_slowdown = slowdown;
  return task;
}

TEST(ForegroundSlowdowns, AJobShowsItsSlowestRankWhereverItIsListed) {
  agent::AgentStatus status;
  status.gpus.resize(3);
  agent::TaskStatus background = ForegroundTask("mlp-background", 3.0);
  background.role = agent::Role::kBackground;
  // The rank beside the background first, then one alone after it: listed last, the fast rank
  // must not hide the slow one.
  status.gpus[0].tasks = {ForegroundTask("cnn", 1.8), background};
  status.gpus[1].tasks = {ForegroundTask("cnn", 0.98)};
  status.gpus[2].tasks = {ForegroundTask("other", 1.05)};
  EXPECT_THAT(ForegroundSlowdowns(status),
              ::testing::UnorderedElementsAre(::testing::Pair("default/cnn", 1.8),
                                              ::testing::Pair("default/other", 1.05)));
  std::swap(status.gpus[0].tasks, status.gpus[1].tasks);
  EXPECT_EQ(ForegroundSlowdowns(status).at("default/cnn"), 1.8);
}

TEST(ProgressDisplay, LinesCarryTheClocksWallTimeAndRepeatAJobAfterATenthOrTenSeconds) {
  testing::SimulatedClock clock;
  std::ostringstream out;
  ProgressDisplay display(out, /*tty=*/false, clock);
  JobView job;
  job.name = "default/fg";
  job.steps = 100;
  display.Update({job});
  job.state = "training";
  job.step = 1;
  display.Update({job});  // a new state
  job.step = 2;
  display.Update({job});  // neither a tenth further nor 10 s later: not shown
  clock.Advance(std::chrono::seconds(10));
  display.Update({job});
  job.step = 12;
  display.Update({job});  // a tenth of the steps further
  const std::string start = LocalClockTime(testing::kSimulatedWallStart);
  const std::string later = LocalClockTime(testing::kSimulatedWallStart + std::chrono::seconds(10));
  EXPECT_THAT(Lines(out.str()),
              ElementsAre(StartsWith(start + " default/fg (foreground) starting step 0/100"),
                          StartsWith(start + " default/fg (foreground) training step 1/100"),
                          StartsWith(later + " default/fg (foreground) training step 2/100"),
                          StartsWith(later + " default/fg (foreground) training step 12/100")));
}

TEST(ProgressDisplay, BarsAreRedrawnAtMostTenTimesASecondOfTheClock) {
  testing::SimulatedClock clock;
  std::ostringstream out;
  ProgressDisplay display(out, /*tty=*/true, clock);
  JobView job;
  job.name = "default/fg";
  job.steps = 10;
  display.Update({job});
  EXPECT_THAT(out.str(), HasSubstr("default/fg"));
  out.str("");
  clock.Advance(std::chrono::milliseconds(99));
  display.Update({job});
  EXPECT_EQ(out.str(), "");
  clock.Advance(std::chrono::milliseconds(1));
  display.Update({job});
  EXPECT_THAT(out.str(), HasSubstr("default/fg"));
  // A note moves the bars: the next update draws them again at once.
  display.Note("agent: a note");
  out.str("");
  display.Update({job});
  EXPECT_THAT(out.str(), HasSubstr("default/fg"));
}

LocalJob Job(api::Role role, std::int64_t gpus) {
  LocalJob job;
  job.job.spec.role = role;
  job.key = role == api::Role::kBackground ? "default/bg" : "default/fg";
  job.plan.plan.gpus = gpus;
  return job;
}

TEST(AssignGpus, ForegroundJobsGetTheirOwnGpusAndBackgroundJobsShareThem) {
  std::vector<LocalJob> jobs = {Job(api::Role::kForeground, 2), Job(api::Role::kBackground, 1),
                                Job(api::Role::kForeground, 1), Job(api::Role::kBackground, 1),
                                Job(api::Role::kBackground, 1), Job(api::Role::kBackground, 1)};
  std::uint32_t gpus = 0;
  ASSERT_OK(AssignGpus(jobs, &gpus));
  EXPECT_EQ(gpus, 3u);
  EXPECT_THAT(jobs[0].gpus, ElementsAre(0, 1));
  EXPECT_THAT(jobs[2].gpus, ElementsAre(2));
  // Background jobs go round-robin over the foreground's GPUs.
  EXPECT_THAT(jobs[1].gpus, ElementsAre(0));
  EXPECT_THAT(jobs[3].gpus, ElementsAre(1));
  EXPECT_THAT(jobs[4].gpus, ElementsAre(2));
  EXPECT_THAT(jobs[5].gpus, ElementsAre(0));

  std::vector<LocalJob> too_many = {Job(api::Role::kForeground, 4)};
  gpus = 2;
  EXPECT_THAT(AssignGpus(too_many, &gpus),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("TrainingJob default/fg needs 4 GPUs")));
  std::vector<LocalJob> alone = {Job(api::Role::kBackground, 1)};
  gpus = 0;
  ASSERT_OK(AssignGpus(alone, &gpus));
  EXPECT_EQ(gpus, 1u);
}

}  // namespace
}  // namespace wavepool::local
