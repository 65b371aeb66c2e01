// Durations that planning, cost models, reports and metrics compute with: fractional seconds.
#ifndef WAVEPOOL_BASE_SECONDS_H_
#define WAVEPOOL_BASE_SECONDS_H_

#include <chrono>

namespace wavepool {

// A time span in seconds as a double-precision std::chrono duration: converts implicitly from
// every std::chrono duration (`Seconds d = steady_clock::now() - start;`) and back only through
// std::chrono::duration_cast, so a unit is never lost. For timestamps and waits, which must not
// round, use the integer durations of <chrono> and MonotonicTime (clock.h).
using Seconds = std::chrono::duration<double>;

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_SECONDS_H_
