#include "wavepool/agent/slowdown_feedback.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::wavepool::testing::StatusIs;

OpGroupReport Group(std::uint32_t id, std::uint64_t ns, OpKind kind = OpKind::kCompute) {
  return {id, kind, ns};
}

TEST(SlowdownFeedback, LearnsSoloThenMarksAGroupSlowedPastTheLimit) {
  SlowdownFeedback feedback(1.10);
  std::vector<SensitivityChange> changes;
  // Solo: 100, 100, 100 us. Solo average stays 100 us.
  for (int i = 0; i < 3; ++i) feedback.Observe(Group(7, 100'000), false, &changes);
  EXPECT_THAT(changes, IsEmpty());
  EXPECT_DOUBLE_EQ(*feedback.SoloNanos(7), 100'000);
  // With the background: 105 us is within 1.10x: the average decays towards it
  // (100 + 0.1 * 5 = 100.5 us) and the group stays insensitive.
  feedback.Observe(Group(7, 105'000), true, &changes);
  EXPECT_THAT(changes, IsEmpty());
  // 130 us is past 110 us: the average jumps to 130 us at once, the group becomes sensitive.
  feedback.Observe(Group(7, 130'000), true, &changes);
  EXPECT_THAT(changes, ElementsAre(SensitivityChange{7, true}));
  EXPECT_TRUE(feedback.IsSensitive(7));
  EXPECT_EQ(feedback.SensitiveCount(), 1u);
}

TEST(SlowdownFeedback, SensitivityDecaysSlowlyOnceTheGroupRunsAlone) {
  SlowdownFeedback feedback(1.10);
  std::vector<SensitivityChange> changes;
  for (int i = 0; i < 3; ++i) feedback.Observe(Group(1, 100'000), false, &changes);
  feedback.Observe(Group(1, 200'000), true, &changes);  // average 200 us: sensitive
  changes.clear();
  // Protected by the pause, the group runs at its solo time again; the average decays by 10% of
  // the gap per observation: 200 -> 190 -> 181 -> ... and needs 22 observations to reach 110 us
  // (200 - 100 * (1 - 0.9^n) <= 110  <=>  0.9^n <= 0.1  <=>  n >= 21.9).
  int observations = 0;
  while (feedback.IsSensitive(1)) {
    feedback.Observe(Group(1, 100'000), true, &changes);
    ++observations;
    ASSERT_LT(observations, 100);
  }
  EXPECT_EQ(observations, 22);
  EXPECT_THAT(changes, ElementsAre(SensitivityChange{1, false}));
}

TEST(SlowdownFeedback, AllReducesAreAlwaysSensitiveAndLongReceivesNever) {
  SlowdownFeedback feedback(1.10);
  std::vector<SensitivityChange> changes;
  feedback.Observe(Group(3, 50'000, OpKind::kAllReduce), false, &changes);
  EXPECT_THAT(changes, ElementsAre(SensitivityChange{3, true}));
  changes.clear();
  for (int i = 0; i < 3; ++i) feedback.Observe(Group(4, 600'000, OpKind::kReceive), false, &changes);
  feedback.Observe(Group(4, 2'000'000, OpKind::kReceive), true, &changes);  // 3.3x, but > 500 us
  EXPECT_THAT(changes, IsEmpty());
  EXPECT_FALSE(feedback.IsSensitive(4));
}

TEST(SlowdownFeedback, WithoutSoloSamplesTheFastestDurationBoundsSolo) {
  // The background was there first: no solo sample ever. The fastest duration seen (100 us) is
  // the estimate, and a later 150 us is 1.5x of it.
  SlowdownFeedback feedback(1.10);
  std::vector<SensitivityChange> changes;
  feedback.Observe(Group(2, 100'000), true, &changes);
  EXPECT_DOUBLE_EQ(*feedback.SoloNanos(2), 100'000);
  feedback.Observe(Group(2, 150'000), true, &changes);
  EXPECT_TRUE(feedback.IsSensitive(2));
}

TEST(SlowdownFeedback, SlowdownRatioWeighsRecentGroupsByTime) {
  SlowdownFeedback feedback(1.10);
  std::vector<SensitivityChange> changes;
  EXPECT_DOUBLE_EQ(feedback.SlowdownRatio(), 1.0);  // nothing known
  for (int i = 0; i < 3; ++i) feedback.Observe(Group(1, 100'000), false, &changes);
  for (int i = 0; i < 3; ++i) feedback.Observe(Group(2, 300'000), false, &changes);
  EXPECT_DOUBLE_EQ(feedback.SlowdownRatio(), 1.0);
  EXPECT_DOUBLE_EQ(feedback.MedianSoloNanos(), 300'000);  // of {100, 300} us, the upper middle
  // One slowed group, 120 us for a 100 us solo: the ratio moves up, weighted by time.
  feedback.Observe(Group(1, 120'000), true, &changes);
  EXPECT_GT(feedback.SlowdownRatio(), 1.0);
  EXPECT_LT(feedback.SlowdownRatio(), 1.2);
}

TEST(SlowdownFeedback, RejectsBadConfigurations) {
  FeedbackConfig config;
  EXPECT_OK(Validate(config));
  config.decay_weight = 0;
  EXPECT_THAT(Validate(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("decay_weight: must be in (0, 1]")));
  config = FeedbackConfig{};
  config.default_max_slowdown = 0.9;
  EXPECT_THAT(Validate(config), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("default_max_slowdown: must be >= 1")));
}

TEST(BackgroundAdvisor, HalvesTheBatchOnlyAfterSustainedViolations) {
  BackgroundAdvisor advisor(/*patience=*/3);
  EXPECT_EQ(advisor.Check(1.3, 1.1, 32), 0u);
  EXPECT_EQ(advisor.Check(1.3, 1.1, 32), 0u);
  EXPECT_EQ(advisor.Check(1.05, 1.1, 32), 0u);  // back under: the count restarts
  EXPECT_EQ(advisor.Check(1.3, 1.1, 32), 0u);
  EXPECT_EQ(advisor.Check(1.3, 1.1, 32), 0u);
  EXPECT_EQ(advisor.Check(1.3, 1.1, 32), 16u);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(advisor.Check(1.3, 1.1, 32), 0u);
  EXPECT_EQ(advisor.Check(1.3, 1.1, 32), 8u);  // still over: halve the recommendation again
}

TEST(BackgroundAdvisor, NeverRecommendsBelowOne) {
  BackgroundAdvisor advisor(1);
  EXPECT_EQ(advisor.Check(2.0, 1.1, 2), 1u);
  EXPECT_EQ(advisor.Check(2.0, 1.1, 2), 0u);  // nothing smaller to say
  EXPECT_EQ(advisor.Check(2.0, 1.1, 1), 0u);
}

}  // namespace
}  // namespace wavepool::agent
