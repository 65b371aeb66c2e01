// What a job owns: its pods and Services by the controller ownerReference's uid, never by name
// or labels (reconcile_context.h; docs/controller.md "Ownership").
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

using api::ConditionStatus;

}  // namespace

JobPods SplitJobPods(const ReconcileContext& ctx, std::vector<kube::Pod> labelled) {
  JobPods pods;
  for (kube::Pod& pod : labelled) {
    (IsControlledBy(pod.metadata, ctx.job.metadata.uid) ? pods.owned : pods.foreign)
        .push_back(std::move(pod));
  }
  return pods;
}

void SkipForeignGenerations(ReconcileContext& ctx) {
  const std::string& uid = ctx.job.metadata.uid;
  std::set<std::string> names;  // Held by objects the job does not own.
  for (const kube::Pod& pod : ctx.reader.PodsOfJob(ctx.ns(), ctx.name())) {
    if (!IsControlledBy(pod.metadata, uid)) names.insert(pod.metadata.name);
  }
  for (const kube::Service& service : ctx.reader.ServicesOfJob(ctx.ns(), ctx.name())) {
    if (!IsControlledBy(service.metadata, uid)) names.insert(service.metadata.name);
  }
  // Only names decide: a job re-created under the same name starts at generation 0 again, where
  // its predecessor's terminating (or orphaned) pods may still hold `<job>-g0-<rank>`; a foreign
  // object at a generation the job has not reached yet is skipped when (if) it gets there.
  std::int64_t& generation = ctx.job.status.gang_generation;
  const std::int64_t ranks = ctx.job.spec.gpus.value_or(1);
  const auto taken = [&] {
    if (names.count(GangServiceName(ctx.name(), generation)) > 0) return true;
    for (std::int64_t rank = 0; rank < ranks; ++rank) {
      if (names.count(PodName(ctx.name(), generation, rank)) > 0) return true;
    }
    return false;
  };
  while (taken()) ++generation;
}

ReconcileResult ReportNameClash(ReconcileContext& ctx, std::string_view condition,
                                std::string_view object) {
  const std::string message = absl::StrCat(
      std::string(object), " exists but is not owned by TrainingJob ", ctx.key, " (uid ",
      ctx.job.metadata.uid, "): it is left as it is; delete or rename it and the job goes on");
  const api::Condition* before = api::FindCondition(ctx.job.status.conditions, condition);
  const bool news = before == nullptr || before->reason != kReasonNameClash ||
                    before->status != ConditionStatus::kFalse || before->message != message;
  SetCondition(ctx, condition, ConditionStatus::kFalse, kReasonNameClash, message);
  if (news) QueueEvent(ctx, /*warning=*/true, kReasonNameClash, message);
  ReconcileResult result;
  result.requeue_after = ctx.options.waiting_requeue;
  return result;
}

}  // namespace wavepool::controller::internal
