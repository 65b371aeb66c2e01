// The clock's waits, real and simulated: a wait ends when its state changes or its deadline comes,
// whichever is first.
#include "wavepool/base/clock.h"

#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

namespace wavepool {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename A, typename B, typename = void>
struct CanSubtract : std::false_type {};
template <typename A, typename B>
struct CanSubtract<A, B, std::void_t<decltype(std::declval<A>() - std::declval<B>())>>
    : std::true_type {};

// Monotonic and wall time do not mix, and an integer is not a time.
static_assert(CanSubtract<MonotonicTime, MonotonicTime>::value);
static_assert(!CanSubtract<MonotonicTime, WallTime>::value);
static_assert(!CanSubtract<WallTime, MonotonicTime>::value);
static_assert(!std::is_convertible_v<std::int64_t, MonotonicTime>);
static_assert(!std::is_convertible_v<MonotonicTime, WallTime>);
static_assert(ToMonotonicNanos(MonotonicTimeFromNanos(1'234'567'890)) == 1'234'567'890);

TEST(RealClock, WallNowIsTheSystemClock) {
  const WallTime before = std::chrono::system_clock::now();
  const WallTime wall = RealClock().WallNow();
  const WallTime after = std::chrono::system_clock::now();
  EXPECT_LE(before, wall);
  EXPECT_LE(wall, after);
}

TEST(SimulatedClock, AdvancesWallTimeWithMonotonicTime) {
  testing::SimulatedClock clock(MonotonicTime(seconds(7)));
  EXPECT_EQ(clock.WallNow(), testing::kSimulatedWallStart);
  clock.Advance(milliseconds(1500));
  EXPECT_EQ(clock.Now(), MonotonicTime(milliseconds(8500)));
  EXPECT_EQ(clock.WallNow(), testing::kSimulatedWallStart + milliseconds(1500));
}

TEST(RealClock, ReadingsNeverDecrease) {
  Clock& clock = RealClock();
  MonotonicTime previous = clock.Now();
  for (int i = 0; i < 1000; ++i) {
    const MonotonicTime now = clock.Now();
    EXPECT_GE(now, previous);
    previous = now;
  }
}

TEST(RealClock, WaitUntilEndsWhenTheStateChanges) {
  Clock& clock = RealClock();
  absl::Mutex mu;
  bool stop = false;  // guarded by mu
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(20));
    absl::MutexLock lock(&mu);
    stop = true;
  });
  {
    absl::MutexLock lock(&mu);
    // An hour's deadline: only the state change can end this wait.
    EXPECT_TRUE(clock.WaitUntil(mu, clock.Now() + seconds(3600), absl::Condition(&stop)));
  }
  stopper.join();
}

TEST(RealClock, WaitUntilEndsAtTheDeadline) {
  Clock& clock = RealClock();
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  const MonotonicTime deadline = clock.Now() + milliseconds(10);
  const bool never = false;
  EXPECT_FALSE(clock.WaitUntil(mu, deadline, absl::Condition(&never)));
  EXPECT_GE(clock.Now(), deadline);
}

TEST(SimulatedClock, WaitUntilEndsOnlyWhenTheTestAdvancesTime) {
  testing::SimulatedClock clock;
  absl::Mutex mu;
  const bool never = false;
  bool result = true;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.WaitUntil(mu, MonotonicTime(seconds(15)), absl::Condition(&never));
  });
  clock.WaitForSleepers(1);
  clock.Advance(seconds(14));
  std::this_thread::sleep_for(milliseconds(20));  // it still waits: 14 s < 15 s
  clock.WaitForSleepers(1);
  clock.Advance(seconds(1));
  waiter.join();
  EXPECT_FALSE(result);
  EXPECT_EQ(clock.Now(), MonotonicTime(seconds(15)));
}

TEST(SimulatedClock, WaitUntilEndsWhenTheStateChangesWithoutTimeMoving) {
  testing::SimulatedClock clock;
  absl::Mutex mu;
  bool stop = false;  // guarded by mu
  bool result = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.WaitUntil(mu, MonotonicTime(seconds(15)), absl::Condition(&stop));
  });
  clock.WaitForSleepers(1);
  {
    absl::MutexLock lock(&mu);
    stop = true;
  }
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.Now(), MonotonicTime());
}

}  // namespace
}  // namespace wavepool
