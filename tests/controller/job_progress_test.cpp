// A job's progress read from the GPUNodes (controller/job_progress.h).
#include "wavepool/controller/job_progress.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace wavepool::controller {
namespace {

api::TrainingProgress Progress(std::int64_t step, double samples_per_second,
                               double iteration_seconds, double slowdown) {
  api::TrainingProgress p;
  p.step = step;
  p.samples_per_second = samples_per_second;
  p.iteration_seconds = iteration_seconds;
  p.foreground_slowdown = slowdown;
  return p;
}

api::GpuTask Task(const std::string& ns, const std::string& job, const std::string& pod,
                  std::optional<api::TrainingProgress> progress) {
  api::GpuTask task;
  task.namespace_ = ns;
  task.job = job;
  task.pod = pod;
  task.progress = progress;
  return task;
}

// A node whose GPU i holds gpu_tasks[i].
api::GpuNode Node(const std::string& name, std::vector<std::vector<api::GpuTask>> gpu_tasks) {
  api::GpuNode node;
  node.metadata.name = name;
  for (std::size_t i = 0; i < gpu_tasks.size(); ++i) {
    api::GpuStatus gpu;
    gpu.index = static_cast<std::int64_t>(i);
    gpu.tasks = std::move(gpu_tasks[i]);
    node.status.gpus.push_back(std::move(gpu));
  }
  return node;
}

const std::vector<std::string> kGang = {"vgg-g0-0", "vgg-g0-1", "vgg-g0-2"};

TEST(JobProgress, GangIsAsFarAsItsSlowestRankWithSummedThroughput) {
  const std::vector<api::GpuNode> nodes = {
      Node("a", {{Task("ns", "vgg", "vgg-g0-0", Progress(120, 100.0, 0.32, 1.05))},
                 {Task("ns", "vgg", "vgg-g0-1", Progress(118, 90.0, 0.35, 1.08))}}),
      Node("b", {{Task("ns", "vgg", "vgg-g0-2", Progress(121, 95.5, 0.30, 1.02))}}),
  };
  const std::optional<api::TrainingProgress> p = JobProgress(nodes, "ns", "vgg", kGang);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 118);                         // min(120, 118, 121)
  EXPECT_DOUBLE_EQ(p->samples_per_second, 285.5);  // 100 + 90 + 95.5
  EXPECT_DOUBLE_EQ(p->iteration_seconds, 0.35);    // max(0.32, 0.35, 0.30)
  EXPECT_DOUBLE_EQ(p->foreground_slowdown, 1.08);  // max(1.05, 1.08, 1.02)
}

TEST(JobProgress, PodOnSeveralGpusCountsOnce) {
  // vgg-g0-0 holds GPUs 0 and 1 and is listed under both: its 100 samples/s count once.
  const api::GpuTask rank0 = Task("ns", "vgg", "vgg-g0-0", Progress(50, 100.0, 0.5, 1.0));
  const std::vector<api::GpuNode> nodes = {
      Node("a", {{rank0}, {rank0}, {Task("ns", "vgg", "vgg-g0-1", Progress(49, 80.0, 0.6, 1.1))}}),
  };
  const std::optional<api::TrainingProgress> p = JobProgress(nodes, "ns", "vgg", kGang);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 49);
  EXPECT_DOUBLE_EQ(p->samples_per_second, 180.0);  // 100 + 80, not 100 + 100 + 80
}

TEST(JobProgress, TasksOfOtherPodsJobsAndNamespacesAreIgnored) {
  const std::vector<api::GpuNode> nodes = {
      Node("a", {{Task("ns", "vgg", "vgg-g0-0", Progress(200, 10.0, 0.1, 1.01)),
                  // An earlier gang's pod a slow agent still lists.
                  Task("ns", "vgg", "vgg-g1-0", Progress(5, 1000.0, 9.0, 3.0)),
                  // Another job, and the same job name in another namespace.
                  Task("ns", "resnet", "vgg-g0-1", Progress(1, 1000.0, 9.0, 3.0)),
                  Task("other", "vgg", "vgg-g0-1", Progress(1, 1000.0, 9.0, 3.0))}}),
  };
  const std::optional<api::TrainingProgress> p = JobProgress(nodes, "ns", "vgg", kGang);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 200);
  EXPECT_DOUBLE_EQ(p->samples_per_second, 10.0);
  EXPECT_DOUBLE_EQ(p->iteration_seconds, 0.1);
  EXPECT_DOUBLE_EQ(p->foreground_slowdown, 1.01);
}

TEST(JobProgress, RanksNotYetReportingDoNotHoldTheStepAtZero) {
  // Rank 1 has not finished an iteration yet: the job's progress is rank 0's.
  const std::vector<api::GpuNode> nodes = {
      Node("a", {{Task("ns", "vgg", "vgg-g0-0", Progress(3, 40.0, 0.8, 0))},
                 {Task("ns", "vgg", "vgg-g0-1", std::nullopt)}}),
  };
  const std::optional<api::TrainingProgress> p = JobProgress(nodes, "ns", "vgg", kGang);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 3);
  EXPECT_DOUBLE_EQ(p->foreground_slowdown, 0);
}

TEST(JobProgress, AdversarialHugeRatesSaturateInsteadOfOverflowingToInfinity) {
  // Each rate is finite, as the GPUNode codec requires, but their sum is not: JSON has no
  // infinity and the TrainingJob CRD would refuse the job's status carrying it.
  const double huge = std::numeric_limits<double>::max();
  const std::vector<api::GpuNode> nodes = {
      Node("a", {{Task("ns", "vgg", "vgg-g0-0", Progress(10, huge, 0.5, 1.0))},
                 {Task("ns", "vgg", "vgg-g0-1", Progress(11, huge, 0.4, 1.0))}}),
      Node("b", {{Task("ns", "vgg", "vgg-g0-2", Progress(12, 25.0, 0.3, 1.0))}}),
  };
  const std::optional<api::TrainingProgress> p = JobProgress(nodes, "ns", "vgg", kGang);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(std::isfinite(p->samples_per_second));
  EXPECT_EQ(p->samples_per_second, huge);
  EXPECT_EQ(p->step, 10);
}

TEST(JobProgress, NulloptWhenNoTaskOfTheJobReports) {
  EXPECT_FALSE(JobProgress({}, "ns", "vgg", kGang).has_value());
  const std::vector<api::GpuNode> nodes = {
      Node("a", {{Task("ns", "vgg", "vgg-g0-0", std::nullopt)},
                 {Task("ns", "resnet", "resnet-g0-0", Progress(7, 1.0, 1.0, 0))}}),
      Node("empty", {}),
  };
  EXPECT_FALSE(JobProgress(nodes, "ns", "vgg", kGang).has_value());
  EXPECT_FALSE(JobProgress(nodes, "ns", "resnet", {}).has_value());  // No current pods.
}

}  // namespace
}  // namespace wavepool::controller
