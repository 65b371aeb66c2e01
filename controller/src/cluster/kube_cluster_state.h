// KubeCluster's state, shared by kube_cluster.cpp (informers, caches, reads) and
// kube_cluster_writer.cpp (writes). Internal to the controller library.
#ifndef WAVEPOOL_CONTROLLER_SRC_CLUSTER_KUBE_CLUSTER_STATE_H_
#define WAVEPOOL_CONTROLLER_SRC_CLUSTER_KUBE_CLUSTER_STATE_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cluster/decoded_cache.h"
#include "cluster/gpu_node_cache.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/training_job.h"
#include "wavepool/base/clock.h"
#include "wavepool/controller/gpu_claims.h"
#include "wavepool/controller/kube_cluster.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/event_recorder.h"
#include "wavepool/kube/informer.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller::internal {

// Services, which kube/resource.h does not list: only the controller makes them (the gangs'
// rendezvous Services).
inline const kube::ResourceType kServices{"", "v1", "Service", "services", true};

}  // namespace wavepool::controller::internal

namespace wavepool::controller {

struct KubeCluster::State {
  State(kube::Client& client_in, KubeClusterOptions options_in);

  void Log(std::string_view message) const;

  kube::Client& client;
  const KubeClusterOptions options;
  Clock& clock;
  kube::SharedInformer jobs;
  kube::SharedInformer pods;
  kube::SharedInformer config_maps;
  kube::SharedInformer services;
  kube::SharedInformer gpu_nodes;
  kube::SharedInformer nodes;
  internal::DecodedCache<api::TrainingJob> job_cache;
  internal::GpuNodeCache gpu_node_cache;
  internal::DecodedCache<kube::Pod> job_pods;
  internal::DecodedCache<kube::Service> job_services;
  // The pods' GPUs (held and assumed), kept from pod events and CreatePod (gpu_claims.h).
  GpuClaims claims;
  std::unique_ptr<kube::EventRecorder> recorder;

  absl::Mutex mu;
  bool started ABSL_GUARDED_BY(mu) = false;
  bool stopped ABSL_GUARDED_BY(mu) = false;
  // NodeStateFromNode of every cached Node, by name, kept from the Node informer's events.
  std::map<std::string, NodeState> node_states ABSL_GUARDED_BY(mu);
  // node_states as handed out (SharedNodeStates), copied once after each change; null: stale.
  NodeStateMap node_states_snapshot ABSL_GUARDED_BY(mu);
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_SRC_CLUSTER_KUBE_CLUSTER_STATE_H_
