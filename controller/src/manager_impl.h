// ControllerManager's state, shared by manager.cpp (creation, start, stop, the public
// accessors) and manager_workers.cpp (event handlers, work queue, workers, endpoints). Internal
// to the controller library.
#ifndef WAVEPOOL_CONTROLLER_SRC_MANAGER_IMPL_H_
#define WAVEPOOL_CONTROLLER_SRC_MANAGER_IMPL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "heartbeat_observations.h"
#include "http_endpoints.h"
#include "nlohmann/json.hpp"
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
  std::chrono::system_clock::time_point WallNow() const;

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
  std::unique_ptr<internal::HttpEndpoints> http;

  // Events that may have freed GPUs; a reconcile that ends waiting for GPUs while this moved
  // is retried at once instead of missing the event.
  std::atomic<std::uint64_t> gpus_freed{0};

  mutable std::mutex mu;
  std::condition_variable cv;              // stop, housekeeping
  bool started = false;                    // guarded by mu
  bool stopped = false;                    // guarded by mu
  std::shared_ptr<kube::WorkQueue> queue;  // guarded by mu: this term's; null while not leading
  std::vector<std::thread> workers;        // guarded by mu
  std::set<std::string> waiting;           // guarded by mu: jobs waiting for GPUs
  // Jobs deleted (or being deleted) whose next reconcile frees their reserved or nominated GPUs:
  // waiting jobs are requeued once it has run.
  std::set<std::string> deleted;  // guarded by mu
  std::string lease_problem;      // guarded by mu: the last leader election problem logged
  int active = 0;                 // guarded by mu: reconciles running
  int in_get = 0;                 // guarded by mu: workers asking the queue for a key
  std::thread housekeeping;
  // When each GPUNode's heartbeat was last seen to change (the reconciler keeps its own).
  internal::HeartbeatObservations heartbeats;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_SRC_MANAGER_IMPL_H_
