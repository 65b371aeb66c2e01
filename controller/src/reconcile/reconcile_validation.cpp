// Step 2 of a reconcile: validation before planning and placement (reconcile_validation.h).
#include "reconcile/reconcile_validation.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "template_policy/template_policy_internal.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/base/truncate.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/controller/template_policy.h"
#include "wavepool/planner/names.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::controller::internal {
namespace {

// How much of the API server's message a condition repeats: the server may list every cause, and
// a condition message must stay within the CRD's 32768 characters.
constexpr std::size_t kMaxServerMessageBytes = 2048;

// The Invalid condition FailRejectedPod recorded at the job's current generation, if any.
std::optional<SpecProblem> RejectedAtThisGeneration(const api::TrainingJob& job) {
  const api::Condition* invalid = api::FindCondition(job.status.conditions, api::kConditionInvalid);
  if (invalid == nullptr || invalid->status != api::ConditionStatus::kTrue ||
      invalid->reason != kReasonPodRejected ||
      invalid->observed_generation != job.metadata.generation) {
    return std::nullopt;
  }
  return SpecProblem{invalid->reason, invalid->message};
}

// The planner's NotFound message (known names, a suggestion) for a model it does not know.
std::optional<std::string> UnknownModel(const std::string& name) {
  // The common case without building a model graph: a catalog name as typed.
  for (const std::string& known : planner::BuiltinModelNames()) {
    if (planner::SameName(known, name)) return std::nullopt;
  }
  absl::StatusOr<planner::ModelGraph> model = planner::BuiltinModel(name);  // Aliases.
  if (model.ok() || model.status().code() != absl::StatusCode::kNotFound) return std::nullopt;
  return std::string(model.status().message());
}

}  // namespace

std::optional<SpecProblem> FindSpecProblem(const api::TrainingJob& job,
                                           const ReconcilerOptions& options) {
  if (const absl::Status valid = api::Validate(job); !valid.ok()) {
    return SpecProblem{std::string(kReasonInvalidSpec), std::string(valid.message())};
  }
  if (std::optional<TemplateViolation> violation =
          CheckPodTemplate(job, options.template_policy, options.objects.default_image)) {
    return SpecProblem{std::string(violation->reason), std::move(violation->message)};
  }
  if (job.spec.checkpoint.path.has_value()) {
    if (const absl::Status mount =
            CheckCheckpointMountPath(*job.spec.checkpoint.path, options.objects);
        !mount.ok()) {
      return SpecProblem{std::string(kReasonInvalidSpec), std::string(mount.message())};
    }
  }
  if (job.spec.model.name.has_value()) {
    if (std::optional<std::string> unknown = UnknownModel(*job.spec.model.name)) {
      return SpecProblem{std::string(kReasonUnknownModel),
                         absl::StrCat("spec.model.name: ", *unknown)};
    }
  }
  return RejectedAtThisGeneration(job);
}

void MarkInvalid(ReconcileContext& ctx, const SpecProblem& problem) {
  const api::Condition* before =
      api::FindCondition(ctx.job.status.conditions, api::kConditionInvalid);
  const bool news = before == nullptr || before->status != api::ConditionStatus::kTrue ||
                    before->message != problem.message;
  ctx.job.status.phase = api::JobPhase::kFailed;
  SetCondition(ctx, api::kConditionInvalid, api::ConditionStatus::kTrue, problem.reason,
               problem.message);
  if (news) QueueEvent(ctx, /*warning=*/true, problem.reason, problem.message);
}

absl::Status FailRejectedPod(ReconcileContext& ctx, const RejectedPod& rejected) {
  MarkInvalid(ctx,
              SpecProblem{std::string(kReasonPodRejected),
                          absl::StrCat("spec.template: the API server refused pod ", ctx.ns(), "/",
                                       rejected.pod, " as invalid: ",
                                       Truncate(rejected.message, kMaxServerMessageBytes),
                                       "; the job is not placed again until its spec changes")});
  return HoldNothing(ctx, kReasonPodRejected);
}

absl::Status HoldNothing(ReconcileContext& ctx, std::string_view reason) {
  if (!ctx.job.status.placement.empty()) {
    // Its pods go now; a fixed spec must not meet them (still terminating) under its names.
    ctx.job.status.placement.clear();
    ++ctx.job.status.gang_generation;
  }
  for (std::string_view type : {api::kConditionPlaced, api::kConditionRunning}) {
    if (ConditionIs(ctx, type, api::ConditionStatus::kTrue)) {
      SetCondition(ctx, type, api::ConditionStatus::kFalse, reason,
                   "the spec is invalid (see the Invalid condition): the job holds no GPUs");
    }
  }
  WAVEPOOL_RETURN_IF_ERROR(WriteStatus(ctx));
  const std::vector<kube::Pod> pods = ctx.reader.PodsOfJob(ctx.ns(), ctx.name());
  WAVEPOOL_RETURN_IF_ERROR(DeletePods(ctx, pods, /*keep_finished=*/true));
  WAVEPOOL_RETURN_IF_ERROR(DeleteGangServices(ctx, std::nullopt));
  ForgetJob(ctx.ledger, ctx.key);
  return absl::OkStatus();
}

}  // namespace wavepool::controller::internal
