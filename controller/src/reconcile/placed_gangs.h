// PlacedGangs: the gangs being created, for the intents a placement decision counts
// (reconcile_placement.cpp). A job in phase Placed has its placement recorded in
// status.placement; its pods normally exist (and hold their GPUs) moments later, created in the
// same reconcile, but a controller stopped between the intent write and the pod creations, or a
// creation that failed, leaves pods that hold nothing yet: their GPUs count as taken all the
// same. Many jobs are Placed at once while their pods start, so instead of visiting them all on
// every decision the list is kept between decisions, from the job cache's changes
// (ClusterReader::JobChangesSince) and the kept inventory's (LiveInventory::TakeChangedPods):
// a decision pays for what changed and the few gangs with pods still missing.
//
// Not synchronised: the placement ledger keeps one under its mutex.
#ifndef WAVEPOOL_CONTROLLER_SRC_RECONCILE_PLACED_GANGS_H_
#define WAVEPOOL_CONTROLLER_SRC_RECONCILE_PLACED_GANGS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "wavepool/api/training_job.h"
#include "wavepool/controller/cluster.h"
#include "wavepool/controller/live_inventory.h"

namespace wavepool::controller::internal {

class PlacedGangs {
 public:
  // A Placed job and the indexes into its status.placement of the pods that hold nothing in
  // the kept inventory (neither counted nor refused by it).
  struct Gang {
    std::shared_ptr<const api::TrainingJob> job;
    std::vector<std::size_t> missing;
  };

  // Brings the list up to date with the jobs changed since the last call and the pods `live`
  // saw change since then. REQUIRES: `live` synced.
  void Sync(const ClusterReader& reader, LiveInventory& live);

  // The gangs with pods missing, by "ns/name".
  const std::map<std::string, Gang>& missing() const { return missing_; }

 private:
  void Track(const std::string& key, std::shared_ptr<const api::TrainingJob> job);
  void Untrack(const std::string& key);
  // Looks at the gang's pods again.
  void Check(const std::string& key, const LiveInventory& live);

  std::uint64_t jobs_version_ = 0;
  std::map<std::string, std::shared_ptr<const api::TrainingJob>> placed_;  // By "ns/name".
  std::unordered_map<std::string, std::string> job_of_pod_;  // "ns/pod" -> "ns/job" in placed_.
  std::map<std::string, Gang> missing_;
};

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_RECONCILE_PLACED_GANGS_H_
