#include "wavepool/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace wavepool::kube {

using std::chrono::nanoseconds;

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(nanoseconds base_delay,
                                                                     nanoseconds max_delay)
    : base_delay_(base_delay), max_delay_(max_delay) {}

nanoseconds ItemExponentialFailureRateLimiter::When(const std::string& key) {
  int exponent = 0;
  {
    absl::MutexLock lock(&mu_);
    exponent = failures_[key]++;
  }
  // Computed in double so that 2^exponent cannot overflow; anything past max_delay is capped.
  const double delay_ns =
      static_cast<double>(base_delay_.count()) * std::pow(2.0, static_cast<double>(exponent));
  if (!(delay_ns < static_cast<double>(max_delay_.count()))) return max_delay_;
  return nanoseconds(static_cast<nanoseconds::rep>(delay_ns));
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  failures_.erase(key);
}

int ItemExponentialFailureRateLimiter::NumRequeues(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  const auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(Clock& clock, double qps, int burst)
    : clock_(clock), qps_(qps), burst_(burst), tokens_(burst), last_(clock.Now()) {}

nanoseconds BucketRateLimiter::When(const std::string& /*key*/) {
  absl::MutexLock lock(&mu_);
  const MonotonicTime now = std::max(clock_.Now(), last_);
  const double elapsed_s = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed_s * qps_);
  last_ = now;
  tokens_ -= 1.0;
  if (tokens_ >= 0.0) return nanoseconds(0);
  // The wait until the bucket has refilled the token this call reserved.
  return nanoseconds(static_cast<nanoseconds::rep>(std::ceil(-tokens_ / qps_ * 1e9)));
}

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<RateLimiterPtr> limiters)
    : limiters_(std::move(limiters)) {}

nanoseconds MaxOfRateLimiter::When(const std::string& key) {
  nanoseconds longest(0);
  for (const auto& limiter : limiters_) longest = std::max(longest, limiter->When(key));
  return longest;
}

void MaxOfRateLimiter::Forget(const std::string& key) {
  for (const auto& limiter : limiters_) limiter->Forget(key);
}

int MaxOfRateLimiter::NumRequeues(const std::string& key) const {
  int most = 0;
  for (const auto& limiter : limiters_) most = std::max(most, limiter->NumRequeues(key));
  return most;
}

RateLimiterPtr DefaultControllerRateLimiter(Clock& clock) {
  std::vector<RateLimiterPtr> limiters;
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(
      std::chrono::milliseconds(5), std::chrono::seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(clock, 10.0, 100));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace wavepool::kube
