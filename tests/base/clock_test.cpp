// The clock's waits, real and simulated: a wait ends when its state changes or its deadline comes,
// whichever is first.
#include "wavepool/base/clock.h"

#include <chrono>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

namespace wavepool {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(RealClock, ReadingsNeverDecrease) {
  Clock& clock = RealClock();
  MonotonicNanos previous = clock.Now();
  for (int i = 0; i < 1000; ++i) {
    const MonotonicNanos now = clock.Now();
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
    EXPECT_TRUE(clock.WaitUntil(mu, clock.Now() + nanoseconds(seconds(3600)).count(),
                                absl::Condition(&stop)));
  }
  stopper.join();
}

TEST(RealClock, WaitUntilEndsAtTheDeadline) {
  Clock& clock = RealClock();
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  const MonotonicNanos deadline = clock.Now() + nanoseconds(milliseconds(10)).count();
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
    result = clock.WaitUntil(mu, nanoseconds(seconds(15)).count(), absl::Condition(&never));
  });
  clock.WaitForSleepers(1);
  clock.Advance(seconds(14));
  std::this_thread::sleep_for(milliseconds(20));  // it still waits: 14 s < 15 s
  clock.WaitForSleepers(1);
  clock.Advance(seconds(1));
  waiter.join();
  EXPECT_FALSE(result);
  EXPECT_EQ(clock.Now(), nanoseconds(seconds(15)).count());
}

TEST(SimulatedClock, WaitUntilEndsWhenTheStateChangesWithoutTimeMoving) {
  testing::SimulatedClock clock;
  absl::Mutex mu;
  bool stop = false;  // guarded by mu
  bool result = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.WaitUntil(mu, nanoseconds(seconds(15)).count(), absl::Condition(&stop));
  });
  clock.WaitForSleepers(1);
  {
    absl::MutexLock lock(&mu);
    stop = true;
  }
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.Now(), 0);
}

}  // namespace
}  // namespace wavepool
