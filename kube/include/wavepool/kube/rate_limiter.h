// How long a work-queue key waits before it is handed out again: client-go's
// util/workqueue rate limiters. A RateLimiter answers When(key) with a delay and counts what it
// needs per key until Forget(key).
//
//   ItemExponentialFailureRateLimiter  per key: base * 2^failures, capped (5 ms .. 1000 s)
//   BucketRateLimiter                  overall: a token bucket (10 per second, burst 100)
//   MaxOfRateLimiter                   the longest delay of several limiters
//   DefaultControllerRateLimiter()     MaxOf(exponential 5 ms..1000 s, bucket 10 qps burst 100),
//                                      client-go's DefaultControllerRateLimiter
//
// Every implementation is safe for concurrent use. Time comes from a wavepool::Clock, so that
// tests drive the bucket with a SimulatedClock.
#ifndef WAVEPOOL_KUBE_RATE_LIMITER_H_
#define WAVEPOOL_KUBE_RATE_LIMITER_H_

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/base/clock.h"

namespace wavepool::kube {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;

  // How long `key` should wait before it is processed again; counts one more failure for
  // limiters that count them.
  virtual std::chrono::nanoseconds When(const std::string& key) = 0;

  // `key` is done being retried (it succeeded, or the caller gave up): forget its failures.
  virtual void Forget(const std::string& key) = 0;

  // How many times When(key) was asked since the last Forget(key).
  virtual int NumRequeues(const std::string& key) const = 0;
};
using RateLimiterPtr = std::unique_ptr<RateLimiter>;

// base_delay * 2^(failures so far), at most max_delay: 5 ms, 10 ms, 20 ms, ... 1000 s.
class ItemExponentialFailureRateLimiter final : public RateLimiter {
 public:
  // REQUIRES: 0 <= base_delay <= max_delay.
  ItemExponentialFailureRateLimiter(std::chrono::nanoseconds base_delay,
                                    std::chrono::nanoseconds max_delay);

  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) const override;

 private:
  const std::chrono::nanoseconds base_delay_;
  const std::chrono::nanoseconds max_delay_;
  mutable absl::Mutex mu_;
  std::unordered_map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
};

// A token bucket over all keys (golang.org/x/time/rate's Reserve): `burst` tokens, refilled at
// `qps` per second; each When takes one token, and a When that finds none reserves the next one
// and answers the wait for it. With 10 qps and a burst of 100, the first 100 calls at one instant
// wait 0, the 101st 100 ms, the 102nd 200 ms.
class BucketRateLimiter final : public RateLimiter {
 public:
  // REQUIRES: qps > 0, burst >= 1. `clock` outlives the limiter.
  BucketRateLimiter(Clock& clock, double qps, int burst);

  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) const override { return 0; }

 private:
  Clock& clock_;
  const double qps_;
  const double burst_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);       // negative while calls wait for reserved tokens
  MonotonicTime last_ ABSL_GUARDED_BY(mu_);  // when tokens_ was last brought up to date
};

// The longest When of its limiters (each is asked, so each counts); NumRequeues is the largest.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  // REQUIRES: `limiters` is not empty and holds no null.
  explicit MaxOfRateLimiter(std::vector<RateLimiterPtr> limiters);

  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) const override;

 private:
  const std::vector<RateLimiterPtr> limiters_;
};

// client-go's DefaultControllerRateLimiter: MaxOf(exponential 5 ms .. 1000 s per key, a bucket of
// 10 qps with a burst of 100 over all keys). `clock` outlives the limiter.
RateLimiterPtr DefaultControllerRateLimiter(Clock& clock);

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_RATE_LIMITER_H_
