#include "wavepool/kube/rate_limiter.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

namespace wavepool::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ItemExponentialFailureRateLimiter, DoublesFromFiveMillisecondsPerKey) {
  ItemExponentialFailureRateLimiter limiter(milliseconds(5), seconds(1000));
  // 5 ms * 2^n for the n-th failure.
  EXPECT_EQ(limiter.When("a"), milliseconds(5));
  EXPECT_EQ(limiter.When("a"), milliseconds(10));
  EXPECT_EQ(limiter.When("a"), milliseconds(20));
  EXPECT_EQ(limiter.When("a"), milliseconds(40));
  EXPECT_EQ(limiter.NumRequeues("a"), 4);
  // Another key starts over.
  EXPECT_EQ(limiter.When("b"), milliseconds(5));
  EXPECT_EQ(limiter.NumRequeues("b"), 1);
}

TEST(ItemExponentialFailureRateLimiter, CapsAtMaxDelayAndNeverOverflows) {
  ItemExponentialFailureRateLimiter limiter(milliseconds(5), seconds(1000));
  // 5 ms * 2^17 = 655.36 s < 1000 s; 5 ms * 2^18 = 1310.72 s is capped to 1000 s.
  for (int i = 0; i < 17; ++i) limiter.When("a");
  EXPECT_EQ(limiter.When("a"), nanoseconds(655'360'000'000));
  EXPECT_EQ(limiter.When("a"), seconds(1000));
  // 2^200 would overflow any integer; the answer stays at the cap.
  for (int i = 0; i < 200; ++i) limiter.When("a");
  EXPECT_EQ(limiter.When("a"), seconds(1000));
}

TEST(ItemExponentialFailureRateLimiter, ForgetStartsTheKeyOver) {
  ItemExponentialFailureRateLimiter limiter(milliseconds(5), seconds(1000));
  limiter.When("a");
  limiter.When("a");
  limiter.Forget("a");
  EXPECT_EQ(limiter.NumRequeues("a"), 0);
  EXPECT_EQ(limiter.When("a"), milliseconds(5));
}

TEST(BucketRateLimiter, BurstIsFreeThenOneTokenPerTenthOfASecond) {
  testing::SimulatedClock clock;
  BucketRateLimiter limiter(clock, 10.0, 100);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(limiter.When("k" + std::to_string(i)), nanoseconds(0)) << "call " << i;
  }
  // 10 qps: the 101st call waits 1/10 s for its token, the 102nd 2/10 s.
  EXPECT_EQ(limiter.When("x"), milliseconds(100));
  EXPECT_EQ(limiter.When("y"), milliseconds(200));
  // After 300 ms three tokens were refilled, two of them already promised: 1 free -> 0 wait.
  clock.Advance(milliseconds(300));
  EXPECT_EQ(limiter.When("z"), nanoseconds(0));
  EXPECT_EQ(limiter.When("w"), milliseconds(100));
  EXPECT_EQ(limiter.NumRequeues("x"), 0);
}

TEST(BucketRateLimiter, RefillsNoFurtherThanTheBurst) {
  testing::SimulatedClock clock;
  BucketRateLimiter limiter(clock, 10.0, 2);
  clock.Advance(seconds(60));  // would be 600 tokens without the cap
  EXPECT_EQ(limiter.When("a"), nanoseconds(0));
  EXPECT_EQ(limiter.When("a"), nanoseconds(0));
  EXPECT_EQ(limiter.When("a"), milliseconds(100));
}

TEST(MaxOfRateLimiter, DefaultControllerLimiterTakesTheLongerDelay) {
  testing::SimulatedClock clock;
  RateLimiterPtr limiter = DefaultControllerRateLimiter(clock);
  // Per key 5 ms beats the bucket's 0 while the burst lasts.
  EXPECT_EQ(limiter->When("a"), milliseconds(5));
  EXPECT_EQ(limiter->When("a"), milliseconds(10));
  for (int i = 0; i < 98; ++i) limiter->When("k" + std::to_string(i));  // 100 tokens used
  // "b" fails for the first time (5 ms) but the bucket is empty: 100 ms wins.
  EXPECT_EQ(limiter->When("b"), milliseconds(100));
  EXPECT_EQ(limiter->NumRequeues("a"), 2);
  limiter->Forget("a");
  EXPECT_EQ(limiter->NumRequeues("a"), 0);
}

}  // namespace
}  // namespace wavepool::kube
