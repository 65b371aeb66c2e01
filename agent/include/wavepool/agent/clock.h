// The agent's notion of time, behind an interface so that tests advance a simulated clock instead
// of sleeping (tests/support/simulated_clock.h).
#ifndef WAVEPOOL_AGENT_CLOCK_H_
#define WAVEPOOL_AGENT_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <memory>

namespace wavepool::agent {

// Monotonic nanoseconds since an arbitrary epoch that every process on the host shares
// (CLOCK_MONOTONIC), as written into the gate's heartbeats.
using MonotonicNanos = std::int64_t;

// A Clock is safe for concurrent use; its readings never decrease.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonotonicNanos Now() const = 0;
  // Blocks the calling thread for `d` (a simulated clock returns at once after advancing, or
  // waits until the test advances it).
  virtual void SleepFor(std::chrono::nanoseconds d) = 0;
};
using ClockPtr = std::unique_ptr<Clock>;

// CLOCK_MONOTONIC and nanosleep.
ClockPtr MakeRealClock();

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLOCK_H_
