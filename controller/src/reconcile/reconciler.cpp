// The reconcile flow (reconciler.h lists the steps; docs/controller.md "The reconcile loop").
// Each step lives in a reconcile_*.cpp file: status, plan, gang, placement.
#include "wavepool/controller/reconciler.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "reconcile/reconcile_context.h"
#include "reconcile/reconcile_validation.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/object_key.h"
#include "wavepool/base/plural.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/job_progress.h"

namespace wavepool::controller {

using api::ConditionStatus;
using internal::ReconcileContext;
using internal::SetCondition;

struct Reconciler::State {
  const ClusterReader& reader;
  ClusterWriter& writer;
  ReconcilerOptions options;
  ControllerMetrics* metrics;
  internal::PlacementLedger ledger;
  internal::PlanCache plans;
};

namespace {

bool Finished(const api::TrainingJob& job) {
  return job.status.phase == api::JobPhase::kSucceeded ||
         job.status.phase == api::JobPhase::kFailed;
}

// Step 2: a bad spec (or template, image, model) fails the job until it is fixed
// (reconcile_validation.h).
std::optional<internal::SpecProblem> CheckSpec(ReconcileContext& ctx) {
  std::optional<internal::SpecProblem> problem = internal::FindSpecProblem(ctx.job, ctx.options);
  if (!problem.has_value()) {
    if (internal::ConditionIs(ctx, api::kConditionInvalid, ConditionStatus::kTrue)) {
      // Fixed by a new generation: start over from Pending.
      SetCondition(ctx, api::kConditionInvalid, ConditionStatus::kFalse, "ValidSpec",
                   "the spec passes validation");
      if (ctx.job.status.phase == api::JobPhase::kFailed) {
        ctx.job.status.phase = api::JobPhase::kPending;
      }
    }
    return std::nullopt;
  }
  internal::MarkInvalid(ctx, *problem);
  return problem;
}

// Step 3: a job that finished at an earlier generation is looked at afresh.
void RestartFinishedAtOlderGeneration(ReconcileContext& ctx) {
  if (!Finished(ctx.job) || ctx.job.status.observed_generation == ctx.job.metadata.generation) {
    return;
  }
  const std::string msg =
      absl::StrCat("spec changed (generation ", ctx.job.metadata.generation, "): running again");
  for (std::string_view type : {api::kConditionFailed, api::kConditionSucceeded}) {
    if (internal::ConditionIs(ctx, type, ConditionStatus::kTrue)) {
      SetCondition(ctx, type, ConditionStatus::kFalse, "SpecChanged", msg);
    }
  }
  ctx.job.status.phase = api::JobPhase::kPending;
  ctx.job.status.restarts = 0;
  ++ctx.job.status.gang_generation;
  ctx.job.status.placement.clear();
}

// Step 4: suspended jobs (spec.suspend, Kueue's admission gate) hold no pods.
absl::StatusOr<ReconcileResult> Suspend(ReconcileContext& ctx, const std::vector<kube::Pod>& pods) {
  WAVEPOOL_RETURN_IF_ERROR(internal::DeletePods(ctx, pods, /*keep_finished=*/false));
  WAVEPOOL_RETURN_IF_ERROR(internal::DeleteGangServices(ctx, std::nullopt));
  internal::ForgetJob(ctx.ledger, ctx.key);
  ctx.job.status.placement.clear();
  ctx.job.status.phase = api::JobPhase::kSuspended;
  const std::string msg = "spec.suspend is true: the job holds no GPUs until it is resumed";
  SetCondition(ctx, api::kConditionPlaced, ConditionStatus::kFalse, internal::kReasonSuspended,
               msg);
  SetCondition(ctx, api::kConditionRunning, ConditionStatus::kFalse, internal::kReasonSuspended,
               msg);
  WAVEPOOL_RETURN_IF_ERROR(internal::WriteStatus(ctx));
  return ReconcileResult{};
}

// Deletes pods of earlier gangs still running (a restart stopped between its status write and
// its deletions), keeping finished ones for their logs, and the earlier gangs' Services.
absl::Status DeleteOldGangs(ReconcileContext& ctx, const std::vector<kube::Pod>& pods) {
  std::vector<kube::Pod> old;
  for (const kube::Pod& pod : pods) {
    if (internal::GangGenerationOf(pod) != ctx.job.status.gang_generation) old.push_back(pod);
  }
  WAVEPOOL_RETURN_IF_ERROR(internal::DeletePods(ctx, old, /*keep_finished=*/true));
  return internal::DeleteGangServices(ctx, ctx.job.status.gang_generation);
}

// The wait a counted restart imposes before the next gang (Placed=False RestartBackoff).
std::optional<ReconcileResult> BackoffWait(ReconcileContext& ctx) {
  const api::Condition* placed =
      api::FindCondition(ctx.job.status.conditions, api::kConditionPlaced);
  if (placed == nullptr || placed->status != ConditionStatus::kFalse ||
      placed->reason != internal::kReasonRestartBackoff) {
    return std::nullopt;
  }
  const auto since = api::ParseRfc3339(placed->last_transition_time);
  if (!since.ok()) return std::nullopt;
  const auto left =
      internal::RestartBackoff(ctx.options, ctx.job.status.restarts) - (ctx.now - *since);
  if (left <= WallTime::duration::zero()) return std::nullopt;
  ReconcileResult result;
  result.requeue_after = std::chrono::duration_cast<std::chrono::nanoseconds>(left);
  return result;
}

// Degraded=Unknown: the current gang has not measured its slowdown yet.
constexpr std::string_view kReasonSlowdownNotMeasured = "SlowdownNotMeasured";

// Degraded from the slowdown the workers reported. Nothing is said before a worker has measured
// one (a slowdown of 0 is "not measured", not "fine"): a job that never reported has no Degraded
// condition, and one whose new gang has not reported yet says Unknown, not measured yet.
void ReportSlowdown(ReconcileContext& ctx) {
  const double slo =
      ctx.job.spec.collocation.max_foreground_slowdown.value_or(api::kDefaultMaxForegroundSlowdown);
  const double slowdown =
      ctx.job.status.progress ? ctx.job.status.progress->foreground_slowdown : 0;
  if (slowdown <= 0) {
    if (api::FindCondition(ctx.job.status.conditions, api::kConditionDegraded) != nullptr) {
      SetCondition(ctx, api::kConditionDegraded, ConditionStatus::kUnknown,
                   kReasonSlowdownNotMeasured,
                   "foreground slowdown not measured yet: no worker of the current gang has "
                   "reported an iteration");
    }
    return;
  }
  if (slowdown > slo) {
    SetCondition(
        ctx, api::kConditionDegraded, ConditionStatus::kTrue, internal::kReasonSlowdownAboveSlo,
        absl::StrCat("iterations take ", slowdown,
                     "x as long as alone, above spec.collocation.maxForegroundSlowdown ", slo));
  } else {
    SetCondition(ctx, api::kConditionDegraded, ConditionStatus::kFalse, "SlowdownWithinSLO",
                 absl::StrCat("iterations take ", slowdown, "x as long as alone, within ", slo));
  }
}

// Step 8: phase, Running, progress and Degraded from the current gang.
ReconcileResult ReportGang(ReconcileContext& ctx, const std::vector<kube::Pod>& pods) {
  std::vector<std::string> names;
  std::size_t running = 0;
  std::size_t done = 0;
  for (const api::PodPlacement& p : ctx.job.status.placement) names.push_back(p.pod);
  for (const kube::Pod& pod : pods) {
    if (internal::GangGenerationOf(pod) == ctx.job.status.gang_generation &&
        !internal::IsTerminating(pod)) {
      const std::string phase = internal::PodPhaseOf(pod);
      running += phase == "Running" ? 1 : 0;
      done += phase == "Succeeded" ? 1 : 0;  // Ranks that finished first; the rest still run.
    }
  }
  const std::size_t total = ctx.job.status.placement.size();
  ReconcileResult result;
  if (running > 0 && running + done == total) {
    ctx.job.status.phase = api::JobPhase::kRunning;
    SetCondition(ctx, api::kConditionRunning, ConditionStatus::kTrue, "AllPodsRunning",
                 done == 0 ? (total == 1 ? std::string("its pod is running")
                                         : absl::StrCat("all ", total, " pods running"))
                           : absl::StrCat(Plural(running, "pod"), " running, ", done, " finished"));
    result.requeue_after = ctx.options.heartbeat_timeout;  // Notice an agent going silent.
  } else {
    ctx.job.status.phase = api::JobPhase::kPlaced;
    SetCondition(ctx, api::kConditionRunning, ConditionStatus::kFalse, "PodsStarting",
                 absl::StrCat(running, " of ", Plural(total, "pod"),
                              " running; waiting for the rest to "
                              "start",
                              ctx.options.start_timeout.count() > 0
                                  ? absl::StrCat(" (the gang is placed again elsewhere if "
                                                 "they are not running within ",
                                                 ctx.options.start_timeout.count(), " s)")
                                  : std::string()));
    if (ctx.options.start_timeout.count() > 0) result.requeue_after = ctx.options.start_timeout;
  }
  ctx.job.status.progress = JobProgress(ctx.reader.GpuNodesWithTasksOf(ctx.ns(), ctx.name()),
                                        ctx.ns(), ctx.name(), names);
  if (ctx.foreground()) ReportSlowdown(ctx);
  return result;
}

// A recorded placement whose GPUs are no longer ours to take: a fresh gang (new generation),
// placed on the next look.
absl::StatusOr<ReconcileResult> PlaceAfresh(ReconcileContext& ctx,
                                            const std::vector<kube::Pod>& pods,
                                            const std::string& conflict) {
  std::vector<kube::Pod> gang;
  for (const kube::Pod& pod : pods) {
    if (internal::GangGenerationOf(pod) == ctx.job.status.gang_generation) gang.push_back(pod);
  }
  WAVEPOOL_RETURN_IF_ERROR(internal::DeletePods(ctx, gang, /*keep_finished=*/false));
  ++ctx.job.status.gang_generation;
  ctx.job.status.placement.clear();
  ctx.job.status.phase =
      internal::ConditionIs(ctx, api::kConditionPreempted, ConditionStatus::kTrue)
          ? api::JobPhase::kPreempted
          : api::JobPhase::kPlanned;
  SetCondition(ctx, api::kConditionPlaced, ConditionStatus::kFalse, "PlacementConflict", conflict);
  internal::ReleaseReservation(ctx);
  WAVEPOOL_RETURN_IF_ERROR(internal::WriteStatus(ctx));
  ReconcileResult result;
  result.requeue_after = std::chrono::nanoseconds(0);
  return result;
}

// Steps 6 to 8, once the job is planned.
absl::StatusOr<ReconcileResult> ReconcileGang(ReconcileContext& ctx, const JobPlan& plan,
                                              const std::vector<kube::Pod>& pods,
                                              const internal::GpuNodeList& node_list) {
  const std::vector<api::GpuNode>& nodes = *node_list;
  // Step 6: the current gang.
  if (!ctx.job.status.placement.empty()) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<ReconcileResult> observed,
                              internal::ObserveGang(ctx, pods, node_list));
    if (observed.has_value()) return *observed;
  }
  WAVEPOOL_RETURN_IF_ERROR(DeleteOldGangs(ctx, pods));
  if (!ctx.job.status.placement.empty()) {
    // Another fg pod on one of this gang's GPUs (placed by a controller that could not see it):
    // the younger gang yields rather than both running slowed down and out of memory.
    if (std::optional<std::string> clash = internal::ForegroundGpuClash(ctx, pods)) {
      internal::QueueEvent(ctx, /*warning=*/true, internal::kReasonGpuConflict, *clash);
      if (ctx.metrics != nullptr) ctx.metrics->CountPlacementConflict("foreground_clash");
      return PlaceAfresh(ctx, pods, *clash);
    }
    if (std::optional<std::string> conflict =
            internal::RecordedPlacementConflict(ctx, plan, pods, node_list)) {
      if (ctx.metrics != nullptr) ctx.metrics->CountPlacementConflict("recorded_placement");
      return PlaceAfresh(ctx, pods, *conflict);
    }
  }
  // Step 7: no gang yet.
  if (ctx.job.status.placement.empty()) {
    if (std::optional<ReconcileResult> wait = BackoffWait(ctx)) {
      WAVEPOOL_RETURN_IF_ERROR(internal::WriteStatus(ctx));
      return *wait;
    }
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<ReconcileResult> placed,
                              internal::PlaceJob(ctx, plan, node_list));
    if (placed.has_value()) {
      WAVEPOOL_RETURN_IF_ERROR(internal::WriteStatus(ctx));
      return *placed;
    }
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<internal::RejectedPod> rejected,
                            internal::CreateMissingPods(ctx, plan, pods, nodes));
  if (rejected.has_value()) {
    // The spec's fault, not the cluster's: the job fails for this generation (step 2 keeps it so).
    WAVEPOOL_RETURN_IF_ERROR(internal::FailRejectedPod(ctx, *rejected));
    return ReconcileResult{};
  }
  if (internal::ConditionIs(ctx, api::kConditionPreempted, ConditionStatus::kTrue)) {
    // Only now: a job placed again but whose pods could not be created is still preempted.
    SetCondition(ctx, api::kConditionPreempted, ConditionStatus::kFalse, "Resumed",
                 absl::StrCat("placed again (gang generation ", ctx.job.status.gang_generation,
                              "); resumes from its checkpoint"));
  }
  ReconcileResult result = ReportGang(ctx, pods);
  WAVEPOOL_RETURN_IF_ERROR(internal::WriteStatus(ctx));
  return result;
}

}  // namespace

Reconciler::Reconciler(const ClusterReader& reader, ClusterWriter& writer,
                       ReconcilerOptions options, ControllerMetrics* metrics)
    : state_(new State{reader, writer, std::move(options), metrics, {}, {}}) {
  if (state_->options.clock == nullptr) state_->options.clock = &RealClock();
}

Reconciler::~Reconciler() = default;

absl::StatusOr<ReconcileResult> Reconciler::Reconcile(std::string_view ns, std::string_view name) {
  State& s = *state_;
  std::optional<api::TrainingJob> read = s.reader.GetJob(ns, name);
  ReconcileContext ctx{
      s.reader,  s.writer, s.options,
      s.metrics, s.ledger, api::ObjectKey{std::string(ns), std::string(name)}.ToString(),
      {},        {},       {},
      {},        false,    {}};
  // Step 1: gone or going; garbage collection removes what it owned.
  if (!read.has_value() || !read->metadata.deletion_timestamp.empty()) {
    internal::ForgetJob(s.ledger, ctx.key);
    s.ledger.quarantine.Forget(ctx.key);
    return ReconcileResult{};
  }
  ctx.now = s.options.clock->WallNow();
  ctx.stored_status = internal::StatusJson(*read);
  ctx.job = std::move(*read);
  ctx.versions.push_back(ctx.job.metadata.resource_version);
  api::SetDefaults(&ctx.job);
  if (std::optional<internal::SpecProblem> problem = CheckSpec(ctx)) {
    WAVEPOOL_RETURN_IF_ERROR(internal::HoldNothing(ctx, problem->reason));
    return ReconcileResult{};
  }
  RestartFinishedAtOlderGeneration(ctx);
  if (Finished(ctx.job)) {
    WAVEPOOL_RETURN_IF_ERROR(internal::WriteStatus(ctx));
    return ReconcileResult{};
  }
  // Only the pods whose controller ownerReference is this job's uid (reconcile_ownership.cpp).
  const std::vector<kube::Pod> pods =
      internal::SplitJobPods(ctx, s.reader.PodsOfJob(ns, name)).owned;
  if (ctx.job.spec.suspend.value_or(false)) return Suspend(ctx, pods);
  if (ctx.job.status.phase == api::JobPhase::kSuspended) {  // Resumed: a fresh gang.
    ctx.job.status.phase = api::JobPhase::kPending;
    ++ctx.job.status.gang_generation;
  }
  if (!ctx.job.status.phase.has_value()) ctx.job.status.phase = api::JobPhase::kPending;
  const internal::GpuNodeList screened = internal::ScreenedGpuNodes(ctx);
  WAVEPOOL_ASSIGN_OR_RETURN(internal::PlanOutcome planned,
                            internal::PlanAndStore(ctx, s.plans, screened));
  if (planned.wait.has_value()) {
    WAVEPOOL_RETURN_IF_ERROR(internal::WriteStatus(ctx));
    return *planned.wait;
  }
  const JobPlan& plan = *planned.plan;
  if (ctx.job.status.phase == api::JobPhase::kPending) {
    ctx.job.status.phase = api::JobPhase::kPlanned;
  }
  return ReconcileGang(ctx, plan, pods, screened);
}

}  // namespace wavepool::controller
