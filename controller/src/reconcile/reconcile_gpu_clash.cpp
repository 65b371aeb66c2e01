// A foreground gang sharing a GPU with another foreground pod (reconcile_context.h): the rule
// placement keeps (one fg pod per GPU, deeppool-burst-parallel §3) broken by a controller that
// could not see the other pod. Every decision counts the GPU as taken by both meanwhile; the
// younger pod's gang yields and is placed afresh.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/api/object_key.h"

namespace wavepool::controller::internal {
namespace {

// (creationTimestamp, "ns/name"): the later of two is the younger pod. RFC 3339 timestamps of
// one API server compare as strings; pods created in the same second fall back to the name, so
// both gangs' reconciles agree on who yields.
std::tuple<std::string, std::string> Age(const kube::Pod& pod) {
  return {pod.metadata.creation_timestamp,
          api::ObjectKey{pod.metadata.namespace_, PodNameOf(pod)}.ToString()};
}

// The other job's pod (other.pod, "ns/name") as the cache shows it; nullopt when not there yet.
std::optional<kube::Pod> FindPod(const ReconcileContext& ctx, const GpuAssignment& other) {
  const absl::StatusOr<api::ObjectKey> job = api::ObjectKey::Parse(other.job);
  const absl::StatusOr<api::ObjectKey> pod_key = api::ObjectKey::Parse(other.pod);
  if (!job.ok() || !pod_key.ok()) return std::nullopt;
  for (kube::Pod& pod : ctx.reader.PodsOfJob(job->namespace_, job->name)) {
    if (pod.metadata.namespace_ == pod_key->namespace_ && PodNameOf(pod) == pod_key->name) {
      return std::move(pod);
    }
  }
  return std::nullopt;
}

// The jobs ("ns/name") of the fg pods on the GPUs of `a` in `inventory`.
std::set<std::string> ForegroundJobsOnGpusOf(const Inventory& inventory, const GpuAssignment& a) {
  std::set<std::string> jobs;
  const std::set<std::string> uuids(a.gpu_uuids.begin(), a.gpu_uuids.end());
  for (const Inventory::Gpu& gpu : inventory.gpus()) {
    if (uuids.count(gpu.uuid) == 0) continue;
    for (const std::size_t h : gpu.holders) {
      const GpuAssignment& holder = inventory.assignment(h);
      if (holder.role == api::Role::kForeground) jobs.insert(holder.job);
    }
  }
  return jobs;
}

}  // namespace

bool ClashesWithForeground(const Inventory& inventory, const GpuAssignment& a) {
  return a.role == api::Role::kForeground && !ForegroundJobsOnGpusOf(inventory, a).empty();
}

// Counted GPU by GPU: as fg where the GPU is otherwise free of fg pods (no other gang may come
// there), as a bg pod of the same memory where it is not (the GPU stays fg-taken, its memory
// counted).
std::set<std::string> AddClashingPod(Inventory& inventory, const GpuAssignment& a) {
  std::set<std::string> jobs = ForegroundJobsOnGpusOf(inventory, a);
  jobs.insert(a.job);
  for (const std::string& uuid : a.gpu_uuids) {
    GpuAssignment part = a;
    part.pod = absl::StrCat(a.pod, " on ", uuid);
    part.gpu_uuids = {uuid};
    if (inventory.Add(part).ok()) continue;
    part.role = api::Role::kBackground;
    inventory.Add(part).IgnoreError();  // Valid as a fg part, so valid as a bg one.
  }
  return jobs;
}

void ForgetGpuClash(PlacementLedger& ledger, const std::string& key) {
  absl::MutexLock lock(&ledger.clash_mu);
  ledger.gpu_clash_jobs.erase(key);
}

std::optional<std::string> ForegroundGpuClash(const ReconcileContext& ctx,
                                              const std::vector<kube::Pod>& pods) {
  if (!ctx.foreground()) return std::nullopt;
  {
    // Placement never makes a clash: only a gang that an inventory found in one
    // (PrepareInventory) looks, rather than every gang copying every pod's GPUs on each reconcile.
    absl::MutexLock lock(&ctx.ledger.clash_mu);
    if (ctx.ledger.gpu_clash_jobs.count(ctx.key) == 0) return std::nullopt;
  }
  std::map<std::string, const kube::Pod*> mine;  // By pod name: this gang's pods holding GPUs.
  for (const kube::Pod& pod : pods) {
    const std::string& phase = PodPhaseOf(pod);
    if (GangGenerationOf(pod) == ctx.job.status.gang_generation && phase != "Succeeded" &&
        phase != "Failed") {
      mine[PodNameOf(pod)] = &pod;
    }
  }
  std::map<std::string, const kube::Pod*> by_gpu;  // GPU UUID -> this gang's pod on it.
  for (const api::PodPlacement& p : ctx.job.status.placement) {
    const auto it = mine.find(p.pod);
    if (it == mine.end()) continue;
    for (const std::string& uuid : p.gpu_uuids) by_gpu[uuid] = it->second;
  }
  if (by_gpu.empty()) return std::nullopt;
  bool clash = false;  // With an older gang or a younger one.
  for (const GpuAssignment& other : ctx.reader.Assignments()) {
    if (other.role != api::Role::kForeground || other.job == ctx.key) continue;
    for (const std::string& uuid : other.gpu_uuids) {
      const auto it = by_gpu.find(uuid);
      if (it == by_gpu.end()) continue;
      clash = true;
      // Not in the cache yet: just created, so the younger; its own reconcile yields.
      const std::optional<kube::Pod> theirs = FindPod(ctx, other);
      if (theirs.has_value() && Age(*it->second) < Age(*theirs)) continue;
      ForgetGpuClash(ctx.ledger, ctx.key);  // Placed afresh where no fg pod is.
      return absl::StrCat("GPU ", uuid, " of pod ", PodNameOf(*it->second),
                          " also runs foreground pod ", other.pod, " of job ", other.job,
                          " (one foreground pod per GPU): this gang, the younger, is placed "
                          "afresh");
    }
  }
  // Looked at again while the younger gang has not yielded yet; forgotten once it has.
  if (!clash) ForgetGpuClash(ctx.ledger, ctx.key);
  return std::nullopt;
}

}  // namespace wavepool::controller::internal
