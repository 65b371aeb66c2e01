// A Clock that moves only when the test advances it (envoy's simulated time, in small).
//   SimulatedClock clock;           // Now() == 0
//   clock.Advance(std::chrono::milliseconds(5));
// SleepFor blocks the calling thread until another thread advances the clock far enough, so that
// code under test that sleeps is driven by the test, never by wall time.
#ifndef WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_
#define WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "wavepool/agent/clock.h"

namespace wavepool::testing {

// Safe for concurrent use.
class SimulatedClock final : public agent::Clock {
 public:
  explicit SimulatedClock(agent::MonotonicNanos start = 0) : now_(start) {}

  agent::MonotonicNanos Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }

  void SleepFor(std::chrono::nanoseconds d) override {
    std::unique_lock<std::mutex> lock(mu_);
    const agent::MonotonicNanos until = now_ + d.count();
    ++sleepers_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return now_ >= until; });
    --sleepers_;
  }

  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d.count();
    changed_.notify_all();
  }

  // Blocks until `n` threads are sleeping on the clock (so a test can advance past them).
  void WaitForSleepers(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return sleepers_ >= n; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  agent::MonotonicNanos now_;
  int sleepers_ = 0;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_
