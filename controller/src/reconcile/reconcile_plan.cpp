// Planning a job inside a reconcile: the layer table / profile ConfigMaps, the device, the plan
// cache and the Plan ConfigMap (reconcile_context.h).
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/api/enums.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

using api::ConditionStatus;

// The text of a ConfigMap key the spec references; a reason and message when it is missing.
struct KeyText {
  std::optional<std::string> text;
  std::string missing;  // Empty when found.
};

KeyText ReadKey(const ReconcileContext& ctx, const api::ConfigMapKeyRef& ref,
                std::string_view field) {
  const absl::StatusOr<std::optional<kube::ConfigMap>> cm =
      ctx.reader.GetConfigMap(ctx.ns(), ref.config_map);
  if (!cm.ok())
    return {std::nullopt, absl::StrCat(std::string(field), ": ", cm.status().message())};
  if (!cm->has_value()) {
    return {std::nullopt, absl::StrCat(std::string(field), ": ConfigMap ", ctx.ns(), "/",
                                       ref.config_map, " not found")};
  }
  const std::map<std::string, std::string>& data = (*cm)->data;
  const auto found = data.find(ref.key);
  if (found == data.end()) {
    return {std::nullopt, absl::StrCat(std::string(field), ": ConfigMap ", ctx.ns(), "/",
                                       ref.config_map, " has no key \"", ref.key, "\"")};
  }
  return {found->second, ""};
}

ReconcileResult WaitFor(ReconcileContext& ctx, std::string_view reason, const std::string& msg) {
  SetCondition(ctx, api::kConditionPlanned, ConditionStatus::kFalse, reason, msg);
  ctx.job.status.phase = api::JobPhase::kPending;
  ReconcileResult result;
  result.requeue_after = ctx.options.waiting_requeue;
  return result;
}

// Creates the Plan ConfigMap, or replaces it when it holds another plan.
absl::Status StorePlan(ReconcileContext& ctx, const api::Plan& plan) {
  WAVEPOOL_ASSIGN_OR_RETURN(nlohmann::json desired, BuildPlanConfigMap(ctx.job, plan));
  const std::string hash_key(kAnnotationPlanHash);
  const std::string hash = desired["metadata"]["annotations"][hash_key].get<std::string>();
  WAVEPOOL_ASSIGN_OR_RETURN(const std::optional<kube::ConfigMap> existing,
                            ctx.reader.GetConfigMap(ctx.ns(), PlanConfigMapName(ctx.name())));
  if (!existing.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(FenceOnJob(ctx));
    absl::StatusOr<nlohmann::json> created = ctx.writer.CreateConfigMap(desired);
    // AlreadyExists: the cache lags a create of an earlier reconcile; the next one compares.
    if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
      return created.status();
    }
    return absl::OkStatus();
  }
  const api::ObjectMeta& stored = existing->metadata;
  const auto stored_hash = stored.annotations.find(hash_key);
  if (stored_hash != stored.annotations.end() && stored_hash->second == hash) {
    return absl::OkStatus();
  }
  desired["metadata"]["resourceVersion"] = stored.resource_version;
  return ctx.writer.UpdateConfigMap(desired).status();
}

}  // namespace

std::optional<JobPlan> PlanCache::Find(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  const auto it = plans_.find(key);
  if (it == plans_.end()) return std::nullopt;
  return it->second;
}

void PlanCache::Store(const std::string& key, const JobPlan& plan) {
  absl::MutexLock lock(&mu_);
  plans_[key] = plan;
}

void PlanCache::ForgetJob(std::string_view uid) {
  absl::MutexLock lock(&mu_);
  const std::string prefix = absl::StrCat(std::string(uid), "/");
  for (auto it = plans_.lower_bound(prefix);
       it != plans_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    it = plans_.erase(it);
  }
}

std::string PlanCache::PlanningDeviceOf(const GpuNodeList& nodes, std::string_view fallback) {
  {
    absl::MutexLock lock(&mu_);
    if (device_from_ == nodes && device_fallback_ == fallback) return device_;
  }
  std::string device = PlanningDevice(*nodes, fallback);
  absl::MutexLock lock(&mu_);
  device_from_ = nodes;
  device_fallback_ = std::string(fallback);
  device_ = device;
  return device;
}

absl::StatusOr<PlanOutcome> PlanAndStore(ReconcileContext& ctx, PlanCache& cache,
                                         const GpuNodeList& nodes) {
  PlanInputs inputs;
  inputs.device = cache.PlanningDeviceOf(nodes, ctx.options.default_device);
  const api::ModelSpec& model = ctx.job.spec.model;
  if (model.layer_table.has_value()) {
    KeyText table = ReadKey(ctx, *model.layer_table, "spec.model.layerTable");
    if (!table.text)
      return PlanOutcome{std::nullopt, WaitFor(ctx, "LayerTableNotFound", table.missing)};
    inputs.layer_table = std::move(table.text);
  }
  if (model.profile.has_value()) {
    KeyText profile = ReadKey(ctx, *model.profile, "spec.model.profile");
    if (!profile.text) {
      return PlanOutcome{std::nullopt, WaitFor(ctx, "ProfileNotFound", profile.missing)};
    }
    inputs.profile = std::move(profile.text);
  }
  // Keyed by what the plan depends on, so a resync does not re-plan and a changed spec or input
  // does.
  const std::string key = absl::StrCat(ctx.job.metadata.uid, "/", ctx.job.metadata.generation, "/",
                                       HashJson({{"device", inputs.device},
                                                 {"layerTable", inputs.layer_table.value_or("")},
                                                 {"profile", inputs.profile.value_or("")}}));
  std::optional<JobPlan> plan = cache.Find(key);
  if (!plan.has_value()) {
    const auto start = ctx.options.clock->Now();
    absl::StatusOr<JobPlan> planned = PlanJob(ctx.job, inputs);
    if (ctx.metrics != nullptr) {
      ctx.metrics->ObservePlan(ctx.options.clock->Now() - start);
    }
    if (!planned.ok()) {
      return PlanOutcome{std::nullopt,
                         WaitFor(ctx, "PlanningFailed", std::string(planned.status().message()))};
    }
    cache.ForgetJob(ctx.job.metadata.uid);
    cache.Store(key, *planned);
    plan = std::move(*planned);
  }
  ctx.job.status.plan = plan->summary;
  ctx.job.status.gpus = plan->plan.gpus;  // `kubectl get tj` GPUS: what the plan uses.
  // The pods mount `<job>-plan`: one the job does not own (a predecessor's of the same name, or
  // someone else's) would hand them another plan, and replacing it would destroy its data.
  const std::string config_map = PlanConfigMapName(ctx.name());
  WAVEPOOL_ASSIGN_OR_RETURN(const std::optional<kube::ConfigMap> existing,
                            ctx.reader.GetConfigMap(ctx.ns(), config_map));
  if (existing.has_value() && !IsControlledBy(existing->metadata, ctx.job.metadata.uid)) {
    ctx.job.status.phase = api::JobPhase::kPending;
    return PlanOutcome{std::nullopt,
                       ReportNameClash(ctx, api::kConditionPlanned,
                                       absl::StrCat("ConfigMap ", ctx.ns(), "/", config_map))};
  }
  SetCondition(ctx, api::kConditionPlanned, ConditionStatus::kTrue, "PlanFound", plan->description);
  WAVEPOOL_RETURN_IF_ERROR(StorePlan(ctx, plan->plan));
  return PlanOutcome{std::move(plan), std::nullopt};
}

}  // namespace wavepool::controller::internal
