// Inventory: the GPUs of every GPUNode and the pods holding them (placement.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/placement.h"

namespace wavepool::controller {
namespace {

absl::Status BadAssignment(const GpuAssignment& a, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("assignment of pod \"%s\" (job %s): %s: %s", a.pod, a.job, field, what));
}

absl::Status ValidateAssignment(const GpuAssignment& a) {
  if (a.pod.empty()) return BadAssignment(a, "pod", "must not be empty");
  if (a.memory_per_gpu_bytes < 0) {
    return BadAssignment(a, "memory_per_gpu_bytes",
                         absl::StrFormat("must be >= 0, got %d", a.memory_per_gpu_bytes));
  }
  if (a.gpu_uuids.empty()) return BadAssignment(a, "gpu_uuids", "must name at least one GPU");
  if (a.role == api::Role::kBackground && a.gpu_uuids.size() != 1) {
    return BadAssignment(
        a, "gpu_uuids",
        absl::StrFormat("a background pod holds exactly 1 GPU, got %d", a.gpu_uuids.size()));
  }
  if (!(a.idle_fraction >= 0 && a.idle_fraction <= 1)) {
    return BadAssignment(a, "idle_fraction",
                         absl::StrFormat("must be in [0, 1], got %g", a.idle_fraction));
  }
  if (!(a.max_foreground_slowdown >= 1)) {
    return BadAssignment(a, "max_foreground_slowdown",
                         absl::StrFormat("must be >= 1, got %g", a.max_foreground_slowdown));
  }
  if (!(a.progress_at_risk.count() >= 0)) {
    return BadAssignment(a, "progress_at_risk", "must be >= 0 seconds");
  }
  return absl::OkStatus();
}

bool Schedulable(const std::map<std::string, NodeState>& states, const std::string& node) {
  auto it = states.find(node);
  return it != states.end() && it->second.ready && it->second.managed && it->second.heartbeat_fresh;
}

// The GPUs of `nodes`, sorted by node name, then index; UUIDs not checked yet.
absl::StatusOr<std::vector<Inventory::Gpu>> GpuTable(
    const std::vector<api::GpuNode>& nodes, const std::map<std::string, NodeState>& states) {
  std::vector<Inventory::Gpu> table;
  for (const api::GpuNode& node : nodes) {
    const std::string& name = node.spec.node_name;
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("GPUNode \"%s\": spec.nodeName: must not be empty", node.metadata.name));
    }
    const bool schedulable = Schedulable(states, name);
    for (const api::GpuStatus& status : node.status.gpus) {
      if (status.memory_bytes < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("GPUNode \"%s\": status.gpus[%d].memoryBytes: must be >= 0, got %d",
                            name, status.index, status.memory_bytes));
      }
      if (status.memory_wave && status.memory_wave->peak_bytes < 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "GPUNode \"%s\": status.gpus[%d].memoryWave.peakBytes: must be >= 0, got %d", name,
            status.index, status.memory_wave->peak_bytes));
      }
      Inventory::Gpu gpu;
      gpu.node = name;
      gpu.index = status.index;
      gpu.uuid = status.uuid;
      gpu.memory_bytes = status.memory_bytes;
      gpu.observed_peak_bytes = status.memory_wave ? status.memory_wave->peak_bytes : 0;
      gpu.schedulable = schedulable;
      table.push_back(std::move(gpu));
    }
  }
  const auto by_place = [](const Inventory::Gpu& a, const Inventory::Gpu& b) {
    return std::tie(a.node, a.index, a.uuid) < std::tie(b.node, b.index, b.uuid);
  };
  // GPUNodes are listed by name, usually their node's, and GPUs by index: mostly sorted already.
  if (!std::is_sorted(table.begin(), table.end(), by_place)) {
    std::sort(table.begin(), table.end(), by_place);
  }
  return table;
}

}  // namespace

absl::StatusOr<Inventory> Inventory::Build(const std::vector<api::GpuNode>& nodes,
                                           const std::map<std::string, NodeState>& states,
                                           const std::vector<GpuAssignment>& assignments,
                                           const PlacementOptions& options) {
  if (!(options.memory_margin_fraction >= 0 && options.memory_margin_fraction < 1) ||
      options.memory_margin_min_bytes < 0 || options.max_background_per_gpu < 0) {
    return absl::InvalidArgumentError(
        "options: memory_margin_fraction must be in [0, 1), memory_margin_min_bytes and "
        "max_background_per_gpu >= 0");
  }
  Inventory inventory;
  inventory.options_ = options;
  WAVEPOOL_RETURN_IF_ERROR(inventory.SetGpus(nodes, states));
  for (const GpuAssignment& assignment : assignments) {
    WAVEPOOL_RETURN_IF_ERROR(inventory.Add(assignment));
  }
  return inventory;
}

absl::Status Inventory::SetGpus(const std::vector<api::GpuNode>& nodes,
                                const std::map<std::string, NodeState>& states) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Gpu> table, GpuTable(nodes, states));
  const bool same_gpus = std::equal(
      table.begin(), table.end(), gpus_.begin(), gpus_.end(), [](const Gpu& a, const Gpu& b) {
        return a.uuid == b.uuid && a.index == b.index && a.node == b.node;
      });
  if (same_gpus) {  // Validated when first set: only memory and schedulability may differ.
    std::vector<std::size_t> changed;
    for (std::size_t i = 0; i < table.size(); ++i) {
      const Gpu& was = gpus_[i];
      const Gpu& now = table[i];
      if (std::tie(now.memory_bytes, now.observed_peak_bytes, now.schedulable) !=
          std::tie(was.memory_bytes, was.observed_peak_bytes, was.schedulable)) {
        changed.push_back(i);
      }
      table[i].holders = std::move(gpus_[i].holders);
    }
    gpus_ = std::move(table);
    for (std::size_t i : changed) Refile(i);
    return absl::OkStatus();
  }
  std::unordered_map<std::string, std::size_t> by_uuid;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const Gpu& gpu = table[i];
    if (gpu.uuid.empty() || !by_uuid.emplace(gpu.uuid, i).second) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "GPUNode \"%s\": status.gpus[%d].uuid: must be non-empty and unique, got \"%s\"",
          gpu.node, gpu.index, gpu.uuid));
    }
  }
  gpus_ = std::move(table);
  gpu_by_uuid_ = std::move(by_uuid);
  Reindex();
  return absl::OkStatus();
}

absl::Status Inventory::Add(const GpuAssignment& assignment) {
  return Add(std::make_shared<const GpuAssignment>(assignment));
}

absl::Status Inventory::Add(std::shared_ptr<const GpuAssignment> assignment) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateAssignment(*assignment));
  if (assignment_by_pod_.count(assignment->pod) > 0) {
    return BadAssignment(*assignment, "pod", "already holds GPUs in the inventory");
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckForegroundClash(*assignment));
  if (in_trial_) trial_.push_back(TrialStep{true, assignment});
  std::size_t i = assignments_.size();
  if (free_slots_.empty()) {
    assignments_.push_back(nullptr);
  } else {
    i = free_slots_.back();
    free_slots_.pop_back();
  }
  assignment_by_pod_.emplace(assignment->pod, i);
  assignments_[i] = std::move(assignment);
  Record(i);
  return absl::OkStatus();
}

absl::Status Inventory::Remove(std::string_view pod) {
  const auto found = assignment_by_pod_.find(std::string(pod));
  if (found == assignment_by_pod_.end()) {
    return absl::NotFoundError(absl::StrFormat("pod \"%s\" holds no GPU in the inventory", pod));
  }
  const std::size_t i = found->second;
  assignment_by_pod_.erase(found);
  if (in_trial_) trial_.push_back(TrialStep{false, assignments_[i]});
  Forget(i);
  return absl::OkStatus();
}

void Inventory::StartTrial() {
  in_trial_ = true;
  trial_.clear();
}

void Inventory::UndoTrial() {
  in_trial_ = false;
  for (auto step = trial_.rbegin(); step != trial_.rend(); ++step) {
    // Each step undone restores the state it was taken in, so neither can fail.
    if (step->added) {
      Remove(step->assignment->pod).IgnoreError();
    } else {
      Add(std::move(step->assignment)).IgnoreError();
    }
  }
  trial_.clear();
}

const Inventory::Gpu* Inventory::FindGpu(const std::string& uuid) const {
  const auto found = gpu_by_uuid_.find(uuid);
  return found == gpu_by_uuid_.end() ? nullptr : &gpus_[found->second];
}

// A fg pod on a GPU that already has one is rejected: one fg job per GPU
// (deeppool-burst-parallel §3).
absl::Status Inventory::CheckForegroundClash(const GpuAssignment& a) const {
  if (a.role != api::Role::kForeground) return absl::OkStatus();
  for (const std::string& uuid : a.gpu_uuids) {
    const auto found = gpu_by_uuid_.find(uuid);
    if (found == gpu_by_uuid_.end()) continue;
    if (const GpuAssignment* fg = ForegroundOn(gpus_[found->second])) {
      return BadAssignment(
          a, "gpu_uuids",
          absl::StrFormat("GPU %s already runs foreground pod \"%s\"", uuid, fg->pod));
    }
  }
  return absl::OkStatus();
}

const GpuAssignment* Inventory::ForegroundOn(const Gpu& gpu) const {
  for (std::size_t h : gpu.holders) {
    if (assignments_[h]->role == api::Role::kForeground) return assignments_[h].get();
  }
  return nullptr;
}

void Inventory::Record(std::size_t i) {
  const GpuAssignment& a = *assignments_[i];
  bool orphaned = false;
  for (const std::string& uuid : a.gpu_uuids) {
    const auto found = gpu_by_uuid_.find(uuid);
    if (found == gpu_by_uuid_.end()) {
      orphaned = true;
      continue;
    }
    std::vector<std::size_t>& holders = gpus_[found->second].holders;
    if (std::find(holders.begin(), holders.end(), i) == holders.end()) holders.push_back(i);
    Refile(found->second);
  }
  if (orphaned) orphaned_pods_.push_back(a.pod);
}

void Inventory::Reindex() {
  for (Gpu& gpu : gpus_) gpu.holders.clear();
  orphaned_pods_.clear();
  filed_.assign(gpus_.size(), Filed{});
  unschedulable_gpus_ = 0;
  foreground_held_gpus_ = 0;
  background_ranking_.clear();
  for (std::size_t g = 0; g < gpus_.size(); ++g) Refile(g);
  for (std::size_t i = 0; i < assignments_.size(); ++i) {
    if (assignments_[i] != nullptr) Record(i);
  }
}

void Inventory::Forget(std::size_t i) {
  const GpuAssignment& a = *assignments_[i];
  for (const std::string& uuid : a.gpu_uuids) {
    const auto found = gpu_by_uuid_.find(uuid);
    if (found == gpu_by_uuid_.end()) continue;
    std::vector<std::size_t>& holders = gpus_[found->second].holders;
    holders.erase(std::remove(holders.begin(), holders.end(), i), holders.end());
    Refile(found->second);
  }
  orphaned_pods_.erase(std::remove(orphaned_pods_.begin(), orphaned_pods_.end(), a.pod),
                       orphaned_pods_.end());
  assignments_[i].reset();
  free_slots_.push_back(i);
}

void Inventory::Unfile(std::size_t g) {
  Filed& filed = filed_[g];
  if (filed.unschedulable) --unschedulable_gpus_;
  if (filed.foreground_held) --foreground_held_gpus_;
  if (filed.rank.has_value()) background_ranking_.erase(*filed.rank);
  filed = Filed{};
}

void Inventory::Refile(std::size_t g) {
  Unfile(g);
  const Gpu& gpu = gpus_[g];
  Filed& filed = filed_[g];
  if (!gpu.schedulable) {
    filed.unschedulable = true;
    ++unschedulable_gpus_;
    return;
  }
  const GpuAssignment* fg = ForegroundOn(gpu);
  if (fg != nullptr) {
    filed.foreground_held = true;
    ++foreground_held_gpus_;
  } else {
    filed.open = true;
  }
  const std::size_t background = gpu.holders.size() - (fg != nullptr ? 1 : 0);
  if ((fg != nullptr && !AdmitsBackground(*fg)) ||
      static_cast<std::int64_t>(background) >= options_.max_background_per_gpu) {
    return;
  }
  filed.rank = BackgroundRank{fg != nullptr && options_.prefer_shared_gpus,
                              fg != nullptr ? fg->idle_fraction : 1.0, HeadroomBytes(gpu), g};
  background_ranking_.insert(*filed.rank);
}

Bytes Inventory::CommittedBytes(const Gpu& gpu) const {
  Bytes declared = 0;
  for (std::size_t holder : gpu.holders) declared += assignments_[holder]->memory_per_gpu_bytes;
  return std::max(declared, gpu.observed_peak_bytes);
}

Bytes Inventory::MarginBytes(const Gpu& gpu) const {
  const auto fraction =
      static_cast<Bytes>(options_.memory_margin_fraction * static_cast<double>(gpu.memory_bytes));
  return std::max(fraction, options_.memory_margin_min_bytes);
}

Bytes Inventory::HeadroomBytes(const Gpu& gpu) const {
  return gpu.memory_bytes - CommittedBytes(gpu) - MarginBytes(gpu);
}

}  // namespace wavepool::controller
