#include "tests/support/cluster/wall_time.h"

#include "wavepool/api/object_meta.h"

namespace wavepool::testing {

ClockWallTime::ClockWallTime(Clock* clock, WallTime start)
    : clock_(clock), start_(start), clock_start_(clock->Now()) {}

WallTime ClockWallTime::Now() const {
  const std::chrono::nanoseconds elapsed = clock_->Now() - clock_start_;
  return start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed);
}

std::string ClockWallTime::Rfc3339() const { return api::FormatRfc3339(Now()); }

}  // namespace wavepool::testing
