// The controller process's core, what `wavepool-controller` runs: informers on TrainingJobs,
// controller-owned Pods, ConfigMaps, GPUNodes and Nodes; a rate-limited work queue of job keys
// fed by their events (a pod's or ConfigMap's event enqueues its owning job; a GPUNode or Node
// event, or a pod that frees GPUs, enqueues the jobs waiting for GPUs); worker threads calling
// Reconciler::Reconcile; leader election on a Lease so that with several replicas only the
// holder reconciles (the others keep their caches warm and take over when the lease expires);
// health and readiness endpoints and the Prometheus metrics over HTTP.
//
//   ASSIGN_OR_RETURN(auto manager, ControllerManager::Create(client, options));
//   manager->Start();         // returns at once; Stop() or the destructor ends everything
//
// Endpoints (options.http_port, 0 for an ephemeral one; http_port() tells which):
//   GET /healthz  200 "ok" while the process's threads run (liveness)
//   GET /readyz   200 "ok" once the caches have synced and this replica either leads or is a
//                 warm standby; 503 with the reason otherwise (readiness)
//   GET /metrics  the Prometheus text format (ControllerMetrics plus process metrics)
//
// Thread-safe. `client` and options.clock outlive the manager.
#ifndef WAVEPOOL_CONTROLLER_MANAGER_H_
#define WAVEPOOL_CONTROLLER_MANAGER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/base/clock.h"
#include "wavepool/controller/metrics.h"
#include "wavepool/controller/reconciler.h"
#include "wavepool/kube/client.h"

namespace wavepool::controller {

struct ManagerOptions {
  ReconcilerOptions reconciler;
  int workers = 4;
  // Only jobs in this namespace; empty: every namespace.
  std::string watch_namespace;
  // Leader election; disabled for a single replica started with --leader-elect=false.
  bool leader_elect = true;
  std::string lease_namespace = "wavepool-system";
  std::string lease_name = "wavepool-controller";
  std::string identity;  // the pod name; empty: hostname + random suffix
  std::chrono::nanoseconds lease_duration = std::chrono::seconds(15);
  std::chrono::nanoseconds renew_deadline = std::chrono::seconds(10);
  std::chrono::nanoseconds retry_period = std::chrono::seconds(2);
  // Health, readiness and metrics; -1: no HTTP server (tests).
  int http_port = 8080;
  std::string http_address = "0.0.0.0";
  // Every job is looked at again this often even without events (catches anything a lost watch
  // event hid); 0: never.
  std::chrono::nanoseconds resync_period = std::chrono::minutes(10);
  // Re-list and re-watch retries of the informers.
  std::chrono::nanoseconds informer_initial_backoff = std::chrono::milliseconds(800);
  std::chrono::nanoseconds informer_max_backoff = std::chrono::seconds(30);
  // Every wait, timer and timestamp of the manager: its cluster cache, work queue, leader
  // election and reconciler (which therefore leaves reconciler.clock unset).
  Clock* clock = &RealClock();
  std::function<void(std::string_view)> log;  // empty: standard error
};

// InvalidArgument naming the option (and its wavepool-controller flag) for workers < 1, a port
// outside [-1, 65535], a --namespace or --lease-namespace that is not a DNS-1123 label, a
// --lease-name that is not a DNS-1123 subdomain (with leader election), a --default-device the
// planner does not know, or pod options (ValidateOwnedObjectOptions) and template policy options
// (ValidateTemplatePolicyOptions) that every job's pods would fail on. Touches no cluster: the
// binary calls it before it connects.
absl::Status ValidateManagerOptions(const ManagerOptions& options);

class ControllerManager {
 public:
  // ValidateManagerOptions' errors, or lease timings leader election rejects.
  static absl::StatusOr<std::unique_ptr<ControllerManager>> Create(kube::Client& client,
                                                                   ManagerOptions options);
  ~ControllerManager();
  ControllerManager(const ControllerManager&) = delete;
  ControllerManager& operator=(const ControllerManager&) = delete;

  // Starts the informers, the HTTP server and leader election (or the workers at once without
  // it). Errors when the HTTP port cannot be bound. Call once.
  absl::Status Start();
  // Stops the workers (a reconcile in progress finishes), releases the lease, stops the
  // informers and the HTTP server. Idempotent.
  void Stop();

  // Blocks until the caches have synced or `timeout` passes; false on timeout.
  bool WaitForSync(std::chrono::nanoseconds timeout) const;
  // True while this replica holds the lease (always true without leader election once started).
  bool IsLeader() const;
  // Blocks until the work queue is empty and no reconcile runs, or `timeout` passes (tests and
  // benchmarks: "the controller has caught up").
  bool WaitForIdle(std::chrono::nanoseconds timeout) const;
  // The port the HTTP server listens on; -1 without one.
  int http_port() const;
  ControllerMetrics& metrics();

 private:
  struct Impl;
  explicit ControllerManager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_MANAGER_H_
