// Screening the GPUNodes before placement: what one agent reports wrongly is withheld and
// reported on its GPUNode, never allowed to fail the reconciles of the whole cluster
// (reconcile_context.h; docs/controller.md "Invalid GPUNodes").
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reconcile/reconcile_context.h"

namespace wavepool::controller::internal {
namespace {

using api::ConditionStatus;

// A GPUNode's problems, in the words of its fields.
struct Problems {
  std::vector<std::string> messages;
  bool duplicate = false;  // A UUID reported twice: the reason names it.
};

// How many times each UUID is reported, over every GPUNode with a node name (one without is
// left out whole). Counted, not listed: only a duplicate needs its places named. The keys view
// the nodes' own strings: the list is screened again on every GPUNode change, so copying each
// UUID was most of the screening.
using UuidCounts = std::unordered_map<std::string_view, int>;

UuidCounts CountUuids(const std::vector<api::GpuNode>& nodes) {
  UuidCounts counts;
  std::size_t gpus = 0;
  for (const api::GpuNode& node : nodes) gpus += node.status.gpus.size();
  counts.reserve(gpus);
  for (const api::GpuNode& node : nodes) {
    if (node.spec.node_name.empty()) continue;
    for (const api::GpuStatus& gpu : node.status.gpus) {
      if (!gpu.uuid.empty()) ++counts[gpu.uuid];
    }
  }
  return counts;
}

// "GPUNode <name> status.gpus[<i>]" of every place `uuid` is reported.
std::vector<std::string> PlacesOf(const std::vector<api::GpuNode>& nodes, const std::string& uuid) {
  std::vector<std::string> places;
  for (const api::GpuNode& node : nodes) {
    if (node.spec.node_name.empty()) continue;
    for (std::size_t i = 0; i < node.status.gpus.size(); ++i) {
      if (node.status.gpus[i].uuid == uuid) {
        places.push_back(absl::StrCat("GPUNode ", node.metadata.name, " status.gpus[", i, "]"));
      }
    }
  }
  return places;
}

// Why the GPU at `i` of `node` must not be offered; empty when it may.
std::string GpuProblem(const std::vector<api::GpuNode>& nodes, const api::GpuNode& node,
                       std::size_t i, const UuidCounts& counts, Problems& problems) {
  const api::GpuStatus& gpu = node.status.gpus[i];
  const std::string field = absl::StrCat("status.gpus[", i, "]");
  if (gpu.uuid.empty()) return absl::StrCat(field, ".uuid: must not be empty");
  if (counts.at(gpu.uuid) > 1) {
    problems.duplicate = true;
    const std::vector<std::string> where = PlacesOf(nodes, gpu.uuid);
    return absl::StrCat(field, ".uuid: ", gpu.uuid, " is reported ", where.size(), " times (",
                        absl::StrJoin(where, ", "), ")");
  }
  if (gpu.memory_bytes < 0) {
    return absl::StrCat(field, ".memoryBytes: must be >= 0, got ", gpu.memory_bytes);
  }
  if (gpu.memory_wave && gpu.memory_wave->peak_bytes < 0) {
    return absl::StrCat(field, ".memoryWave.peakBytes: must be >= 0, got ",
                        gpu.memory_wave->peak_bytes);
  }
  return "";
}

// The GPUNode's controller-owned condition as it should be; nullopt when it needs none (valid,
// and never reported invalid).
std::optional<api::Condition> DesiredCondition(const api::GpuNode& node, const Problems& problems) {
  api::Condition condition;
  condition.type = std::string(kGpuNodeConditionInvalid);
  condition.observed_generation = node.metadata.generation;
  if (!problems.messages.empty()) {
    condition.status = ConditionStatus::kTrue;
    condition.reason = problems.duplicate ? "DuplicateGpuUuid" : "InvalidGpuStatus";
    condition.message =
        absl::StrCat(absl::StrJoin(problems.messages, "; "),
                     ": withheld from placement until the agent reports it validly");
    return condition;
  }
  const api::Condition* before = api::FindCondition(node.status.conditions, condition.type);
  if (before == nullptr || before->status != ConditionStatus::kTrue) return std::nullopt;
  condition.status = ConditionStatus::kFalse;
  condition.reason = "Valid";
  condition.message = "every GPU is offered to placement";
  return condition;
}

// Writes the condition and records the Event when they differ from what the GPUNode shows.
// False when the write failed (the next screening tries again).
bool Report(ReconcileContext& ctx, const api::GpuNode& seen, const Problems& problems) {
  std::optional<api::Condition> desired = DesiredCondition(seen, problems);
  if (!desired.has_value()) return true;
  const api::Condition* before = api::FindCondition(seen.status.conditions, desired->type);
  if (before != nullptr && before->status == desired->status && before->reason == desired->reason &&
      before->message == desired->message) {
    return true;
  }
  const bool invalid = desired->status == ConditionStatus::kTrue;
  const std::string reason = desired->reason;
  const std::string message = desired->message;
  // Written on the whole GPUNode as last observed: `seen` is its placement part, without the
  // fields the write would otherwise clear, and with a resourceVersion an earlier heartbeat's.
  std::optional<api::GpuNode> node = ctx.reader.GetGpuNode(seen.metadata.name);
  if (!node.has_value()) return true;  // Deleted: nothing to report on.
  api::SetCondition(&node->status.conditions, *std::move(desired), ctx.now);
  // Conflict (the agent published meanwhile) and the like: the next reconcile tries again.
  if (!ctx.writer.UpdateGpuNodeStatus(*node).ok()) return false;
  ctx.writer.RecordGpuNodeEvent(*node, invalid, reason, message);
  return true;
}

// The GPUNodes with what placement must not use withheld (ScreenedGpuNodes); nullopt when
// nothing is, the usual case, so that the listed GPUNodes serve as they are. `reported` is false
// when a condition could not be written.
std::optional<std::vector<api::GpuNode>> UsableGpuNodes(ReconcileContext& ctx,
                                                        const std::vector<api::GpuNode>& nodes,
                                                        bool& reported) {
  reported = true;
  const UuidCounts counts = CountUuids(nodes);
  std::vector<std::vector<bool>> withheld(nodes.size());
  bool any_withheld = false;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const api::GpuNode& node = nodes[n];
    Problems problems;
    if (node.spec.node_name.empty()) {
      problems.messages.push_back("spec.nodeName: must not be empty");
      reported &= Report(ctx, node, problems);
      any_withheld = true;
      continue;
    }
    withheld[n].assign(node.status.gpus.size(), false);
    for (std::size_t i = 0; i < node.status.gpus.size(); ++i) {
      std::string problem = GpuProblem(nodes, node, i, counts, problems);
      if (!problem.empty()) {
        withheld[n][i] = true;
        any_withheld = true;
        problems.messages.push_back(std::move(problem));
      }
    }
    reported &= Report(ctx, node, problems);
  }
  if (!any_withheld) return std::nullopt;
  std::vector<api::GpuNode> usable;
  usable.reserve(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].spec.node_name.empty()) continue;
    api::GpuNode& node = usable.emplace_back(nodes[n]);
    std::vector<api::GpuStatus>& gpus = node.status.gpus;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (withheld[n][i]) continue;
      if (kept != i) gpus[kept] = std::move(gpus[i]);
      ++kept;
    }
    gpus.resize(kept);
  }
  return usable;
}

}  // namespace

GpuNodeList ScreenedGpuNodes(ReconcileContext& ctx) {
  const GpuNodeList listed = ctx.reader.GpuNodes();
  {
    absl::MutexLock lock(&ctx.ledger.screened_mu);
    // The ledger holds the list it screened, so no later list can have its address.
    if (ctx.ledger.screened_from == listed) return ctx.ledger.screened;
  }
  bool reported = false;
  std::optional<std::vector<api::GpuNode>> screened = UsableGpuNodes(ctx, *listed, reported);
  const GpuNodeList usable =
      screened.has_value() ? std::make_shared<const std::vector<api::GpuNode>>(*std::move(screened))
                           : listed;
  if (reported) {
    absl::MutexLock lock(&ctx.ledger.screened_mu);
    ctx.ledger.screened_from = listed;
    ctx.ledger.screened = usable;
  }
  return usable;
}

}  // namespace wavepool::controller::internal
