#include "cluster/gpu_node_cache.h"

#include <set>
#include <utility>

#include "wavepool/api/object_key.h"
#include "wavepool/kube/informer.h"

namespace wavepool::controller::internal {
namespace {

std::string JobKey(std::string_view ns, std::string_view job) {
  return api::ObjectKey{std::string(ns), std::string(job)}.ToString();
}

// The index keys of a GPUNode: the job of each of its tasks, once.
std::vector<std::string> JobsWithTasksOn(const api::GpuNode& node) {
  std::set<std::string> jobs;
  for (const api::GpuStatus& gpu : node.status.gpus) {
    for (const api::GpuTask& task : gpu.tasks) jobs.insert(JobKey(task.namespace_, task.job));
  }
  return {jobs.begin(), jobs.end()};
}

}  // namespace

GpuNodeCache::GpuNodeCache() : wholes_(JobsWithTasksOn) {}

absl::Status GpuNodeCache::Upsert(const nlohmann::json& object) {
  const std::string name = kube::ObjectKey(object);
  const absl::Status decoded = wholes_.Upsert(object);
  const std::shared_ptr<const api::GpuNode> whole = wholes_.Find(name);
  if (whole == nullptr) {  // It did not decode, and is dropped.
    RemoveParts(name);
    return decoded;
  }
  Parts before;
  {
    absl::MutexLock lock(&mu_);
    if (const auto it = parts_.find(name); it != parts_.end()) before = it->second;
  }
  if (before.whole == whole) return absl::OkStatus();  // The resourceVersion it had.
  // Compared outside the lock: a heartbeat's placement part is usually the one kept.
  api::GpuNode part = PlacementPartOf(*whole);
  Parts now{whole,
            before.placement_part != nullptr && SamePlacementPart(*before.placement_part, part)
                ? before.placement_part
                : std::make_shared<const api::GpuNode>(std::move(part))};

  absl::MutexLock lock(&mu_);
  Parts& kept = parts_[name];
  if (kept.placement_part != now.placement_part) placement_parts_.reset();
  if (kept.whole == nullptr || kept.whole->status.heartbeat_time != whole->status.heartbeat_time) {
    heartbeat_changes_.Record(name);
  }
  kept = std::move(now);
  return absl::OkStatus();
}

void GpuNodeCache::Remove(const std::string& name) {
  wholes_.Remove(name);
  RemoveParts(name);
}

void GpuNodeCache::RemoveParts(const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (parts_.erase(name) == 0) return;
  placement_parts_.reset();
  heartbeat_changes_.Record(name);
}

std::optional<api::GpuNode> GpuNodeCache::Get(std::string_view name) const {
  return wholes_.Get(std::string(name));
}

std::vector<api::GpuNode> GpuNodeCache::List() const { return wholes_.List(); }

std::shared_ptr<const std::vector<api::GpuNode>> GpuNodeCache::PlacementParts() const {
  absl::MutexLock lock(&mu_);
  if (placement_parts_ == nullptr) {
    auto parts = std::make_shared<std::vector<api::GpuNode>>();
    parts->reserve(parts_.size());
    for (const auto& [name, kept] : parts_) parts->push_back(*kept.placement_part);
    placement_parts_ = std::move(parts);
  }
  return placement_parts_;
}

HeartbeatChanges GpuNodeCache::HeartbeatsSince(std::uint64_t version) const {
  absl::MutexLock lock(&mu_);
  HeartbeatChanges out;
  out.version = heartbeat_changes_.version();
  const auto time_of = [](const Parts& kept) {
    return std::make_shared<const std::string>(kept.whole->status.heartbeat_time);
  };
  if (std::optional<std::vector<std::string>> names = heartbeat_changes_.KeysSince(version)) {
    for (std::string& name : *names) {
      const auto it = parts_.find(name);
      out.changed.emplace_back(std::move(name), it == parts_.end() ? nullptr : time_of(it->second));
    }
    return out;
  }
  out.complete = true;
  for (const auto& [name, kept] : parts_) out.changed.emplace_back(name, time_of(kept));
  return out;
}

std::vector<api::GpuNode> GpuNodeCache::WithTasksOf(std::string_view ns,
                                                    std::string_view job) const {
  return wholes_.Indexed(JobKey(ns, job));
}

}  // namespace wavepool::controller::internal
