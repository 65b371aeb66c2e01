#include "wavepool/kube/work_queue.h"

#include <utility>

namespace wavepool::kube {
namespace {

// Waits with no delayed key still wake up now and then, so that a real clock's deadline stays
// far from the end of its range.
constexpr std::chrono::hours kIdleWait(1);

RateLimiterPtr LimiterOrDefault(WorkQueue::Options& options) {
  if (options.rate_limiter) return std::move(options.rate_limiter);
  return DefaultControllerRateLimiter(*options.clock);
}

}  // namespace

WorkQueue::WorkQueue() : WorkQueue(Options{}) {}

WorkQueue::WorkQueue(Options options)
    : clock_(*options.clock), rate_limiter_(LimiterOrDefault(options)) {
  delay_thread_ = std::thread([this] { DelayLoop(); });
}

WorkQueue::~WorkQueue() {
  ShutDown();
  {
    absl::MutexLock lock(&delay_mu_);
    stop_delay_ = true;
  }
  delay_thread_.join();
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key) > 0) return;
  dirty_.insert(key);
  // A key being processed is queued again by Done, so that no two workers hold it.
  if (processing_.count(key) > 0) return;
  queue_.push_back(key);
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  // As client-go's, a queue that shuts down still hands out what was queued before.
  const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || shutting_down_;
  };
  mu_.Await(absl::Condition(&ready));
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.count(key) > 0) queue_.push_back(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  if (ShuttingDown()) return;
  if (delay.count() <= 0) {
    Add(key);
    return;
  }
  const MonotonicTime ready_at = clock_.Now() + delay;
  absl::MutexLock lock(&delay_mu_);
  const auto existing = delayed_by_key_.find(key);
  if (existing != delayed_by_key_.end()) {
    if (existing->second.ready_at <= ready_at) return;  // already due sooner
    delayed_.erase(existing->second);
    delayed_by_key_.erase(existing);
  }
  const Delayed entry{ready_at, next_sequence_++};
  delayed_.emplace(entry, key);
  delayed_by_key_.emplace(key, entry);
  delay_changed_ = true;
}

void WorkQueue::DelayLoop() {
  absl::MutexLock lock(&delay_mu_);
  const auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(delay_mu_) {
    return stop_delay_ || delay_changed_;
  };
  while (!stop_delay_) {
    const MonotonicTime now = clock_.Now();
    while (!delayed_.empty() && delayed_.begin()->first.ready_at <= now) {
      const std::string key = delayed_.begin()->second;
      delayed_by_key_.erase(key);
      delayed_.erase(delayed_.begin());
      Add(key);
    }
    const MonotonicTime deadline =
        delayed_.empty() ? now + kIdleWait : delayed_.begin()->first.ready_at;
    delay_changed_ = false;
    clock_.WaitUntil(delay_mu_, deadline, absl::Condition(&woken));
  }
}

void WorkQueue::AddRateLimited(const std::string& key) { AddAfter(key, rate_limiter_->When(key)); }

void WorkQueue::Forget(const std::string& key) { rate_limiter_->Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) const { return rate_limiter_->NumRequeues(key); }

std::size_t WorkQueue::Len() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  draining_ = false;
}

void WorkQueue::ShutDownWithDrain() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  draining_ = true;
  // Workers keep taking what was queued; wait until nothing is queued or held (or a ShutDown
  // gives up on the drain).
  const auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !draining_ || (processing_.empty() && queue_.empty());
  };
  mu_.Await(absl::Condition(&drained));
  draining_ = false;
}

bool WorkQueue::ShuttingDown() const {
  absl::MutexLock lock(&mu_);
  return shutting_down_;
}

}  // namespace wavepool::kube
