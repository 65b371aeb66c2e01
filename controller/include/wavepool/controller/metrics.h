// The controller's Prometheus metrics (prefix wavepool_controller_, base units, counters end in
// _total). docs/controller.md lists them with example queries.
//
//   wavepool_controller_reconciles_total{result}            counter: success, requeue, conflict,
//                                                            error
//   wavepool_controller_reconcile_errors_total{code}         counter: absl status code name
//   wavepool_controller_reconcile_duration_seconds           histogram
//   wavepool_controller_queue_depth                          gauge: keys waiting in the queue
//   wavepool_controller_plan_duration_seconds                histogram: one PlanJob call
//   wavepool_controller_placement_duration_seconds{role}     histogram: one placement decision
//   wavepool_controller_placement_latency_seconds{role}      histogram: job created -> placed
//   wavepool_controller_placement_failures_total{role,reason} counter: not_placeable, error
//   wavepool_controller_placement_conflicts_total{reason}   counter: gangs placed afresh:
//                                                            foreground_clash,
//                                                            recorded_placement
//   wavepool_controller_preemptions_total                    counter: bg pods preempted
//   wavepool_controller_gang_restarts_total{reason}          counter: pod_failed, node_lost,
//                                                            pod_deleted, heartbeat_lost,
//                                                            start_timeout
//   wavepool_controller_jobs{phase}                          gauge: jobs by status.phase
//   wavepool_controller_leader                               gauge: 1 while this replica leads
//
// Thread-safe (prometheus-cpp's metrics are atomics).
#ifndef WAVEPOOL_CONTROLLER_METRICS_H_
#define WAVEPOOL_CONTROLLER_METRICS_H_

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "wavepool/api/enums.h"
#include "wavepool/base/seconds.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace wavepool::controller {

// How one reconcile ended, for wavepool_controller_reconciles_total.
enum class ReconcileOutcome { kSuccess, kRequeue, kConflict, kError };
std::string_view ToString(ReconcileOutcome outcome);

class ControllerMetrics {
 public:
  ControllerMetrics();
  ~ControllerMetrics();
  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;

  // The registry to expose (prometheus::Exposer::RegisterCollectable) or serialise.
  std::shared_ptr<prometheus::Registry> registry() const;

  // One reconcile: its outcome, duration and, for kError/kConflict, the status behind it.
  void ObserveReconcile(ReconcileOutcome outcome, Seconds duration,
                        const absl::Status& error = absl::OkStatus());
  void SetQueueDepth(std::size_t depth);
  void ObservePlan(Seconds duration);
  void ObservePlacementDecision(api::Role role, Seconds duration);
  void ObservePlacementLatency(api::Role role, Seconds since_creation);
  // reason: "not_placeable" (waits for GPUs) or "error".
  void CountPlacementFailure(api::Role role, std::string_view reason);
  // A placed gang placed afresh. reason: "foreground_clash" (another foreground pod on one of
  // its GPUs) or "recorded_placement" (its recorded placement no longer fits the cluster).
  void CountPlacementConflict(std::string_view reason);
  void CountPreemption();
  // reason: "pod_failed", "node_lost", "heartbeat_lost", "pod_deleted", "start_timeout".
  void CountGangRestart(std::string_view reason);
  // Replaces the per-phase job counts (phases absent from `counts` read 0).
  void SetJobsByPhase(const std::map<std::string, std::size_t>& counts);
  void SetLeader(bool leading);

  // The text exposition format of every metric (tests, and /metrics without an Exposer).
  std::string Serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_METRICS_H_
