// The nodes each background job is kept off because its worker was caught there using the GPU
// beyond what its launch gate allowed (the GPUNode's BackgroundCheating condition). Internal to
// the reconciler.
//
// The agent's detector judges a process on one GPU; placing the job again on the same node would
// give the same tenant the same foreground to disturb, so the job goes elsewhere for a while. An
// entry belongs to one job object (its uid: a job deleted and created again under the name
// starts clean) and ends at its expiry. The memory is the controller's alone: a restarted
// controller forgets, and the agent flags the job again should it cheat again.
//
// Thread-safe: every reconcile worker records and asks through one instance.
#ifndef WAVEPOOL_CONTROLLER_SRC_RECONCILE_NODE_QUARANTINE_H_
#define WAVEPOOL_CONTROLLER_SRC_RECONCILE_NODE_QUARANTINE_H_

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/base/clock.h"

namespace wavepool::controller::internal {

class NodeQuarantine {
 public:
  using TimePoint = WallTime;

  // Keeps the job `key` ("ns/name") of uid `uid` off `node` until `until` (a later expiry
  // extends an earlier one). A different uid under the same key replaces what was kept.
  void Add(const std::string& key, const std::string& uid, const std::string& node, TimePoint until)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The nodes the job `key` of uid `uid` is kept off at `now`; expired entries are dropped.
  std::set<std::string> NodesFor(const std::string& key, const std::string& uid, TimePoint now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Forgets the job (deleted).
  void Forget(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::string uid;
    std::map<std::string, TimePoint> until_by_node;
  };
  absl::Mutex mu_;
  std::map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);  // by "ns/name"
};

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_RECONCILE_NODE_QUARANTINE_H_
