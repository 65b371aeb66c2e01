// ControllerManager's state, shared by manager.cpp (creation, start, stop, the public
// accessors) and manager_workers.cpp (event handlers, work queue, workers, endpoints). Internal
// to the controller library.
#ifndef WAVEPOOL_CONTROLLER_SRC_MANAGER_MANAGER_IMPL_H_
#define WAVEPOOL_CONTROLLER_SRC_MANAGER_MANAGER_IMPL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "http/http_endpoints.h"
#include "nlohmann/json.hpp"
#include "reconcile/heartbeat_observations.h"
#include "wavepool/controller/kube_cluster.h"
#include "wavepool/controller/manager.h"
#include "wavepool/kube/leader_election.h"
#include "wavepool/kube/work_queue.h"

namespace wavepool::controller {

struct ControllerManager::Impl {
  Impl(kube::Client& client_in, ManagerOptions options_in)
      : client(client_in), options(std::move(options_in)), clock(*options.clock) {}

  void Log(std::string_view message) const {
    if (options.log) {
      options.log(message);
    } else {
      std::cerr << "wavepool-controller: " << message << std::endl;
    }
  }

  absl::Status Init();
  void AddHandlers();
  internal::HttpAnswer Answer(std::string_view path);

  // Keys.
  void Enqueue(const std::string& key);
  void EnqueueOwner(const nlohmann::json& object);
  void EnqueueWaiting();
  void EnqueueJobsOnNode(const std::string& node);
  // A GPUNode update: waiting jobs are requeued when its heartbeat moves again after going
  // stale (its GPUs take pods again), not at their periodic retry.
  void OnGpuNodeHeartbeat(const nlohmann::json& old_node, const nlohmann::json& node);
  // An informer's first list is in (its on_synced): sets caches_synced once all have.
  void OnInformerSynced();

  // Leader election's readiness (/readyz): "" when ready, else why not. Checks the Lease's
  // namespace while no leader has been seen, and logs the problem once.
  std::string LeaderElectionProblem();

  // Workers, for one term of leadership (or the whole run without leader election).
  void RunWorkers();
  void StopWorkers();
  void WorkerLoop(kube::WorkQueue& queue);
  void Process(kube::WorkQueue& queue, const std::string& key);
  void HousekeepingLoop();
  void RefreshGauges();

  kube::Client& client;
  const ManagerOptions options;
  Clock& clock;
  ControllerMetrics metrics;
  std::unique_ptr<KubeCluster> cluster;
  std::unique_ptr<Reconciler> reconciler;
  std::unique_ptr<kube::LeaderElector> elector;
  std::unique_ptr<net::ShortRequestServer> http;

  // Events that may have freed GPUs; a reconcile that ends waiting for GPUs while this moved
  // is retried at once instead of missing the event.
  std::atomic<std::uint64_t> gpus_freed{0};

  // The housekeeping loop waits on mu for stop.
  mutable absl::Mutex mu;
  bool started ABSL_GUARDED_BY(mu) = false;
  bool stopped ABSL_GUARDED_BY(mu) = false;
  // This term's; null while not leading.
  std::shared_ptr<kube::WorkQueue> queue ABSL_GUARDED_BY(mu);
  std::vector<std::thread> workers ABSL_GUARDED_BY(mu);
  std::set<std::string> waiting ABSL_GUARDED_BY(mu);  // jobs waiting for GPUs
  // Jobs deleted (or being deleted) whose next reconcile frees their reserved or nominated GPUs:
  // waiting jobs are requeued once it has run.
  std::set<std::string> deleted ABSL_GUARDED_BY(mu);
  std::string lease_problem ABSL_GUARDED_BY(mu);  // the last leader election problem logged
  // Every informer has listed once; workers wait for it before their first Get (WorkerLoop).
  bool caches_synced ABSL_GUARDED_BY(mu) = false;
  int active ABSL_GUARDED_BY(mu) = 0;  // reconciles running
  int in_get ABSL_GUARDED_BY(mu) = 0;  // workers asking the queue for a key

  // No key queued, no reconcile running and every worker waiting for a key (WaitForIdle).
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return queue == nullptr ||
           (queue->Len() == 0 && active == 0 && in_get == static_cast<int>(workers.size()));
  }
  bool Busy() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return !Idle(); }
  std::thread housekeeping;
  // When each GPUNode's heartbeat was last seen to change (the reconciler keeps its own).
  internal::HeartbeatObservations heartbeats;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_SRC_MANAGER_MANAGER_IMPL_H_
