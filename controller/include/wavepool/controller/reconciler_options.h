// What a Reconciler (reconciler.h) is configured with and what one reconcile returns, apart
// from the Reconciler itself, so that the reconcile steps (controller/src/reconcile/) depend on
// these and not on the class that calls them.
#ifndef WAVEPOOL_CONTROLLER_RECONCILER_OPTIONS_H_
#define WAVEPOOL_CONTROLLER_RECONCILER_OPTIONS_H_

#include <chrono>
#include <optional>
#include <string>

#include "wavepool/base/clock.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/controller/placement.h"
#include "wavepool/controller/template_policy.h"

namespace wavepool::controller {

struct ReconcilerOptions {
  OwnedObjectOptions objects;
  PlacementOptions placement;
  // What a job's pod template may contain beyond the built-in list (template_policy.h).
  TemplatePolicyOptions template_policy;
  // The planner's device when no GPUNode names a known GPU model (PlanningDevice).
  std::string default_device = "h100";
  // A GPUNode whose heartbeatTime the controller has not seen change for this long (on its own
  // clock: the node's clock never enters) is stale: its GPUs take no new pods, and the pods on
  // them are treated as lost.
  std::chrono::seconds heartbeat_timeout{60};
  // How long a pod may stay bound but not Running (image pulls, a kubelet that never starts it)
  // before its gang is restarted elsewhere. 0: never.
  std::chrono::seconds start_timeout{600};
  // When a job waiting for GPUs is looked at again without any event (the manager also requeues
  // waiting jobs whenever GPUs are freed).
  std::chrono::seconds waiting_requeue{30};
  // Delay before the next gang after a failure: backoff_base x 2^(restarts-1), capped.
  std::chrono::seconds restart_backoff_base{10};
  std::chrono::seconds restart_backoff_max{360};
  // A background job whose pod a GPUNode's BackgroundCheating condition names (its worker used
  // the GPU beyond what its launch gate allowed) is restarted elsewhere, the restart counted
  // against spec.backoffLimit, and kept off that node for this long.
  std::chrono::seconds cheating_quarantine{600};
  // Monotonic time for durations (metrics); wall time (WallNow) for condition timestamps,
  // heartbeat ages, start timeouts and backoffs. Outlives the reconciler. A ControllerManager
  // passes its own (ManagerOptions::clock).
  Clock* clock = &RealClock();
};

struct ReconcileResult {
  // Look at the job again after this long even if nothing changes (waiting for GPUs, for
  // preempted pods to go, for a backoff to pass, for a heartbeat to go stale).
  std::optional<std::chrono::nanoseconds> requeue_after;
  // The job waits for GPUs (Placed=False): the manager retries it when GPUs are freed.
  bool waiting_for_gpus = false;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_RECONCILER_OPTIONS_H_
