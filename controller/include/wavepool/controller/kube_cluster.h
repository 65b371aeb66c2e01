// ClusterReader and ClusterWriter on a real API server: reads come from informer caches
// (kube::SharedInformer stores), writes go through kube::Client, Events through
// kube::EventRecorder. This is what the controller process runs the Reconciler against
// (manager.h); unit tests of the reconcile logic use an in-memory fake instead.
//
// Informers (one each; all namespaces, or options.watch_namespace for the namespaced ones):
//   TrainingJobs   every job, decoded once per resourceVersion (GetJob, ListJobs), indexed
//                  by status.phase (ForEachJobInPhase)
//   Pods           labelled app.kubernetes.io/managed-by=wavepool-controller, indexed by
//                  namespace + wavepool.dev/job label (PodsOfJob)
//   ConfigMaps     every ConfigMap (the Plan ConfigMaps and the layer tables jobs reference)
//   Services       labelled app.kubernetes.io/managed-by=wavepool-controller (the gangs'
//                  rendezvous Services), indexed like the pods (ServicesOfJob)
//   GPUNodes       decoded once per resourceVersion (ListGpuNodes, GetGpuNode), indexed by
//                  the jobs of their tasks (GpuNodesWithTasksOf); their placement parts
//                  listed in one shared copy per change to one (GpuNodes), their heartbeat
//                  times as changes since a version (GpuNodeHeartbeatsSince)
//   Nodes          Ready condition and wavepool.dev/managed label, kept per Node from its
//                  events (NodeStates)
//
// Assignments() is kept incrementally in a GpuClaims (gpu_claims.h): AssignmentFromPod per pod,
// updated by the pod informer's events, so a call copies it instead of parsing every pod. A pod
// created through CreatePod is "assumed" (its GPUs count at once) until the pod informer shows that
// incarnation (uid) or `assume_timeout` passes, whichever comes first; the timeout bounds what
// a pod deleted before the cache ever saw it can hold. That is what keeps two reconciles that
// run back to back from giving one GPU to two pods while the watch is behind.
//
// Thread-safe. Handlers the caller adds to the informers (informers()) run after KubeCluster's
// own on the same informer thread, so a handler that enqueues a job key is never ahead of the
// GpuClaims and the decoded caches. `client` and options.clock outlive the KubeCluster.
#ifndef WAVEPOOL_CONTROLLER_KUBE_CLUSTER_H_
#define WAVEPOOL_CONTROLLER_KUBE_CLUSTER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/base/clock.h"
#include "wavepool/controller/cluster.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/informer.h"

namespace wavepool::controller {

// The pod and Service informers' label selector: only objects this controller created.
inline constexpr std::string_view kManagedPodSelector =
    "app.kubernetes.io/managed-by=wavepool-controller";
// The Node label that marks a node whose GPUs wavepool manages (value "true").
inline constexpr std::string_view kManagedNodeLabel = "wavepool.dev/managed";
// The pod and Service stores' index: "<namespace>/<wavepool.dev/job label>".
inline constexpr char kJobPodIndex[] = "wavepool-job";

struct KubeClusterOptions {
  // Only TrainingJobs, Pods, ConfigMaps and Services of this namespace; empty: every namespace.
  std::string watch_namespace;
  // How long a pod from CreatePod counts without the cache having shown it.
  std::chrono::nanoseconds assume_timeout = std::chrono::seconds(30);
  // Re-delivers every cached TrainingJob as an update this often (informer resync); 0: never.
  std::chrono::nanoseconds job_resync_period{0};
  std::chrono::nanoseconds informer_initial_backoff = std::chrono::milliseconds(800);
  std::chrono::nanoseconds informer_max_backoff = std::chrono::seconds(30);
  // Events: source.component and source.host (the replica's identity).
  std::string event_component = "wavepool-controller";
  std::string event_host;
  Clock* clock = &RealClock();                // informer waits and assumed-pod expiry
  std::function<void(std::string_view)> log;  // empty: standard error
};

class KubeCluster final : public ClusterReader, public ClusterWriter {
 public:
  // The informers it reads, for callers that add handlers (before Start).
  struct Informers {
    kube::SharedInformer& jobs;
    kube::SharedInformer& pods;
    kube::SharedInformer& config_maps;
    kube::SharedInformer& services;
    kube::SharedInformer& gpu_nodes;
    kube::SharedInformer& nodes;
  };

  // Builds the informers (not yet running). InvalidArgument naming the option for a negative
  // assume_timeout or resync period, or backoffs that are not positive.
  static absl::StatusOr<std::unique_ptr<KubeCluster>> Create(kube::Client& client,
                                                             KubeClusterOptions options);
  ~KubeCluster() override;
  KubeCluster(const KubeCluster&) = delete;
  KubeCluster& operator=(const KubeCluster&) = delete;

  Informers informers();

  // Runs every informer; returns at once. Once only.
  void Start();
  // Stops the informers and writes the Events still queued. Idempotent.
  void Stop();
  // True once every informer has delivered its first list.
  bool HasSynced() const;
  // Waits until HasSynced or `timeout` passes on the clock; returns HasSynced().
  bool WaitForSync(std::chrono::nanoseconds timeout);
  // The informers that have not synced yet ("trainingjobs", "pods", "services", ...), for
  // /readyz.
  std::vector<std::string> UnsyncedInformers() const;

  // Pods created through CreatePod that the cache has not shown yet (tests, diagnostics).
  std::size_t AssumedPods() const;
  // Blocks until every queued Event was written (tests).
  void FlushEvents();

  // ClusterReader.
  std::optional<api::TrainingJob> GetJob(std::string_view ns, std::string_view name) const override;
  std::vector<api::TrainingJob> ListJobs() const override;
  void ForEachJob(const std::function<void(const api::TrainingJob&)>& visit) const override;
  void ForEachJobInPhase(api::JobPhase phase,
                         const std::function<void(const api::TrainingJob&)>& visit) const override;
  std::vector<kube::Pod> PodsOfJob(std::string_view ns, std::string_view job) const override;
  std::vector<kube::Service> ServicesOfJob(std::string_view ns,
                                           std::string_view job) const override;
  absl::StatusOr<std::optional<kube::ConfigMap>> GetConfigMap(std::string_view ns,
                                                              std::string_view name) const override;
  std::vector<api::GpuNode> ListGpuNodes() const override;
  std::optional<api::GpuNode> GetGpuNode(std::string_view name) const override;
  std::shared_ptr<const std::vector<api::GpuNode>> GpuNodes() const override;
  HeartbeatChanges GpuNodeHeartbeatsSince(std::uint64_t version) const override;
  std::vector<api::GpuNode> GpuNodesWithTasksOf(std::string_view ns,
                                                std::string_view job) const override;
  std::map<std::string, NodeState> NodeStates() const override;
  NodeStateMap SharedNodeStates() const override;
  std::vector<GpuAssignment> Assignments() const override;
  JobChanges JobChangesSince(std::uint64_t version) const override;
  AssignmentChanges AssignmentChangesSince(std::uint64_t version) const override;

  // ClusterWriter.
  absl::StatusOr<nlohmann::json> CreatePod(const nlohmann::json& pod) override;
  absl::Status DeletePod(std::string_view ns, std::string_view name, std::string_view uid,
                         std::optional<std::int64_t> grace_period_seconds) override;
  absl::Status AnnotatePod(std::string_view ns, std::string_view name,
                           const std::map<std::string, std::string>& annotations) override;
  absl::StatusOr<nlohmann::json> CreateService(const nlohmann::json& service) override;
  absl::Status DeleteService(std::string_view ns, std::string_view name,
                             std::string_view uid) override;
  absl::StatusOr<nlohmann::json> CreateConfigMap(const nlohmann::json& config_map) override;
  absl::StatusOr<nlohmann::json> UpdateConfigMap(const nlohmann::json& config_map) override;
  absl::StatusOr<api::TrainingJob> UpdateJobStatus(const api::TrainingJob& job) override;
  void RecordEvent(const api::TrainingJob& job, bool warning, std::string_view reason,
                   std::string_view message) override;
  absl::Status UpdateGpuNodeStatus(const api::GpuNode& node) override;
  void RecordGpuNodeEvent(const api::GpuNode& node, bool warning, std::string_view reason,
                          std::string_view message) override;

 private:
  struct State;
  explicit KubeCluster(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The Node's readiness and managed label as placement reads them (heartbeat_fresh left false).
NodeState NodeStateFromNode(const kube::Node& node);
// The same for a Node as the API server sends it, decoded first (kube::Node::FromJson). A Node
// that does not decode reads as not ready and not managed, so that nothing is placed on it;
// KubeCluster logs why (the Node and the field).
NodeState NodeStateFromNode(const nlohmann::json& node);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_KUBE_CLUSTER_H_
