// A Clock that moves only when the test advances it (envoy's simulated time, in small).
//   SimulatedClock clock;           // Now() == MonotonicTime(), WallNow() == kSimulatedWallStart
//   clock.Advance(std::chrono::milliseconds(5));  // both 5 ms later
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

// The wall time a SimulatedClock starts at unless told otherwise: 2026-05-01T10:00:00Z.
inline constexpr WallTime kSimulatedWallStart{std::chrono::seconds(1777629600)};

// Safe for concurrent use.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(MonotonicTime start = MonotonicTime(),
                          WallTime wall_start = kSimulatedWallStart)
      : start_(start), wall_start_(wall_start), now_(start) {}

  MonotonicTime Now() const override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  // Moves with Now(): wall_start plus the time advanced since construction.
  WallTime WallNow() const override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return wall_start_ + std::chrono::duration_cast<WallTime::duration>(now_ - start_);
  }

  void SleepFor(std::chrono::nanoseconds d) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const MonotonicTime until = now_ + d;
    ++sleepers_;
    const auto reached = [this, until]()
                             ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return now_ >= until; };
    mu_.Await(absl::Condition(&reached));
    --sleepers_;
  }

  // Advance does not hold the caller's mutex, so nothing re-evaluates `done` when time moves: the
  // wait re-checks the clock every millisecond of real time.
  bool WaitUntil(absl::Mutex& mu, MonotonicTime deadline, const absl::Condition& done) override
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
    now_ += d;
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

  const MonotonicTime start_;
  const WallTime wall_start_;
  mutable absl::Mutex mu_;
  MonotonicTime now_ ABSL_GUARDED_BY(mu_);
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_SIMULATED_CLOCK_H_
