// The pieces of local mode that need no process: reading the workers' progress lines and giving
// the jobs GPUs.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "local_jobs.h"
#include "progress.h"
#include "tests/support/status_matchers.h"

namespace wavepool::local {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

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
