// A Clock that moves only when the test advances it (envoy's simulated time, in small).
//   SimulatedClock clock;           // Now() == 0
//   clock.Advance(std::chrono::milliseconds(5));
// SleepFor and WaitUntil block the calling thread until another thread advances the clock far
// enough (or, for WaitUntil, the awaited state changes), so that code under test that waits is
// driven by the test, never by wall time.
#ifndef WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_
#define WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "wavepool/base/clock.h"

namespace wavepool::testing {

// Safe for concurrent use.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(MonotonicNanos start = 0) : now_(start) {}

  MonotonicNanos Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }

  void SleepFor(std::chrono::nanoseconds d) override {
    std::unique_lock<std::mutex> lock(mu_);
    const MonotonicNanos until = now_ + d.count();
    ++sleepers_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return now_ >= until; });
    --sleepers_;
  }

  // The caller's condition variable is not ours to notify when time moves (Advance would need
  // the caller's mutex), so the wait re-checks the clock every millisecond of real time.
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 MonotonicNanos deadline, const std::function<bool()>& done) override {
    AddSleepers(1);
    bool result = false;
    for (;;) {
      if (done()) {
        result = true;
        break;
      }
      if (Now() >= deadline) break;
      cv.wait_for(lock, std::chrono::milliseconds(1));
    }
    AddSleepers(-1);
    return result;
  }

  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d.count();
    changed_.notify_all();
  }

  // Blocks until `n` threads are sleeping or waiting on the clock (so that a test can advance
  // past them).
  void WaitForSleepers(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return sleepers_ >= n; });
  }

 private:
  void AddSleepers(int delta) {
    std::lock_guard<std::mutex> lock(mu_);
    sleepers_ += delta;
    changed_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable changed_;
  MonotonicNanos now_;
  int sleepers_ = 0;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_
