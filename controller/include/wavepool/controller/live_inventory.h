// LiveInventory: the Inventory kept between placement decisions. A decision used to build its
// inventory afresh from every GPUNode and every pod, which made each one cost the cluster's size
// (docs/performance.md). Kept here instead, the GPU table follows the screened GPUNode list and
// the node states, and the pods follow the cluster reader's change log
// (ClusterReader::AssignmentChangesSince), so that a decision pays for what changed since the
// last one. A decision changes the inventory only in a Trial (its own pods taken out, intents
// and queued jobs put in), undone when the Trial ends.
//
// A pod that Inventory::Add refuses (a second fg pod on a GPU, placed by a controller that could
// not see the first; an invalid assignment) is kept out (kept_out()): each decision's trial adds
// those again itself, as a fresh inventory would, and reports the clash or the error. They are
// taken in for good once a removal lets them.
//
// Not synchronised: the placement ledger keeps one under its mutex.
#ifndef WAVEPOOL_CONTROLLER_LIVE_INVENTORY_H_
#define WAVEPOOL_CONTROLLER_LIVE_INVENTORY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/controller/cluster.h"
#include "wavepool/controller/placement.h"

namespace wavepool::controller {

class LiveInventory {
 public:
  // A decision's changes to the kept inventory, undone when it is destroyed.
  // REQUIRES: the LiveInventory is synced (Sync returned OK) and no other Trial is alive.
  class Trial {
   public:
    explicit Trial(LiveInventory& live) : inventory_(*live.inventory_) { inventory_.StartTrial(); }
    ~Trial() { inventory_.UndoTrial(); }
    Trial(const Trial&) = delete;
    Trial& operator=(const Trial&) = delete;

    Inventory& inventory() { return inventory_; }

   private:
    Inventory& inventory_;
  };

  // Brings the inventory up to date: built on the first call (or when `options` change), its
  // GPU table set again when `nodes` is another list or `states` differ from the last call's,
  // and the pods' changes since the last call applied. The errors are Inventory::Build's and
  // SetGpus' (a GPUNode that does not validate); the inventory is then as it was, and the next
  // call tries again.
  absl::Status Sync(const ClusterReader& reader,
                    std::shared_ptr<const std::vector<api::GpuNode>> nodes, NodeStateMap states,
                    const PlacementOptions& options);

  // The pods ("ns/name") whose assignment changed in the syncs since the last call; nullopt
  // for every pod (the inventory was built afresh, or read every pod again).
  std::optional<std::set<std::string>> TakeChangedPods();

  // The pods Inventory::Add refused, by "ns/name". REQUIRES: synced.
  const std::map<std::string, std::shared_ptr<const GpuAssignment>>& kept_out() const {
    return kept_out_;
  }
  // REQUIRES: synced.
  const Inventory& inventory() const { return *inventory_; }

 private:
  // Makes pod `key` hold `now` (nothing when nullptr). Returns whether it held something before.
  bool Apply(const std::string& key, const std::shared_ptr<const GpuAssignment>& now);
  void ApplyChanges(const AssignmentChanges& changes);
  // Takes in the kept-out pods that fit now.
  void RetryKeptOut();

  std::optional<Inventory> inventory_;
  std::shared_ptr<const std::vector<api::GpuNode>> nodes_;  // Held: no later list has its address.
  NodeStateMap states_;
  std::uint64_t pods_version_ = 0;
  std::unordered_map<std::string, std::shared_ptr<const GpuAssignment>> held_;  // In inventory_.
  std::map<std::string, std::shared_ptr<const GpuAssignment>> kept_out_;
  std::optional<std::set<std::string>> changed_pods_;  // nullopt: every pod.
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_LIVE_INVENTORY_H_
