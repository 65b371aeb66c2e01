#include "wavepool/agent/clock.h"

#include <time.h>

#include <thread>

namespace wavepool::agent {
namespace {

class RealClock final : public Clock {
 public:
  MonotonicNanos Now() const override {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<MonotonicNanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  void SleepFor(std::chrono::nanoseconds d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

ClockPtr MakeRealClock() { return std::make_unique<RealClock>(); }

}  // namespace wavepool::agent
