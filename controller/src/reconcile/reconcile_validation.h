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

struct SpecProblem {
  std::string reason;   // InvalidSpec, a template_policy.h reason, or UnknownModel.
  std::string message;  // Names the field: "spec.template.spec.hostPID: must be false ...".
};

// The first problem of `job` (defaulted), in order: api::Validate (reason InvalidSpec), the
// template policy of options.template_policy with options.objects.default_image
// (CheckPodTemplate), then spec.model.name unknown to the planner (UnknownModel). nullopt when
// the job may be planned.
std::optional<SpecProblem> FindSpecProblem(const api::TrainingJob& job,
                                           const ReconcilerOptions& options);

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
