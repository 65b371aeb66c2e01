// Units shared by the planner's interfaces: time is std::chrono, sizes are bytes.
#ifndef WAVEPOOL_PLANNER_UNITS_H_
#define WAVEPOOL_PLANNER_UNITS_H_

#include <chrono>
#include <cstdint>

#include "wavepool/base/seconds.h"

namespace wavepool::planner {

// Wall-clock time as a double-precision std::chrono duration, in seconds (planner::Seconds is
// the same type as wavepool::Seconds).
using Seconds = wavepool::Seconds;

// Bytes of memory or of a message.
using Bytes = std::int64_t;

// Bytes per item of every tensor the planner sizes (fp32), the paradl-oracle paper's delta.
inline constexpr Bytes kBytesPerItem = 4;

constexpr Seconds Microseconds(double us) { return Seconds(us * 1e-6); }
constexpr double ToMicros(Seconds s) { return s.count() * 1e6; }
constexpr double ToMillis(Seconds s) { return s.count() * 1e3; }

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_UNITS_H_
