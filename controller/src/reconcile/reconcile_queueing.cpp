// The order background jobs get GPUs in: first queued, first placed (reconcile_context.h).
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "reconcile/reconcile_context.h"

namespace wavepool::controller::internal {
namespace {

using api::ConditionStatus;

// When a job was first queued (its creation; a preempted job keeps it), then its key: the order
// background jobs are placed in. A missing or malformed timestamp sorts last.
std::pair<std::chrono::system_clock::time_point, std::string> QueuedAt(
    const api::TrainingJob& job) {
  const auto created = api::ParseRfc3339(job.metadata.creation_timestamp);
  return {created.ok() ? *created : std::chrono::system_clock::time_point::max(),
          api::NamespacedName(job.metadata)};
}

// A bg job waiting for a GPU: planned, tried and found none (Placed=False, NotPlaceable), not
// placed since. A job stuck elsewhere (its plan failing) takes nothing from the others.
bool WaitsForBackgroundGpu(const api::TrainingJob& job) {
  if (job.spec.role != api::Role::kBackground || !job.status.placement.empty() ||
      !job.metadata.deletion_timestamp.empty() || job.spec.suspend.value_or(false) ||
      !job.status.plan.has_value()) {
    return false;
  }
  bool planned = false;
  bool not_placeable = false;
  for (const api::Condition& c : job.status.conditions) {
    if (c.type == api::kConditionPlanned) planned = c.status == ConditionStatus::kTrue;
    if (c.type == api::kConditionPlaced) {
      not_placeable = c.status == ConditionStatus::kFalse && c.reason == kNotPlaceableReason;
    }
  }
  return planned && not_placeable;
}

}  // namespace

int PlaceQueuedEarlier(const ReconcileContext& ctx, Inventory& inventory) {
  const auto mine = QueuedAt(ctx.job);
  // What each earlier job's placement needs, read while visiting: copying every job to find
  // the few waiting would cost more than placing them.
  struct Queued {
    std::string uid;
    Bytes memory = 0;
  };
  std::vector<std::pair<std::pair<std::chrono::system_clock::time_point, std::string>, Queued>>
      earlier;
  const auto visit = [&](const api::TrainingJob& job) {
    if (!WaitsForBackgroundGpu(job) || api::NamespacedName(job.metadata) == ctx.key) return;
    if (QueuedAt(job) < mine) {
      earlier.emplace_back(QueuedAt(job),
                           Queued{job.metadata.uid, job.status.plan->memory_per_gpu_bytes});
    }
  };
  // A job waiting for a GPU is Planned, or Preempted until placed again (Waiting).
  ctx.reader.ForEachJobInPhase(api::JobPhase::kPlanned, visit);
  ctx.reader.ForEachJobInPhase(api::JobPhase::kPreempted, visit);
  std::sort(earlier.begin(), earlier.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  int placed_ahead = 0;
  for (const auto& [queued, job] : earlier) {
    const Bytes memory = job.memory;
    if (memory < 0) continue;  // Its own decision reports the plan's error.
    std::optional<BackgroundPlacement> placed = FindBackgroundGpu(
        {queued.second, memory, ctx.ledger.quarantine.NodesFor(queued.second, job.uid, ctx.now)},
        inventory);
    if (!placed.has_value()) continue;  // It waits on; younger jobs may take what it cannot use.
    GpuAssignment ahead;
    ahead.job = queued.second;
    ahead.pod = absl::StrCat(queued.second, " (queued)");
    ahead.role = api::Role::kBackground;
    ahead.node = placed->node;
    ahead.gpu_uuids = {placed->gpu_uuid};
    ahead.memory_per_gpu_bytes = memory;
    if (inventory.Add(ahead).ok()) ++placed_ahead;
  }
  return placed_ahead;
}

}  // namespace wavepool::controller::internal
