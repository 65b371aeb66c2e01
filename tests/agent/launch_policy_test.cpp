#include "wavepool/agent/launch_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

TEST(LaunchPolicy, DefaultsAreDeepPoolsDepths) {
  const PacingConfig config;
  EXPECT_EQ(CreditLimit(config, Role::kForeground, 0, true), 2u);
  EXPECT_EQ(CreditLimit(config, Role::kBackground, 0, true), 1u);
  EXPECT_EQ(CreditLimit(config, Role::kBackground, 0, false), 4u);  // alone on the GPU
}

TEST(LaunchPolicy, JobsMayAskForTheirOwnLimitsWithinBounds) {
  const PacingConfig config;
  EXPECT_EQ(CreditLimit(config, Role::kForeground, 3, true), 3u);
  EXPECT_EQ(CreditLimit(config, Role::kForeground, 1000, true), kMaxCreditLimit);
  // A background job may ask for less than the shared-GPU depth, never more.
  EXPECT_EQ(CreditLimit(config, Role::kBackground, 8, true), 1u);
  EXPECT_EQ(CreditLimit(config, Role::kBackground, 2, false), 2u);
  EXPECT_EQ(CreditLimit(config, Role::kBackground, 8, false), 4u);
}

TEST(LaunchPolicy, PrioritiesFavourTheForeground) {
  EXPECT_EQ(StreamPriorityFor(Role::kForeground), StreamPriority::kHigh);
  EXPECT_EQ(StreamPriorityFor(Role::kBackground), StreamPriority::kLow);
  EXPECT_EQ(MpsClientPriority(Role::kForeground), 0u);
  EXPECT_EQ(MpsClientPriority(Role::kBackground), 1u);
}

TEST(LaunchPolicy, RejectsLimitsOutOfRange) {
  PacingConfig config;
  EXPECT_OK(Validate(config));
  config.background_credits = 0;
  EXPECT_THAT(Validate(config), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("background_credits: must be in [1, 64]")));
  config.background_credits = 1;
  config.foreground_credits = 65;
  EXPECT_THAT(Validate(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 65")));
}

}  // namespace
}  // namespace wavepool::agent
