#include "wavepool/base/clock.h"

#include <time.h>

#include <thread>

#include "absl/time/time.h"

namespace wavepool {
namespace {

class MonotonicClock final : public Clock {
 public:
  MonotonicNanos Now() const override {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<MonotonicNanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  void SleepFor(std::chrono::nanoseconds d) override { std::this_thread::sleep_for(d); }

  bool WaitUntil(absl::Mutex& mu, MonotonicNanos deadline, const absl::Condition& done) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    // absl::Mutex times its waits on the wall clock, so a wait can end early if the wall clock
    // steps forward: the deadline is re-checked against CLOCK_MONOTONIC until it really passed.
    for (;;) {
      const MonotonicNanos now = Now();
      if (now >= deadline) return done.Eval();
      if (mu.AwaitWithTimeout(done, absl::Nanoseconds(deadline - now))) return true;
    }
  }
};

}  // namespace

ClockPtr MakeRealClock() { return std::make_unique<MonotonicClock>(); }

Clock& RealClock() {
  static MonotonicClock clock;
  return clock;
}

}  // namespace wavepool
