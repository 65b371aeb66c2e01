#include "tests/support/cluster/wall_time.h"

#include "wavepool/api/object_meta.h"

namespace wavepool::testing {

WallTime::WallTime(Clock* clock, std::chrono::system_clock::time_point start)
    : clock_(clock), start_(start), clock_start_(clock->Now()) {}

std::chrono::system_clock::time_point WallTime::Now() const {
  const std::chrono::nanoseconds elapsed = clock_->Now() - clock_start_;
  return start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed);
}

std::string WallTime::Rfc3339() const { return api::FormatRfc3339(Now()); }

}  // namespace wavepool::testing
