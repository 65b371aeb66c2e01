// ControllerManager's state, shared by manager.cpp (creation, start, stop, the public
// accessors) and manager_workers.cpp (event handlers, work queue, workers, endpoints). Internal
// to the controller library.
#ifndef WAVEPOOL_CONTROLLER_SRC_MANAGER_IMPL_H_
#define WAVEPOOL_CONTROLLER_SRC_MANAGER_IMPL_H_

#include <atomic>
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
  int active = 0;                          // guarded by mu: reconciles running
  int in_get = 0;                          // guarded by mu: workers asking the queue for a key
  std::thread housekeeping;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_SRC_MANAGER_IMPL_H_
