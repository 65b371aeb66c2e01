// Step 2 of a reconcile (reconciler.h): whether the job may be planned and placed at all. Runs
// before planning and placement, so that a job that could never start (a bad spec, a template
// the policy refuses, an image that cannot be pulled, a model the planner does not know) fails
// at once and holds no GPU. Internal to the reconciler.
#ifndef WAVEPOOL_CONTROLLER_SRC_RECONCILE_RECONCILE_VALIDATION_H_
#define WAVEPOOL_CONTROLLER_SRC_RECONCILE_RECONCILE_VALIDATION_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/reconciler_options.h"

namespace wavepool::controller::internal {

// Reason of the Invalid condition for a spec.model.name the planner does not know.
inline constexpr std::string_view kReasonUnknownModel = "UnknownModel";
// Reason of the Invalid condition for a pod the API server refused as invalid (422) although the
// template policy let its template through: remembered for the generation it was seen at.
inline constexpr std::string_view kReasonPodRejected = "PodRejected";

struct SpecProblem {
  std::string reason;   // InvalidSpec, a template_policy.h reason, UnknownModel or PodRejected.
  std::string message;  // Names the field: "spec.template.spec.hostPID: must be false ...".
};

// The first problem of `job` (defaulted), in order: api::Validate (reason InvalidSpec), the
// template policy of options.template_policy with options.objects.default_image
// (CheckPodTemplate), spec.model.name unknown to the planner (UnknownModel), then a pod refused
// by the API server at this generation (Invalid=True, reason PodRejected, observedGeneration =
// metadata.generation: what FailRejectedPod recorded; only a new generation clears it, since
// nothing the controller can check says the server would take the pod now). nullopt when the
// job may be planned.
std::optional<SpecProblem> FindSpecProblem(const api::TrainingJob& job,
                                           const ReconcilerOptions& options);

// Records `problem` on the job: phase Failed, Invalid=True with its reason and message, and a
// Warning Event of that reason when the condition says something new (not on every look).
void MarkInvalid(ReconcileContext& ctx, const SpecProblem& problem);

// The job's pod `rejected` was refused by the API server as invalid: the job fails for this
// generation as for a refused template (phase Failed, Invalid=True with reason PodRejected and a
// message naming spec.template, the pod and the server's message, one Warning Event), then holds
// nothing (HoldNothing: its placement and reservation dropped, its pods and Services deleted).
// FindSpecProblem keeps it failed until metadata.generation moves on.
absl::Status FailRejectedPod(ReconcileContext& ctx, const RejectedPod& rejected)
    ABSL_LOCKS_EXCLUDED(ctx.ledger.mu);

// Makes a job found invalid hold nothing, after CheckSpec set phase Failed and Invalid=True
// with `reason`: its recorded placement is dropped (a later valid generation starts a new gang
// generation), Placed and Running turn False, the status is written, then its live pods are
// deleted (finished ones kept for their logs), its gangs' Services deleted, and its reservation,
// nomination and preemption memory forgotten. Idempotent: a second call with nothing changed
// writes nothing.
absl::Status HoldNothing(ReconcileContext& ctx, std::string_view reason)
    ABSL_LOCKS_EXCLUDED(ctx.ledger.mu);

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_RECONCILE_RECONCILE_VALIDATION_H_
