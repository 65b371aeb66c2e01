// Wall-clock timestamps that follow a Clock: the simulated cluster writes RFC 3339 times
// (startTime, heartbeatTime) that move when a test advances its simulated clock, so that tests can
// assert on them exactly.
//
// A plain value; safe for concurrent use (the Clock is).
#ifndef WAVEPOOL_TESTS_SUPPORT_CLUSTER_WALL_TIME_H_
#define WAVEPOOL_TESTS_SUPPORT_CLUSTER_WALL_TIME_H_

#include <chrono>
#include <string>

#include "wavepool/base/clock.h"

namespace wavepool::testing {

class ClockWallTime {
 public:
  // Now() is `start` when `clock` reads what it reads now, and moves with the clock.
  // REQUIRES: `clock` outlives this object.
  ClockWallTime(Clock* clock, WallTime start);

  WallTime Now() const;
  // RFC 3339 to the second, as metav1.Time: "2026-05-01T10:00:00Z".
  std::string Rfc3339() const;

 private:
  Clock* clock_;
  WallTime start_;
  MonotonicTime clock_start_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CLUSTER_WALL_TIME_H_
