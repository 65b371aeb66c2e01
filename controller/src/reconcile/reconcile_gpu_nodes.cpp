// Screening the GPUNodes before placement: what one agent reports wrongly is withheld and
// reported on its GPUNode, never allowed to fail the reconciles of the whole cluster
// (reconcile_context.h; docs/controller.md "Invalid GPUNodes").
#include <map>
#include <optional>
#include <string>
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

// "GPUNode <name>.status.gpus[<i>]" of every place a UUID is reported.
std::map<std::string, std::vector<std::string>> UuidOwners(const std::vector<api::GpuNode>& nodes) {
  std::map<std::string, std::vector<std::string>> owners;
  for (const api::GpuNode& node : nodes) {
    if (node.spec.node_name.empty()) continue;  // Left out whole.
    for (std::size_t i = 0; i < node.status.gpus.size(); ++i) {
      const std::string& uuid = node.status.gpus[i].uuid;
      if (!uuid.empty()) {
        owners[uuid].push_back(
            absl::StrCat("GPUNode ", node.metadata.name, " status.gpus[", i, "]"));
      }
    }
  }
  return owners;
}

// Why the GPU at `i` of `node` must not be offered; empty when it may.
std::string GpuProblem(const api::GpuNode& node, std::size_t i,
                       const std::map<std::string, std::vector<std::string>>& owners,
                       Problems& problems) {
  const api::GpuStatus& gpu = node.status.gpus[i];
  const std::string field = absl::StrCat("status.gpus[", i, "]");
  if (gpu.uuid.empty()) return absl::StrCat(field, ".uuid: must not be empty");
  const std::vector<std::string>& where = owners.at(gpu.uuid);
  if (where.size() > 1) {
    problems.duplicate = true;
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
void Report(ReconcileContext& ctx, api::GpuNode node, const Problems& problems) {
  std::optional<api::Condition> desired = DesiredCondition(node, problems);
  if (!desired.has_value()) return;
  const api::Condition* before = api::FindCondition(node.status.conditions, desired->type);
  if (before != nullptr && before->status == desired->status && before->reason == desired->reason &&
      before->message == desired->message) {
    return;
  }
  const bool invalid = desired->status == ConditionStatus::kTrue;
  const std::string reason = desired->reason;
  const std::string message = desired->message;
  api::SetCondition(&node.status.conditions, *std::move(desired), ctx.now);
  // Conflict (the agent published meanwhile) and the like: the next reconcile tries again.
  if (!ctx.writer.UpdateGpuNodeStatus(node).ok()) return;
  ctx.writer.RecordGpuNodeEvent(node, invalid, reason, message);
}

}  // namespace

std::vector<api::GpuNode> UsableGpuNodes(ReconcileContext& ctx,
                                         const std::vector<api::GpuNode>& nodes) {
  const std::map<std::string, std::vector<std::string>> owners = UuidOwners(nodes);
  std::vector<api::GpuNode> usable;
  usable.reserve(nodes.size());
  for (const api::GpuNode& node : nodes) {
    Problems problems;
    if (node.spec.node_name.empty()) {
      problems.messages.push_back("spec.nodeName: must not be empty");
      Report(ctx, node, problems);
      continue;
    }
    api::GpuNode kept = node;
    kept.status.gpus.clear();
    for (std::size_t i = 0; i < node.status.gpus.size(); ++i) {
      std::string problem = GpuProblem(node, i, owners, problems);
      if (problem.empty()) {
        kept.status.gpus.push_back(node.status.gpus[i]);
      } else {
        problems.messages.push_back(std::move(problem));
      }
    }
    Report(ctx, node, problems);
    usable.push_back(std::move(kept));
  }
  return usable;
}

}  // namespace wavepool::controller::internal
