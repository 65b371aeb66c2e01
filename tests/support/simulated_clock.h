// A Clock that moves only when the test advances it (envoy's simulated time, in small).
//   SimulatedClock clock;           // Now() == 0
//   clock.Advance(std::chrono::milliseconds(5));
// SleepFor and WaitUntil block the calling thread until another thread advances the clock far
// enough (or, for WaitUntil, the awaited state changes), so that code under test that waits is
// driven by the test, never by wall time.
#ifndef WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_
#define WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "wavepool/base/clock.h"

namespace wavepool::testing {

// Safe for concurrent use.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(MonotonicNanos start = 0) : now_(start) {}

  MonotonicNanos Now() const override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  void SleepFor(std::chrono::nanoseconds d) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const MonotonicNanos until = now_ + d.count();
    ++sleepers_;
    const auto reached = [this, until]()
                             ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return now_ >= until; };
    mu_.Await(absl::Condition(&reached));
    --sleepers_;
  }

  // Advance does not hold the caller's mutex, so nothing re-evaluates `done` when time moves: the
  // wait re-checks the clock every millisecond of real time.
  bool WaitUntil(absl::Mutex& mu, MonotonicNanos deadline, const absl::Condition& done) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) ABSL_LOCKS_EXCLUDED(mu_) {
    AddSleepers(1);
    bool result = false;
    for (;;) {
      if (done.Eval()) {
        result = true;
        break;
      }
      if (Now() >= deadline) break;
      mu.AwaitWithTimeout(done, absl::Milliseconds(1));
    }
    AddSleepers(-1);
    return result;
  }

  void Advance(std::chrono::nanoseconds d) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    now_ += d.count();
  }

  // Blocks until `n` threads are sleeping or waiting on the clock (so that a test can advance
  // past them).
  void WaitForSleepers(int n) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return sleepers_ >= n; };
    mu_.Await(absl::Condition(&enough));
  }

 private:
  void AddSleepers(int delta) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    sleepers_ += delta;
  }

  mutable absl::Mutex mu_;
  MonotonicNanos now_ ABSL_GUARDED_BY(mu_);
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_
