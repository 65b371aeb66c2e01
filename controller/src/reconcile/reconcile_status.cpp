// Writing a TrainingJob's status: conditions with metav1.Condition semantics, the status write
// with the read resourceVersion, and the Events of transitions (reconcile_context.h).
#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::controller::internal {
namespace {

// Conditions whose turning True is worth an Event of the same name: the transitions a user
// follows with `kubectl describe` (and not every reconcile).
constexpr std::array<std::string_view, 6> kEventConditions = {
    api::kConditionPlanned,   api::kConditionPlaced, api::kConditionRunning,
    api::kConditionSucceeded, api::kConditionFailed, api::kConditionPreempted};

bool IsWarningCondition(std::string_view type) {
  return type == api::kConditionFailed || type == api::kConditionPreempted;
}

}  // namespace

nlohmann::json StatusJson(const api::TrainingJob& job) {
  const nlohmann::json json = api::ToJson(job);
  return json.value("status", nlohmann::json::object());
}

void SetCondition(ReconcileContext& ctx, std::string_view type, api::ConditionStatus status,
                  std::string_view reason, std::string_view message) {
  const api::Condition* before = api::FindCondition(ctx.job.status.conditions, type);
  const bool was_true = before != nullptr && before->status == api::ConditionStatus::kTrue;
  api::Condition condition;
  condition.type = std::string(type);
  condition.status = status;
  condition.observed_generation = ctx.job.metadata.generation;
  condition.reason = std::string(reason);
  condition.message = std::string(message);
  api::SetCondition(&ctx.job.status.conditions, std::move(condition), ctx.now);
  const bool is_event =
      std::find(kEventConditions.begin(), kEventConditions.end(), type) != kEventConditions.end();
  if (is_event && !was_true && status == api::ConditionStatus::kTrue) {
    QueueEvent(ctx, IsWarningCondition(type), type, message);
  }
}

bool ConditionIs(const ReconcileContext& ctx, std::string_view type, api::ConditionStatus status,
                 std::string_view reason) {
  const api::Condition* c = api::FindCondition(ctx.job.status.conditions, type);
  return c != nullptr && c->status == status && (reason.empty() || c->reason == reason);
}

void QueueEvent(ReconcileContext& ctx, bool warning, std::string_view reason,
                std::string_view message) {
  ctx.events.push_back({warning, std::string(reason), std::string(message)});
}

namespace {

absl::Status Write(ReconcileContext& ctx, bool force) {
  ctx.job.status.observed_generation = ctx.job.metadata.generation;
  const nlohmann::json desired = StatusJson(ctx.job);
  if (force || desired != ctx.stored_status) {
    // The write carries the resourceVersion read (or returned by the previous write): a status
    // decided from a stale read gets Conflict, and the manager retries with a fresh read.
    WAVEPOOL_ASSIGN_OR_RETURN(api::TrainingJob written, ctx.writer.UpdateJobStatus(ctx.job));
    ctx.job.metadata.resource_version = written.metadata.resource_version;
    ctx.versions.push_back(ctx.job.metadata.resource_version);
    ctx.stored_status = desired;
    ctx.status_written = true;
  }
  for (const PendingEvent& event : ctx.events) {
    ctx.writer.RecordEvent(ctx.job, event.warning, event.reason, event.message);
  }
  ctx.events.clear();
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteStatus(ReconcileContext& ctx) { return Write(ctx, /*force=*/false); }

absl::Status FenceOnJob(ReconcileContext& ctx) {
  return ctx.status_written ? absl::OkStatus() : Write(ctx, /*force=*/true);
}

std::chrono::seconds RestartBackoff(const ReconcilerOptions& options, std::int64_t restarts) {
  if (restarts <= 0) return std::chrono::seconds(0);
  std::chrono::seconds delay = options.restart_backoff_base;
  for (std::int64_t i = 1; i < restarts && delay < options.restart_backoff_max; ++i) delay *= 2;
  return std::min(delay, options.restart_backoff_max);
}

std::chrono::nanoseconds SoonRequeue(const ReconcilerOptions& options) {
  // Terminating pods go within their grace period; look again every few seconds meanwhile (the
  // pods' deletion also triggers a reconcile through the informer).
  return std::min<std::chrono::nanoseconds>(options.waiting_requeue, std::chrono::seconds(5));
}

}  // namespace wavepool::controller::internal
