// Time behind an interface, so that tests advance a simulated clock instead of sleeping
// (tests/support/simulated_clock.h). The agent, the Kubernetes client and the controller take a
// Clock wherever they wait, time something or stamp a wall time.
//
// Time is a type: a MonotonicTime plus a std::chrono duration is a MonotonicTime, the difference
// of two is a duration, and a MonotonicTime never mixes with a WallTime (they have different
// clocks, so `monotonic - wall` does not compile). Integers appear only where a boundary stores
// them (the gate's heartbeats in shared memory, protocol messages), converted there with
// ToMonotonicNanos / MonotonicTimeFromNanos.
#ifndef WAVEPOOL_BASE_CLOCK_H_
#define WAVEPOOL_BASE_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <ratio>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace wavepool {

// The clock of MonotonicTime: CLOCK_MONOTONIC, whose arbitrary epoch every process on the host
// shares. A tag only (it has no now()): readings come from a Clock, so that tests can simulate it.
struct MonotonicClockTag {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<MonotonicClockTag, duration>;
  static constexpr bool is_steady = true;
};

// A point on CLOCK_MONOTONIC, to the nanosecond. Value-initialized, it is the clock's epoch.
using MonotonicTime = MonotonicClockTag::time_point;

// A point in civil (UTC) time, for timestamps that leave the process (RFC 3339 in the Kubernetes
// API, the heartbeat metric). Never used to measure an interval: it can step.
using WallTime = std::chrono::system_clock::time_point;

// The integer form of a MonotonicTime, nanoseconds since CLOCK_MONOTONIC's epoch, for the
// boundaries that store integers (shared memory, the agent protocol).
constexpr std::int64_t ToMonotonicNanos(MonotonicTime time) {
  return time.time_since_epoch().count();
}
constexpr MonotonicTime MonotonicTimeFromNanos(std::int64_t nanos) {
  return MonotonicTime(std::chrono::nanoseconds(nanos));
}

// A Clock is safe for concurrent use; its monotonic readings never decrease.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual MonotonicTime Now() const = 0;

  // The wall time that goes with Now() (a simulated clock advances both together).
  virtual WallTime WallNow() const = 0;

  // Blocks the calling thread for `d` (a simulated clock waits until the test advances it).
  virtual void SleepFor(std::chrono::nanoseconds d) = 0;

  // Waits until `done` holds or the clock reaches `deadline`; returns whether `done` held. `mu`
  // guards what `done` reads and is held on entry and on return (it is released while waiting);
  // whoever changes that state holds `mu`, and absl::Mutex re-evaluates `done` whenever `mu` is
  // released, so no notification is needed. This is how a loop sleeps until its next timer and
  // still stops at once when told to.
  virtual bool WaitUntil(absl::Mutex& mu, MonotonicTime deadline, const absl::Condition& done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};
using ClockPtr = std::unique_ptr<Clock>;

// CLOCK_MONOTONIC and CLOCK_REALTIME, nanosleep and mutex-condition timeouts.
ClockPtr MakeRealClock();

// The process-wide real clock, for callers that take a Clock& and have none of their own.
Clock& RealClock();

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_CLOCK_H_
