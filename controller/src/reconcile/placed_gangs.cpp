#include "reconcile/placed_gangs.h"

#include <optional>
#include <utility>

#include "wavepool/api/object_key.h"

namespace wavepool::controller::internal {
namespace {

std::string PodKey(const api::TrainingJob& job, const api::PodPlacement& p) {
  return api::ObjectKey{job.metadata.namespace_, p.pod}.ToString();
}

bool BeingCreated(const api::TrainingJob& job) {
  return job.status.phase == api::JobPhase::kPlaced && !job.status.placement.empty();
}

}  // namespace

void PlacedGangs::Sync(const ClusterReader& reader, LiveInventory& live) {
  const JobChanges jobs = reader.JobChangesSince(jobs_version_);
  jobs_version_ = jobs.version;
  std::set<std::string> recheck;
  if (jobs.complete) {
    while (!placed_.empty()) Untrack(placed_.begin()->first);
  }
  for (const auto& [key, job] : jobs.changed) {
    Untrack(key);
    if (job != nullptr && BeingCreated(*job)) {
      Track(key, job);
      recheck.insert(key);
    }
  }
  const std::optional<std::set<std::string>> pods = live.TakeChangedPods();
  if (!pods.has_value()) {
    for (const auto& [key, job] : placed_) recheck.insert(key);
  } else {
    for (const std::string& pod : *pods) {
      if (const auto it = job_of_pod_.find(pod); it != job_of_pod_.end())
        recheck.insert(it->second);
    }
  }
  for (const std::string& key : recheck) Check(key, live);
}

void PlacedGangs::Track(const std::string& key, std::shared_ptr<const api::TrainingJob> job) {
  for (const api::PodPlacement& p : job->status.placement) job_of_pod_[PodKey(*job, p)] = key;
  placed_.emplace(key, std::move(job));
}

void PlacedGangs::Untrack(const std::string& key) {
  missing_.erase(key);
  const auto it = placed_.find(key);
  if (it == placed_.end()) return;
  for (const api::PodPlacement& p : it->second->status.placement) {
    const auto pod = job_of_pod_.find(PodKey(*it->second, p));
    if (pod != job_of_pod_.end() && pod->second == key) job_of_pod_.erase(pod);
  }
  placed_.erase(it);
}

void PlacedGangs::Check(const std::string& key, const LiveInventory& live) {
  const auto it = placed_.find(key);
  if (it == placed_.end()) return;
  Gang gang{it->second, {}};
  const auto& placement = gang.job->status.placement;
  for (std::size_t i = 0; i < placement.size(); ++i) {
    const std::string pod = PodKey(*gang.job, placement[i]);
    if (!live.inventory().Holds(pod) && live.kept_out().count(pod) == 0) gang.missing.push_back(i);
  }
  if (gang.missing.empty()) {
    missing_.erase(key);
  } else {
    missing_[key] = std::move(gang);
  }
}

}  // namespace wavepool::controller::internal
