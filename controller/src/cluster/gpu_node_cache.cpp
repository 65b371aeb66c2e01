#include "cluster/gpu_node_cache.h"

#include <utility>

#include "cluster/decoded_cache.h"
#include "wavepool/api/object_key.h"
#include "wavepool/kube/informer.h"

namespace wavepool::controller::internal {
namespace {

std::set<std::string> JobsWithTasksOn(const api::GpuNode& node) {
  std::set<std::string> jobs;
  for (const api::GpuStatus& gpu : node.status.gpus) {
    for (const api::GpuTask& task : gpu.tasks) {
      jobs.insert(api::ObjectKey{task.namespace_, task.job}.ToString());
    }
  }
  return jobs;
}

}  // namespace

absl::Status GpuNodeCache::Upsert(const nlohmann::json& object) {
  const std::string name = kube::ObjectKey(object);
  const std::string version = ResourceVersionOf(object);
  std::shared_ptr<const api::GpuNode> old_part;
  {
    absl::MutexLock lock(&mu_);
    const auto it = entries_.find(name);
    if (it != entries_.end()) {
      if (!version.empty() && it->second.resource_version == version) return absl::OkStatus();
      old_part = it->second.placement_part;
    }
  }
  absl::StatusOr<api::GpuNode> decoded = api::GpuNode::FromJson(object);
  if (!decoded.ok()) {
    Remove(name);
    return decoded.status();
  }
  Entry entry;
  entry.resource_version = version;
  entry.jobs = JobsWithTasksOn(*decoded);
  // Compared outside the lock: a heartbeat's placement part is usually the one kept.
  api::GpuNode part = PlacementPartOf(*decoded);
  const bool same_part = old_part != nullptr && SamePlacementPart(*old_part, part);
  entry.placement_part =
      same_part ? old_part : std::make_shared<const api::GpuNode>(std::move(part));
  entry.whole = std::make_shared<const api::GpuNode>(*std::move(decoded));

  absl::MutexLock lock(&mu_);
  const auto it = entries_.find(name);
  if (it == entries_.end() || it->second.placement_part != entry.placement_part) {
    placement_parts_.reset();
  }
  if (it == entries_.end() ||
      it->second.whole->status.heartbeat_time != entry.whole->status.heartbeat_time) {
    heartbeat_changes_.Record(name);
  }
  if (it != entries_.end()) Unindex(name, it->second.jobs);
  for (const std::string& job : entry.jobs) by_job_[job].insert(name);
  entries_[name] = std::move(entry);
  return absl::OkStatus();
}

void GpuNodeCache::Remove(const std::string& name) {
  absl::MutexLock lock(&mu_);
  const auto it = entries_.find(name);
  if (it == entries_.end()) return;
  Unindex(name, it->second.jobs);
  entries_.erase(it);
  placement_parts_.reset();
  heartbeat_changes_.Record(name);
}

void GpuNodeCache::Unindex(const std::string& name, const std::set<std::string>& jobs) {
  for (const std::string& job : jobs) {
    const auto names = by_job_.find(job);
    names->second.erase(name);
    if (names->second.empty()) by_job_.erase(names);
  }
}

std::optional<api::GpuNode> GpuNodeCache::Get(std::string_view name) const {
  std::shared_ptr<const api::GpuNode> whole;
  {
    absl::MutexLock lock(&mu_);
    const auto it = entries_.find(std::string(name));
    if (it == entries_.end()) return std::nullopt;
    whole = it->second.whole;
  }
  return *whole;
}

std::vector<api::GpuNode> GpuNodeCache::List() const {
  std::vector<std::shared_ptr<const api::GpuNode>> wholes;
  {
    absl::MutexLock lock(&mu_);
    wholes.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) wholes.push_back(entry.whole);
  }
  std::vector<api::GpuNode> nodes;
  nodes.reserve(wholes.size());
  for (const auto& whole : wholes) nodes.push_back(*whole);
  return nodes;
}

std::shared_ptr<const std::vector<api::GpuNode>> GpuNodeCache::PlacementParts() const {
  absl::MutexLock lock(&mu_);
  if (placement_parts_ == nullptr) {
    auto parts = std::make_shared<std::vector<api::GpuNode>>();
    parts->reserve(entries_.size());
    for (const auto& [name, entry] : entries_) parts->push_back(*entry.placement_part);
    placement_parts_ = std::move(parts);
  }
  return placement_parts_;
}

HeartbeatChanges GpuNodeCache::HeartbeatsSince(std::uint64_t version) const {
  absl::MutexLock lock(&mu_);
  HeartbeatChanges out;
  out.version = heartbeat_changes_.version();
  const auto time_of = [](const Entry& entry) {
    return std::make_shared<const std::string>(entry.whole->status.heartbeat_time);
  };
  if (std::optional<std::vector<std::string>> names = heartbeat_changes_.KeysSince(version)) {
    for (std::string& name : *names) {
      const auto it = entries_.find(name);
      out.changed.emplace_back(std::move(name),
                               it == entries_.end() ? nullptr : time_of(it->second));
    }
    return out;
  }
  out.complete = true;
  for (const auto& [name, entry] : entries_) out.changed.emplace_back(name, time_of(entry));
  return out;
}

std::vector<api::GpuNode> GpuNodeCache::WithTasksOf(std::string_view ns,
                                                    std::string_view job) const {
  std::vector<std::shared_ptr<const api::GpuNode>> wholes;
  {
    absl::MutexLock lock(&mu_);
    const auto names = by_job_.find(api::ObjectKey{std::string(ns), std::string(job)}.ToString());
    if (names == by_job_.end()) return {};
    for (const std::string& name : names->second) wholes.push_back(entries_.at(name).whole);
  }
  std::vector<api::GpuNode> nodes;
  nodes.reserve(wholes.size());
  for (const auto& whole : wholes) nodes.push_back(*whole);
  return nodes;
}

}  // namespace wavepool::controller::internal
