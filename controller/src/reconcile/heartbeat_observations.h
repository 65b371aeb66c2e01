// When the controller last saw each GPUNode's heartbeat change, on the controller's own clock.
// Internal to the reconciler.
//
// An agent stamps status.heartbeatTime with its node's clock; comparing that stamp with the
// controller's clock makes clock skew look like a dead agent (a node 60 s behind is always
// stale) or hides one (a node ahead stays fresh long after its agent died). Only a change of the
// value is trusted: a node is fresh while the controller has seen its heartbeat change (or first
// seen it) within the staleness timeout. The memory is the controller's alone and starts empty
// when it starts, so a restarted controller gives every node one full timeout before it judges.
//
// Thread-safe: every reconcile worker records and asks through one instance.
#ifndef WAVEPOOL_CONTROLLER_SRC_RECONCILE_HEARTBEAT_OBSERVATIONS_H_
#define WAVEPOOL_CONTROLLER_SRC_RECONCILE_HEARTBEAT_OBSERVATIONS_H_

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/base/clock.h"

namespace wavepool::controller::internal {

class HeartbeatObservations {
 public:
  // Records that the GPUNode `node` shows `heartbeat` at `now` (the controller's wall clock) and
  // returns whether it is fresh: its heartbeat changed, or was first seen, no longer than
  // `timeout` ago. An empty heartbeat (an agent that never beat) is never fresh.
  bool ObserveFresh(const std::string& node, const std::string& heartbeat, WallTime now,
                    std::chrono::nanoseconds timeout);
  // ObserveFresh, with the last instant the node stays fresh unless its heartbeat changes again
  // (nullopt: not fresh).
  std::optional<WallTime> ObserveFreshUntil(const std::string& node, const std::string& heartbeat,
                                            WallTime now, std::chrono::nanoseconds timeout);

  // The last instant `node` stays fresh as last observed, without observing a value; nullopt
  // when it is not fresh at `now` or was never observed.
  std::optional<WallTime> FreshUntil(const std::string& node, WallTime now,
                                     std::chrono::nanoseconds timeout) const;

  // Forgets `node` (a GPUNode deleted), or every node not in `nodes`, so that the memory stays
  // bounded and a node that comes back is judged afresh.
  void Forget(const std::string& node);
  void RetainOnly(const std::set<std::string>& nodes);

 private:
  struct Seen {
    std::string heartbeat;  // The value last seen.
    WallTime changed;       // When it was first seen with that value.
  };
  // The last instant a node seen as `seen` stays fresh; nullopt: not fresh at `now`.
  static std::optional<WallTime> UntilOf(const Seen& seen, WallTime now,
                                         std::chrono::nanoseconds timeout);
  mutable absl::Mutex mu_;
  std::map<std::string, Seen> seen_ ABSL_GUARDED_BY(mu_);  // by GPUNode name
};

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_RECONCILE_HEARTBEAT_OBSERVATIONS_H_
