// The clock's waits, real and simulated: a wait ends when its state changes or its deadline comes,
// whichever is first.
#include "wavepool/base/clock.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

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
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(20));
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  // An hour's deadline: only the state change can end this wait.
  EXPECT_TRUE(clock.WaitUntil(lock, cv, clock.Now() + nanoseconds(seconds(3600)).count(),
                              [&] { return stop; }));
  lock.unlock();
  stopper.join();
}

TEST(RealClock, WaitUntilEndsAtTheDeadline) {
  Clock& clock = RealClock();
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  const MonotonicNanos deadline = clock.Now() + nanoseconds(milliseconds(10)).count();
  EXPECT_FALSE(clock.WaitUntil(lock, cv, deadline, [] { return false; }));
  EXPECT_GE(clock.Now(), deadline);
}

TEST(SimulatedClock, WaitUntilEndsOnlyWhenTheTestAdvancesTime) {
  testing::SimulatedClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool result = true;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    result = clock.WaitUntil(lock, cv, nanoseconds(seconds(15)).count(), [] { return false; });
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
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool result = false;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    result = clock.WaitUntil(lock, cv, nanoseconds(seconds(15)).count(), [&] { return stop; });
  });
  clock.WaitForSleepers(1);
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    cv.notify_all();
  }
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.Now(), 0);
}

}  // namespace
}  // namespace wavepool
