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
#include "reconcile_context.h"

namespace wavepool::controller::internal {
namespace {

using nlohmann::json;

// (creationTimestamp, "ns/name"): the later of two is the younger pod. RFC 3339 timestamps of
// one API server compare as strings; pods created in the same second fall back to the name, so
// both gangs' reconciles agree on who yields.
std::tuple<std::string, std::string> Age(const json& pod) {
  return {pod.value("/metadata/creationTimestamp"_json_pointer, ""),
          absl::StrCat(pod.value("/metadata/namespace"_json_pointer, ""), "/", PodNameOf(pod))};
}

// The other job's pod (other.pod, "ns/name") as the cache shows it; nullopt when not there yet.
std::optional<json> FindPod(const ReconcileContext& ctx, const GpuAssignment& other) {
  const std::size_t slash = other.job.find('/');
  if (slash == std::string::npos) return std::nullopt;
  for (json& pod : ctx.reader.PodsOfJob(other.job.substr(0, slash), other.job.substr(slash + 1))) {
    if (absl::StrCat(pod.value("/metadata/namespace"_json_pointer, ""), "/", PodNameOf(pod)) ==
        other.pod) {
      return std::move(pod);
    }
  }
  return std::nullopt;
}

}  // namespace

bool ClashesWithForeground(const Inventory& inventory, const GpuAssignment& a) {
  if (a.role != api::Role::kForeground) return false;
  const std::set<std::string> uuids(a.gpu_uuids.begin(), a.gpu_uuids.end());
  for (const Inventory::Gpu& gpu : inventory.gpus()) {
    if (uuids.count(gpu.uuid) == 0) continue;
    for (const std::size_t h : gpu.holders) {
      if (inventory.assignments()[h].role == api::Role::kForeground) return true;
    }
  }
  return false;
}

// Counted GPU by GPU: as fg where the GPU is otherwise free of fg pods (no other gang may come
// there), as a bg pod of the same memory where it is not (the GPU stays fg-taken, its memory
// counted).
void AddClashingPod(Inventory& inventory, const GpuAssignment& a) {
  for (const std::string& uuid : a.gpu_uuids) {
    GpuAssignment part = a;
    part.pod = absl::StrCat(a.pod, " on ", uuid);
    part.gpu_uuids = {uuid};
    if (inventory.Add(part).ok()) continue;
    part.role = api::Role::kBackground;
    inventory.Add(part).IgnoreError();  // Valid as a fg part, so valid as a bg one.
  }
}

std::optional<std::string> ForegroundGpuClash(const ReconcileContext& ctx,
                                              const std::vector<json>& pods) {
  if (!ctx.foreground()) return std::nullopt;
  std::map<std::string, const json*> mine;  // By pod name: this gang's pods holding GPUs.
  for (const json& pod : pods) {
    const std::string phase = PodPhaseOf(pod);
    if (GangGenerationOf(pod) == ctx.job.status.gang_generation && phase != "Succeeded" &&
        phase != "Failed") {
      mine[PodNameOf(pod)] = &pod;
    }
  }
  std::map<std::string, const json*> by_gpu;  // GPU UUID -> this gang's pod on it.
  for (const api::PodPlacement& p : ctx.job.status.placement) {
    const auto it = mine.find(p.pod);
    if (it == mine.end()) continue;
    for (const std::string& uuid : p.gpu_uuids) by_gpu[uuid] = it->second;
  }
  if (by_gpu.empty()) return std::nullopt;
  for (const GpuAssignment& other : ctx.reader.Assignments()) {
    if (other.role != api::Role::kForeground || other.job == ctx.key) continue;
    for (const std::string& uuid : other.gpu_uuids) {
      const auto it = by_gpu.find(uuid);
      if (it == by_gpu.end()) continue;
      // Not in the cache yet: just created, so the younger; its own reconcile yields.
      const std::optional<json> theirs = FindPod(ctx, other);
      if (theirs.has_value() && Age(*it->second) < Age(*theirs)) continue;
      return absl::StrCat("GPU ", uuid, " of pod ", PodNameOf(*it->second),
                          " also runs foreground pod ", other.pod, " of job ", other.job,
                          " (one foreground pod per GPU): this gang, the younger, is placed "
                          "afresh");
    }
  }
  return std::nullopt;
}

}  // namespace wavepool::controller::internal
