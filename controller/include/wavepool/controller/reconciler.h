// The TrainingJob reconciler: one call brings one job's owned objects and status in line with
// its spec and the cluster as observed. Level-based and idempotent: it decides from what it
// reads (ClusterReader), so a controller killed at any point and started again converges to the
// same pods, and a repeated call with nothing changed writes nothing. What it keeps in memory
// only sharpens decisions and is safe to lose: GPUs a preempting gang has nominated (placement
// re-derives the same choice) and which pods were preempted by whom (without it, a preempted pod
// already gone reads as lost, which restarts the job without counting). docs/controller.md walks
// through the loop.
//
// One call, in order:
//  1. The job is gone: nothing to do (garbage collection removes what it owned).
//  2. Defaults (api::SetDefaults) and validation, before anything is planned or placed:
//     api::Validate, the pod template policy (template_policy.h: forbidden fields, privilege,
//     host access, service accounts, GPU resources, images) and the model name. A job that fails
//     gets phase Failed, an Invalid condition whose reason names the kind of problem and a
//     Warning Event naming the field, holds no GPU (its pods, if any, are deleted) and is not
//     retried (a new generation, or a controller with a wider policy, looks at it afresh).
//  3. Finished (Succeeded/Failed at this generation): nothing more.
//  4. Suspended (spec.suspend, also how Kueue holds a job it has not admitted): its pods are
//     deleted gracefully and its gangs' Services deleted, phase Suspended; resuming places it
//     again.
//  5. Plan (JobPlanner), stored in the ConfigMap `<job>-plan` owned by the job; Planned=False
//     with the reason when the planner refuses.
//  6. The current gang (pods `<job>-g<status.gangGeneration>-<rank>`) is looked at: a failed
//     fg pod restarts the whole gang from its checkpoint (status.restarts and gangGeneration
//     raised first, then the old gang deleted), failing the job past spec.backoffLimit; a pod
//     lost with its node, its agent's heartbeat or deleted by someone restarts the gang without
//     counting; a preempted bg pod (annotated wavepool.dev/preempted-by before its deletion)
//     sets Preempted and is placed again once gone.
//  7. No gang yet: placement (placement.h) from the GPUNode inventory, recorded in
//     status.placement before any pod is created, so that a restart re-creates exactly the
//     recorded pods (create-if-absent) and a gang is never half-created; the gang's headless
//     Service (BuildGangService) is created before its first pod, and earlier generations'
//     pods and Services are deleted; a fg gang that must
//     preempt bg pods annotates and deletes them (with their grace period) and waits for them to
//     go. Placed=False says why a job waits. A pod the API server refuses as invalid (422) fails
//     the job as in step 2 (reason PodRejected), for this generation: a later look keeps it
//     failed until the spec changes.
//  8. Status from what was observed: phase, conditions (metav1.Condition semantics:
//     lastTransitionTime moves only when the status does), observedGeneration, plan summary,
//     placement, progress (JobProgress from the GPUNodes), restarts; Degraded when the observed
//     fg slowdown passes the SLO. Written only when it changed, with the read resourceVersion.
//
// Thread-safe: the manager calls it from several workers, never for one key at a time twice (the
// work queue guarantees it). Placement decisions are serialised inside, together with the
// assignments this controller has made but its cache has not shown yet, so two workers never
// give one GPU to two jobs.
#ifndef WAVEPOOL_CONTROLLER_RECONCILER_H_
#define WAVEPOOL_CONTROLLER_RECONCILER_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "wavepool/controller/cluster.h"
#include "wavepool/controller/metrics.h"
#include "wavepool/controller/reconciler_options.h"

namespace wavepool::controller {

class Reconciler {
 public:
  // `reader`, `writer` and `metrics` (may be null) outlive the reconciler.
  Reconciler(const ClusterReader& reader, ClusterWriter& writer, ReconcilerOptions options,
             ControllerMetrics* metrics = nullptr);
  ~Reconciler();
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  // Reconciles the job `ns`/`name`. An error (the API server's, e.g. Conflict on a stale status
  // write) means "retry with backoff"; everything the job's owner should know is in its status
  // and Events instead.
  absl::StatusOr<ReconcileResult> Reconcile(std::string_view ns, std::string_view name);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_RECONCILER_H_
