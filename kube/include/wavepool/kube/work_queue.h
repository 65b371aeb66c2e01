// A rate-limited work queue of string keys ("namespace/name"), client-go's
// util/workqueue RateLimitingInterface: controllers add keys from informer handlers and workers
// take them one at a time.
//
// Semantics (client-go's):
//  - Add de-duplicates: a key already waiting is not queued twice; keys come out in the order
//    they were first added.
//  - A key handed out by Get is "processing" until Done(key). It is never handed to a second
//    worker meanwhile: an Add during processing marks it dirty, and Done queues it again.
//  - AddAfter(key, d) adds it once `d` has passed on the clock (the earliest wins when a key is
//    delayed twice); AddRateLimited(key) is AddAfter(key, limiter.When(key)); Forget(key) clears
//    the limiter's memory of the key (after a success); NumRequeues(key) says how often it was
//    rate-limited since.
//  - After ShutDown, adds are ignored; Get still hands out what was already queued and then
//    returns nullopt (delayed keys are dropped). ShutDownWithDrain does the same and blocks until
//    every queued key was handed out and Done (REQUIRES: workers are still calling Get).
//
// A WorkQueue is safe for concurrent use by any number of producers and workers. It owns one
// thread that moves delayed keys in when they are due; the destructor shuts down and joins it.
#ifndef WAVEPOOL_KUBE_WORK_QUEUE_H_
#define WAVEPOOL_KUBE_WORK_QUEUE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/base/clock.h"
#include "wavepool/kube/rate_limiter.h"

namespace wavepool::kube {

class WorkQueue {
 public:
  struct Options {
    Clock* clock = &RealClock();  // outlives the queue
    // nullptr: DefaultControllerRateLimiter(*clock).
    RateLimiterPtr rate_limiter;
  };

  WorkQueue();
  explicit WorkQueue(Options options);
  // Shuts down and joins the delay thread. REQUIRES: no worker is still inside Get.
  ~WorkQueue();

  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);

  // Blocks until a key is ready and hands it out (the caller must call Done(key)); nullopt once
  // the queue has shut down and nothing queued is left.
  std::optional<std::string> Get();

  // REQUIRES: `key` came from Get and Done(key) was not called since.
  void Done(const std::string& key);

  // Adds `key` once `delay` has passed on the clock; delay <= 0 adds it now.
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);

  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // Keys ready to be handed out (not those waiting for a delay, nor those being processed).
  std::size_t Len() const;

  void ShutDown();
  // Stops taking keys, then blocks until every queued key was handed out and Done; a ShutDown
  // from another thread ends the wait.
  void ShutDownWithDrain();
  bool ShuttingDown() const;

 private:
  struct Delayed {
    MonotonicTime ready_at;
    std::uint64_t sequence;  // ties keep the order of AddAfter calls
    bool operator<(const Delayed& other) const {
      return ready_at != other.ready_at ? ready_at < other.ready_at : sequence < other.sequence;
    }
  };

  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DelayLoop() ABSL_LOCKS_EXCLUDED(delay_mu_);

  // Constant after construction.
  Clock& clock_;
  const RateLimiterPtr rate_limiter_;

  // Get waits on mu_ for a ready key; ShutDownWithDrain for the last Done.
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);          // ready keys, in order
  std::unordered_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);  // added, not yet handed out
  std::unordered_set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;

  // The delayed keys, earliest first, and each key's entry (a key is delayed at most once).
  absl::Mutex delay_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<Delayed, std::string> delayed_ ABSL_GUARDED_BY(delay_mu_);
  std::unordered_map<std::string, Delayed> delayed_by_key_ ABSL_GUARDED_BY(delay_mu_);
  std::uint64_t next_sequence_ ABSL_GUARDED_BY(delay_mu_) = 0;
  bool delay_changed_ ABSL_GUARDED_BY(delay_mu_) = false;
  bool stop_delay_ ABSL_GUARDED_BY(delay_mu_) = false;
  std::thread delay_thread_;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_WORK_QUEUE_H_
