// Leader election on a coordination.k8s.io/v1 Lease: client-go's tools/leaderelection.
//
// Candidates read the Lease every retry period. The holder renews it (renewTime); the others
// take it once they have seen the same record, unchanged, for a whole lease duration on their
// own clock (client-go's observedTime: no clock across machines is compared, so skew between
// them does not matter, only the rate). Writes carry metadata.resourceVersion, so of two
// candidates that race, one gets 409 Conflict and stays a follower.
//
// A leader whose renewals keep failing for the renew deadline stops acting (its stop signal fires
// and OnStoppedLeading runs) at most retry period + renew deadline after its last renewal: 12 s
// with the defaults, before the 15 s after which any other candidate may take over. That margin
// is the whole guarantee (there is no fencing), so requests must not hang: keep the client's
// request timeout below the renew deadline.
//
// A LeaderElector is safe for concurrent use; it owns one thread (Start) plus one per term of
// leadership running OnStartedLeading. Stop (and the destructor) ends them, releasing the Lease
// when it leads and release_on_cancel is set.
#ifndef WAVEPOOL_KUBE_LEADER_ELECTION_H_
#define WAVEPOOL_KUBE_LEADER_ELECTION_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "wavepool/base/clock.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::kube {

// Fires once, when a term of leadership ends. Safe for concurrent use.
class StopSignal {
 public:
  explicit StopSignal(Clock& clock) : clock_(clock) {}

  bool stopped() const;
  void Wait() const;
  // Waits until stopped or `timeout` has passed on the clock; returns stopped().
  bool WaitFor(std::chrono::nanoseconds timeout) const;
  void Stop();

 private:
  Clock& clock_;
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

struct LeaderCallbacks {
  // Runs on its own thread when this candidate becomes leader; it must return soon after `stop`
  // fires (the elector waits for it before it releases the Lease or competes again).
  std::function<void(const StopSignal& stop)> on_started_leading;
  // Runs on the elector's thread as soon as a term ends (lost, or Stop).
  std::function<void()> on_stopped_leading;
  // Runs on the elector's thread when a different holder is seen (this candidate included).
  std::function<void(const std::string& identity)> on_new_leader;
};

struct LeaderElectionConfig {
  std::string lease_namespace = "default";
  std::string lease_name;
  std::string identity;  // holderIdentity: unique per candidate (the pod name)
  std::chrono::nanoseconds lease_duration = std::chrono::seconds(15);
  std::chrono::nanoseconds renew_deadline = std::chrono::seconds(10);
  std::chrono::nanoseconds retry_period = std::chrono::seconds(2);
  bool release_on_cancel = true;
  LeaderCallbacks callbacks;
  Clock* clock = &RealClock();  // every wait and every expiry decision; outlives the elector
  std::function<void(std::string_view)> log;  // empty: standard error
};

// client-go's checks: lease_duration > renew_deadline > 1.2 * retry_period > 0, a lease name,
// an identity, and both OnStartedLeading and OnStoppedLeading.
absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

class LeaderElector {
 public:
  // InvalidArgument from ValidateLeaderElectionConfig. `client` outlives the elector.
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(Client& client,
                                                               LeaderElectionConfig config);
  ~LeaderElector();

  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Competes on a thread of its own until Stop: a term that ends by losing the Lease is followed
  // by competing again (client-go's Run returns instead; its callers loop). Once only.
  void Start();
  // Ends the current term (releasing the Lease if configured) and joins every thread.
  // REQUIRES: not called from a callback.
  void Stop();

  // True from the successful acquisition until the stop signal of that term fires.
  bool IsLeader() const;
  // The holder last seen on the Lease ("" before the first read or after a release).
  std::string GetLeader() const;

 private:
  LeaderElector(Client& client, LeaderElectionConfig config);

  void Loop();
  bool Acquire();  // false: stopping
  void Lead();     // returns when the term ends
  bool RenewRound();
  bool TryAcquireOrRenew();
  void Release();
  void Observe(const nlohmann::json& spec);
  bool WaitFor(std::chrono::nanoseconds delay) ABSL_LOCKS_EXCLUDED(mu_);  // false: stopping
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_);
  void Log(std::string_view message) const;

  // Constant after construction.
  Client& client_;
  const LeaderElectionConfig config_;
  Clock& clock_;

  // The elector thread's own view of the Lease.
  nlohmann::json observed_spec_;
  MonotonicTime observed_time_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool leading_ ABSL_GUARDED_BY(mu_) = false;
  std::string leader_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_LEADER_ELECTION_H_
