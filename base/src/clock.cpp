#include "wavepool/base/clock.h"

#include <time.h>

#include <thread>

#include "absl/time/time.h"

namespace wavepool {
namespace {

class MonotonicClock final : public Clock {
 public:
  MonotonicTime Now() const override {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return MonotonicTime(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }

  WallTime WallNow() const override { return std::chrono::system_clock::now(); }

  void SleepFor(std::chrono::nanoseconds d) override { std::this_thread::sleep_for(d); }

  bool WaitUntil(absl::Mutex& mu, MonotonicTime deadline, const absl::Condition& done) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    // absl::Mutex times its waits on the wall clock, so a wait can end early if the wall clock
    // steps forward: the deadline is re-checked against CLOCK_MONOTONIC until it really passed.
    for (;;) {
      const MonotonicTime now = Now();
      if (now >= deadline) return done.Eval();
      if (mu.AwaitWithTimeout(done, absl::FromChrono(deadline - now))) return true;
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
