// Time behind an interface, so that tests advance a simulated clock instead of sleeping
// (tests/support/simulated_clock.h). The agent, the Kubernetes client and the controller take a
// Clock wherever they wait or time something.
#ifndef WAVEPOOL_BASE_CLOCK_H_
#define WAVEPOOL_BASE_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace wavepool {

// Monotonic nanoseconds since an arbitrary epoch that every process on the host shares
// (CLOCK_MONOTONIC), as written into the agent's gate heartbeats.
using MonotonicNanos = std::int64_t;

// A Clock is safe for concurrent use; its readings never decrease.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual MonotonicNanos Now() const = 0;

  // Blocks the calling thread for `d` (a simulated clock waits until the test advances it).
  virtual void SleepFor(std::chrono::nanoseconds d) = 0;

  // Waits until `done` holds or the clock reaches `deadline`; returns whether `done` held. `mu`
  // guards what `done` reads and is held on entry and on return (it is released while waiting);
  // whoever changes that state holds `mu`, and absl::Mutex re-evaluates `done` whenever `mu` is
  // released, so no notification is needed. This is how a loop sleeps until its next timer and
  // still stops at once when told to.
  virtual bool WaitUntil(absl::Mutex& mu, MonotonicNanos deadline, const absl::Condition& done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};
using ClockPtr = std::unique_ptr<Clock>;

// CLOCK_MONOTONIC, nanosleep and mutex-condition timeouts.
ClockPtr MakeRealClock();

// The process-wide real clock, for callers that take a Clock& and have none of their own.
Clock& RealClock();

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_CLOCK_H_
