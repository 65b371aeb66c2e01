#include "wavepool/base/clock.h"

#include <time.h>

#include <thread>

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

  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 MonotonicNanos deadline, const std::function<bool()>& done) override {
    // libstdc++'s steady_clock is CLOCK_MONOTONIC, the epoch Now() reads.
    const auto until = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline));
    return cv.wait_until(lock, until, done);
  }
};

}  // namespace

ClockPtr MakeRealClock() { return std::make_unique<MonotonicClock>(); }

Clock& RealClock() {
  static MonotonicClock clock;
  return clock;
}

}  // namespace wavepool
