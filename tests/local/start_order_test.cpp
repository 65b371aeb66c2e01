// The order a local run starts its jobs in: a background job waits until every foreground rank on
// its GPU is a foreground task of the agent there, or until that foreground's workers exited.
#include "start_order.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavepool::local {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

LocalJob Job(const std::string& key, api::Role role, std::vector<std::uint32_t> gpus) {
  LocalJob job;
  job.job.spec.role = role;
  job.key = key;
  job.plan.plan.gpus = static_cast<std::int64_t>(gpus.size());
  job.gpus = std::move(gpus);
  return job;
}

// An agent status of `gpus` GPUs with each (gpu, role, pid) of `tasks`.
struct Task {
  std::uint32_t gpu;
  agent::Role role;
  pid_t pid;
};
agent::AgentStatus Status(std::uint32_t gpus, const std::vector<Task>& tasks) {
  agent::AgentStatus status;
  for (std::uint32_t i = 0; i < gpus; ++i) {
    agent::GpuStatus gpu;
    gpu.info.index = i;
    status.gpus.push_back(gpu);
  }
  for (const Task& t : tasks) {
    agent::TaskStatus task;
    task.role = t.role;
    task.pid = t.pid;
    status.gpus[t.gpu].tasks.push_back(task);
  }
  return status;
}

JobWorkers Started(std::vector<pid_t> pids) {
  JobWorkers workers;
  workers.pids = std::move(pids);
  return workers;
}

TEST(StartOrder, ABackgroundJobWaitsForTheForegroundJobWithARankOnItsGpu) {
  const std::vector<LocalJob> jobs = {Job("team-a/wide", api::Role::kForeground, {0, 1}),
                                      Job("team-a/narrow", api::Role::kForeground, {2}),
                                      Job("team-a/sweep", api::Role::kBackground, {1}),
                                      Job("team-a/other", api::Role::kBackground, {2})};
  EXPECT_THAT(ForegroundsSharingGpus(jobs, 2), ElementsAre(0));
  EXPECT_THAT(ForegroundsSharingGpus(jobs, 3), ElementsAre(1));
}

TEST(StartOrder, ABackgroundJobWithNoForegroundOnItsGpuStartsAtOnce) {
  const std::vector<LocalJob> jobs = {Job("team-a/train", api::Role::kForeground, {1}),
                                      Job("team-a/sweep", api::Role::kBackground, {0})};
  EXPECT_THAT(ForegroundsSharingGpus(jobs, 1), IsEmpty());
  const std::vector<JobWorkers> workers = {JobWorkers{}, JobWorkers{}};
  const std::vector<AwaitedForeground> awaited = AwaitForegrounds(jobs, workers, 1, Status(2, {}));
  EXPECT_THAT(awaited, IsEmpty());
  EXPECT_TRUE(MayStart(awaited));
  // Alone on the node, too.
  EXPECT_THAT(ForegroundsSharingGpus({Job("team-a/sweep", api::Role::kBackground, {0})}, 0),
              IsEmpty());
}

TEST(StartOrder, ItStartsOnceTheForegroundRankOnItsGpuIsAForegroundTaskThere) {
  const std::vector<LocalJob> jobs = {Job("team-a/train", api::Role::kForeground, {0, 1}),
                                      Job("team-a/sweep", api::Role::kBackground, {1})};
  const auto progress = [&](const std::vector<JobWorkers>& workers,
                            const agent::AgentStatus& status) {
    const std::vector<AwaitedForeground> awaited = AwaitForegrounds(jobs, workers, 1, status);
    if (awaited.size() != 1 || awaited[0].job != 0) {
      ADD_FAILURE() << "awaits " << awaited.size() << " foreground jobs, not team-a/train alone";
      return ForegroundProgress::kNotRegistered;
    }
    EXPECT_EQ(MayStart(awaited), awaited[0].progress != ForegroundProgress::kNotRegistered);
    return awaited[0].progress;
  };
  // The foreground's workers have not started: nothing is registered.
  EXPECT_EQ(progress({JobWorkers{}, JobWorkers{}}, Status(2, {})),
            ForegroundProgress::kNotRegistered);
  const std::vector<JobWorkers> workers = {Started({100, 101}), JobWorkers{}};
  // Rank 0 registered, but it is on GPU 0: rank 1 is the one on the background's GPU.
  EXPECT_EQ(progress(workers, Status(2, {{0, agent::Role::kForeground, 100}})),
            ForegroundProgress::kNotRegistered);
  // Rank 1's pid, but as a background task, or on another GPU: not the foreground training there.
  EXPECT_EQ(progress(workers, Status(2, {{1, agent::Role::kBackground, 101}})),
            ForegroundProgress::kNotRegistered);
  EXPECT_EQ(progress(workers, Status(2, {{0, agent::Role::kForeground, 101}})),
            ForegroundProgress::kNotRegistered);
  // Another process on the GPU: not this job's.
  EXPECT_EQ(progress(workers, Status(2, {{1, agent::Role::kForeground, 555}})),
            ForegroundProgress::kNotRegistered);
  const agent::AgentStatus registered = Status(2, {{1, agent::Role::kForeground, 101}});
  EXPECT_EQ(progress(workers, registered), ForegroundProgress::kRegistered);
  EXPECT_EQ(StartNote(jobs, workers, 1, AwaitForegrounds(jobs, workers, 1, registered)),
            "team-a/sweep starts after waiting for the foreground on GPU 1: team-a/train "
            "registered with the agent");
}

TEST(StartOrder, ItStartsWhenTheForegroundsWorkersExitedBeforeTheyRegistered) {
  const std::vector<LocalJob> jobs = {Job("team-a/train", api::Role::kForeground, {0, 1}),
                                      Job("team-a/sweep", api::Role::kBackground, {0})};
  JobWorkers failed = Started({100, 101});
  failed.exited = true;
  failed.failed = true;
  std::vector<JobWorkers> workers = {failed, JobWorkers{}};
  std::vector<AwaitedForeground> awaited = AwaitForegrounds(jobs, workers, 1, Status(2, {}));
  ASSERT_EQ(awaited.size(), 1u);
  EXPECT_EQ(awaited[0].progress, ForegroundProgress::kExited);
  EXPECT_TRUE(MayStart(awaited));
  EXPECT_EQ(StartNote(jobs, workers, 1, awaited),
            "team-a/sweep starts after waiting for the foreground on GPU 0: team-a/train failed "
            "before it registered with the agent; the background trains without it");

  // Done between two reads of the agent: it trained, it was not seen.
  workers[0].failed = false;
  awaited = AwaitForegrounds(jobs, workers, 1, Status(2, {}));
  EXPECT_TRUE(MayStart(awaited));
  EXPECT_EQ(StartNote(jobs, workers, 1, awaited),
            "team-a/sweep starts after waiting for the foreground on GPU 0: team-a/train "
            "finished before it was seen registered");

  // Exited, and still listed by the agent (its socket not yet closed): it did register.
  awaited = AwaitForegrounds(jobs, workers, 1, Status(2, {{0, agent::Role::kForeground, 100}}));
  ASSERT_EQ(awaited.size(), 1u);
  EXPECT_EQ(awaited[0].progress, ForegroundProgress::kRegistered);
}

}  // namespace
}  // namespace wavepool::local
