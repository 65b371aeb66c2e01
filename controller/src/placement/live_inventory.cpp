#include "wavepool/controller/live_inventory.h"

#include <algorithm>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "wavepool/base/status_macros.h"

namespace wavepool::controller {
namespace {

bool SameOptions(const PlacementOptions& a, const PlacementOptions& b) {
  return std::tie(a.memory_margin_fraction, a.memory_margin_min_bytes, a.max_background_per_gpu,
                  a.prefer_shared_gpus) == std::tie(b.memory_margin_fraction,
                                                    b.memory_margin_min_bytes,
                                                    b.max_background_per_gpu, b.prefer_shared_gpus);
}

}  // namespace

absl::Status LiveInventory::Sync(const ClusterReader& reader,
                                 std::shared_ptr<const std::vector<api::GpuNode>> nodes,
                                 NodeStateMap states, const PlacementOptions& options) {
  if (!inventory_.has_value() || !SameOptions(inventory_->options(), options)) {
    WAVEPOOL_ASSIGN_OR_RETURN(Inventory built, Inventory::Build(*nodes, *states, {}, options));
    inventory_ = std::move(built);
    held_.clear();
    kept_out_.clear();
    changed_pods_.reset();
    pods_version_ = 0;
    nodes_ = std::move(nodes);
    states_ = std::move(states);
  } else if (nodes != nodes_ || (states != states_ && *states != *states_)) {
    WAVEPOOL_RETURN_IF_ERROR(inventory_->SetGpus(*nodes, *states));
    nodes_ = std::move(nodes);
    states_ = std::move(states);
  } else {
    // Other states that say the same: kept, so that the next decision compares pointers only.
    states_ = std::move(states);
  }
  const AssignmentChanges changes = reader.AssignmentChangesSince(pods_version_);
  ApplyChanges(changes);
  pods_version_ = changes.version;
  return absl::OkStatus();
}

void LiveInventory::ApplyChanges(const AssignmentChanges& changes) {
  bool removed = false;
  if (changes.complete) {  // The pods not listed hold nothing.
    changed_pods_.reset();
    std::unordered_set<std::string> listed;
    for (const auto& [key, now] : changes.changed) listed.insert(key);
    std::vector<std::string> gone;
    for (const auto& [key, held] : held_) {
      if (listed.count(key) == 0) gone.push_back(key);
    }
    for (const auto& [key, kept] : kept_out_) {
      if (listed.count(key) == 0) gone.push_back(key);
    }
    for (const std::string& key : gone) removed |= Apply(key, nullptr);
  }
  for (const auto& [key, now] : changes.changed) removed |= Apply(key, now);
  if (removed && !kept_out_.empty()) RetryKeptOut();
}

bool LiveInventory::Apply(const std::string& key, const std::shared_ptr<const GpuAssignment>& now) {
  const auto held = held_.find(key);
  const auto kept = kept_out_.find(key);
  if (now != nullptr && ((held != held_.end() && held->second == now) ||
                         (kept != kept_out_.end() && kept->second == now))) {
    return false;  // Unchanged.
  }
  if (changed_pods_.has_value()) changed_pods_->insert(key);
  bool removed = false;
  if (held != held_.end()) {
    inventory_->Remove(held->second->pod).IgnoreError();
    held_.erase(held);
    removed = true;
  }
  if (kept != kept_out_.end()) kept_out_.erase(kept);
  if (now == nullptr) return removed;
  if (inventory_->Add(now).ok()) {
    held_.emplace(key, now);
  } else {
    kept_out_.emplace(key, now);
  }
  return removed;
}

std::optional<std::set<std::string>> LiveInventory::TakeChangedPods() {
  std::optional<std::set<std::string>> changed = std::move(changed_pods_);
  changed_pods_.emplace();
  return changed;
}

void LiveInventory::RetryKeptOut() {
  for (auto it = kept_out_.begin(); it != kept_out_.end();) {
    if (!inventory_->Add(it->second).ok()) {
      ++it;
      continue;
    }
    held_.emplace(it->first, it->second);
    it = kept_out_.erase(it);
  }
}

}  // namespace wavepool::controller
