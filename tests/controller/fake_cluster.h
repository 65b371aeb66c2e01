// An in-memory cluster for reconciler unit tests: ClusterReader and ClusterWriter over JSON
// objects, with the API server's optimistic concurrency (resourceVersion bumped on every write,
// Conflict on a stale status write), its errors (AlreadyExists, NotFound, as kube::Client
// returns them), graceful deletion (deletionTimestamp until the "kubelet" finishes it), recorded
// Events and fault injection. Tests act as the kubelet and the node agents by editing pods,
// Node states and GPUNodes directly.
//
// Thread-safe: every method locks one mutex, so several reconcile workers may share one fake.
//
// Defined in fake_cluster.cpp (the store, the kubelet's edits, inspection, faults and the
// reads), fake_cluster_writes.cpp (ClusterWriter) and fake_scene.cpp (FakeScene and the helpers
// below it).
#ifndef WAVEPOOL_TESTS_CONTROLLER_FAKE_CLUSTER_H_
#define WAVEPOOL_TESTS_CONTROLLER_FAKE_CLUSTER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "tests/controller/pod_validation.h"
#include "tests/support/simulated_clock.h"
#include "wavepool/base/change_log.h"
#include "wavepool/base/clock.h"
#include "wavepool/controller/cluster.h"
#include "wavepool/controller/gpu_claims.h"
#include "wavepool/controller/reconciler.h"

namespace wavepool::controller {

class FakeCluster : public ClusterReader, public ClusterWriter {
 public:
  struct RecordedEvent {
    std::string object;  // "ns/name" of the job; "GPUNode/<name>" of a GPUNode.
    bool warning = false;
    std::string reason;
    std::string message;
  };

  // `clock`'s wall time stamps creation and deletion timestamps. REQUIRES: `clock` outlives the
  // fake.
  explicit FakeCluster(Clock& clock = RealClock());

  // --- Setting the scene ---
  // Stores the job with a uid, resourceVersion, generation 1 and creationTimestamp; returns it.
  api::TrainingJob AddJob(api::TrainingJob job);
  // Edits the spec as `kubectl edit` would: generation + 1. NotFound for an unknown job.
  absl::Status EditJob(std::string_view ns, std::string_view name,
                       const std::function<void(api::TrainingJob&)>& edit);
  void RemoveJob(std::string_view ns, std::string_view name);
  void PutConfigMap(nlohmann::json config_map);
  void RemoveConfigMap(std::string_view ns, std::string_view name);
  // Stores the GPUNode (as its agent publishes it) at a new resourceVersion.
  void PutGpuNode(api::GpuNode node);
  void SetNodeState(const std::string& node, NodeState state);

  // --- Acting as the kubelet ---
  // Sets status.phase; for "Failed" with an exit code, a terminated worker container status.
  absl::Status SetPodPhase(std::string_view ns, std::string_view name, std::string_view phase,
                           std::optional<int> exit_code = std::nullopt,
                           std::string_view reason = "");
  absl::Status EditPod(std::string_view ns, std::string_view name,
                       const std::function<void(nlohmann::json&)>& edit);
  // Removes a pod (a terminating one finishing, or someone deleting it with grace 0).
  void RemovePod(std::string_view ns, std::string_view name);
  // Removes every pod with a deletionTimestamp.
  void FinishTerminatingPods();

  // --- Inspecting ---
  std::optional<nlohmann::json> GetPod(std::string_view ns, std::string_view name) const;
  // Whether the pod exists with a deletionTimestamp (deleted, its grace period running).
  bool PodTerminating(std::string_view ns, std::string_view name) const;
  // The job as stored, whatever a frozen view shows. REQUIRES: the job exists.
  api::TrainingJob StoredJob(std::string_view ns, std::string_view name) const;
  std::vector<nlohmann::json> AllPods() const;      // Sorted by namespace/name.
  std::vector<nlohmann::json> AllServices() const;  // Sorted by namespace/name.
  // The ConfigMap as stored (JSON), nullopt when absent.
  std::optional<nlohmann::json> StoredConfigMap(std::string_view ns, std::string_view name) const;
  // Why each pod or Service left out of a PodsOfJob / ServicesOfJob read was, in read order.
  std::vector<std::string> DecodeWarnings() const;
  // Removes a Service (someone deleting it behind the controller's back).
  void RemoveService(std::string_view ns, std::string_view name);
  std::vector<RecordedEvent> Events() const;
  std::vector<RecordedEvent> EventsWithReason(std::string_view reason) const;
  std::int64_t writes() const;         // Successful writes of any kind (Events excluded).
  std::int64_t status_writes() const;  // Successful UpdateJobStatus calls.

  // --- Fault injection ---
  // The `n`-th write from now (1: the next one) fails with `status` and changes nothing.
  void FailNthWrite(int n, absl::Status status);
  // The next UpdateJobStatus that records a status.placement is applied, but its caller gets
  // `status`: the response lost with the connection.
  void LoseNextPlacementWriteResponse(absl::Status status);
  // From now on CreatePod shows each pod to `validation`, standing in for kube-apiserver's pod
  // validation (the test API server's checks end at metadata): a pod it refuses is not stored and
  // the caller gets 422 Invalid as the API server answers it (InvalidPodStatus).
  using PodValidation = std::function<std::optional<PodFieldError>(const nlohmann::json& pod)>;
  void ValidatePods(PodValidation validation);
  // CreatePod calls answered 422 by the validation so far.
  std::int64_t refused_pod_creations() const;
  // GetJob and ListJobs show the job as it is now until ThawJobView: an informer cache behind the
  // API server. Writes still go to (and are checked against) the stored job.
  void FreezeJobView(std::string_view ns, std::string_view name);
  void ThawJobView(std::string_view ns, std::string_view name);

  // ClusterReader.
  std::optional<api::TrainingJob> GetJob(std::string_view ns, std::string_view name) const override;
  std::vector<api::TrainingJob> ListJobs() const override;
  // Decoded from the stored JSON on every read, as KubeCluster decodes its cache: a pod or
  // Service that does not decode is left out and its error added to DecodeWarnings(); a
  // ConfigMap that does not decode is the error.
  std::vector<kube::Pod> PodsOfJob(std::string_view ns, std::string_view job) const override;
  std::vector<kube::Service> ServicesOfJob(std::string_view ns,
                                           std::string_view job) const override;
  absl::StatusOr<std::optional<kube::ConfigMap>> GetConfigMap(std::string_view ns,
                                                              std::string_view name) const override;
  std::vector<api::GpuNode> ListGpuNodes() const override;
  // As KubeCluster: the placement parts, the same list until one changes (a heartbeat does not),
  // and the heartbeat times as changes since a version. The other GPUNode reads are
  // ClusterReader's defaults, derived from ListGpuNodes.
  std::shared_ptr<const std::vector<api::GpuNode>> GpuNodes() const override;
  HeartbeatChanges GpuNodeHeartbeatsSince(std::uint64_t version) const override;
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
  // An injected failure for this write, if any.
  absl::Status NextWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NextResourceVersion() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // POST of `resource`: stores `created` in `objects` (one of the maps below) under its
  // "ns/name" at a new resourceVersion, with a uid `uid_prefix`<n> and a creationTimestamp
  // unless `uid_prefix` is empty; AlreadyExists when the name is taken, or an injected failure.
  absl::StatusOr<nlohmann::json> StoreCreated(std::map<std::string, nlohmann::json>& objects,
                                              std::string_view resource, nlohmann::json created,
                                              std::string_view uid_prefix)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Now() const;
  // Stores the GPUNode at a new resourceVersion, and notes what changed for GpuNodes and
  // GpuNodeHeartbeatsSince.
  void StoreGpuNode(api::GpuNode node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  Clock& clock_;

  // Guarded by mu_: everything below but claims_.
  mutable absl::Mutex mu_;
  std::int64_t resource_version_ ABSL_GUARDED_BY(mu_) = 100;
  std::int64_t uid_counter_ ABSL_GUARDED_BY(mu_) = 0;
  // "ns/name" -> TrainingJob JSON.
  std::map<std::string, nlohmann::json> jobs_ ABSL_GUARDED_BY(mu_);
  // Every change to what ListJobs shows (jobs_, frozen_jobs_), for JobChangesSince.
  ChangeLog job_changes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> pods_ ABSL_GUARDED_BY(mu_);  // "ns/name" -> Pod.
  // The pods' GPUs, as KubeCluster keeps them from its pod cache; this cache is never behind,
  // so nothing is ever assumed. Every change to pods_ is observed here, under mu_; GpuClaims
  // locks its own mutex, so Assignments() reads it without mu_.
  GpuClaims claims_;
  // "ns/name" -> ConfigMap.
  std::map<std::string, nlohmann::json> config_maps_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> services_ ABSL_GUARDED_BY(mu_);  // "ns/name" -> Service.
  std::map<std::string, api::GpuNode> gpu_nodes_ ABSL_GUARDED_BY(mu_);   // By name.
  // GpuNodes(); null after a change to a placement part in gpu_nodes_.
  mutable std::shared_ptr<const std::vector<api::GpuNode>> gpu_node_list_ ABSL_GUARDED_BY(mu_);
  ChangeLog heartbeat_changes_ ABSL_GUARDED_BY(mu_);  // Of gpu_nodes_' heartbeat times.
  std::map<std::string, NodeState> node_states_ ABSL_GUARDED_BY(mu_);
  // SharedNodeStates(); null after a change to node_states_.
  mutable NodeStateMap node_state_map_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<std::string> decode_warnings_ ABSL_GUARDED_BY(mu_);
  std::vector<RecordedEvent> events_ ABSL_GUARDED_BY(mu_);
  std::map<std::int64_t, absl::Status> faults_ ABSL_GUARDED_BY(mu_);  // Write number -> failure.
  absl::Status lost_placement_response_ ABSL_GUARDED_BY(mu_);
  PodValidation pod_validation_ ABSL_GUARDED_BY(mu_);
  std::int64_t refused_pod_creations_ ABSL_GUARDED_BY(mu_) = 0;
  // "ns/name" -> the job as reads show it.
  std::map<std::string, nlohmann::json> frozen_jobs_ ABSL_GUARDED_BY(mu_);
  std::int64_t write_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  std::int64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  std::int64_t status_writes_ ABSL_GUARDED_BY(mu_) = 0;
};

// A reader over a FakeCluster with ClusterReader's defaults for every read it may leave to them
// (the shared lists, the change logs, the GPUNode reads past ListGpuNodes): a test derives from
// it to change one read, such as a cache that lags.
class ForwardingReader : public ClusterReader {
 public:
  explicit ForwardingReader(const FakeCluster& source) : source_(source) {}

  std::optional<api::TrainingJob> GetJob(std::string_view ns,
                                         std::string_view name) const override {
    return source_.GetJob(ns, name);
  }
  std::vector<api::TrainingJob> ListJobs() const override { return source_.ListJobs(); }
  std::vector<kube::Pod> PodsOfJob(std::string_view ns, std::string_view job) const override {
    return source_.PodsOfJob(ns, job);
  }
  std::vector<kube::Service> ServicesOfJob(std::string_view ns,
                                           std::string_view job) const override {
    return source_.ServicesOfJob(ns, job);
  }
  absl::StatusOr<std::optional<kube::ConfigMap>> GetConfigMap(
      std::string_view ns, std::string_view name) const override {
    return source_.GetConfigMap(ns, name);
  }
  std::vector<api::GpuNode> ListGpuNodes() const override { return source_.ListGpuNodes(); }
  std::map<std::string, NodeState> NodeStates() const override { return source_.NodeStates(); }
  std::vector<GpuAssignment> Assignments() const override { return source_.Assignments(); }

 protected:
  const FakeCluster& source_;
};

// A small scene for reconciler tests: one simulated clock shared by the fake and the reconciler,
// nodes with H100 GPUs, and TrainingJobs in namespace "team" that plan quickly (mlp_tiny).
struct FakeScene {
  static constexpr std::string_view kNamespace = "team";

  // Wall time 2026-05-01T10:00:00Z at the start; tests move it with clock.Advance.
  ::wavepool::testing::SimulatedClock clock;
  FakeCluster cluster;

  FakeScene();
  FakeScene(const FakeScene&) = delete;
  FakeScene& operator=(const FakeScene&) = delete;

  // The scene's wall time.
  WallTime Now() const { return clock.WallNow(); }
  // Reconciler options on `clock`; pods get a default image.
  ReconcilerOptions Options();
  // A GPUNode `name` with `gpus` 80 GiB H100s (UUIDs "GPU-<name>-<i>"), heartbeat now, and a
  // Ready, managed Node.
  void AddNode(const std::string& name, int gpus);
  // Every GPUNode's heartbeat becomes Now().
  void Heartbeat();
  // Jobs: Foreground DataParallel on `gpus` GPUs, or Background on one; checkpoint path set.
  api::TrainingJob AddForeground(const std::string& name, std::int64_t gpus,
                                 bool allow_background = true);
  api::TrainingJob AddBackground(const std::string& name);
  // A Foreground job on 2 GPUs (16 samples a step, 10 steps) whose model is the layer table
  // `layer_table` names, with no model name or checkpoint path.
  api::TrainingJob AddLayerTableJob(const std::string& name, api::ConfigMapKeyRef layer_table);
  api::TrainingJob Job(const std::string& name) const;  // REQUIRES: the job exists.
  // Pods of the job's current gang (status.gangGeneration), by name.
  std::vector<nlohmann::json> CurrentPods(const std::string& name) const;
  // Acts as the kubelet: every pod of the job's current gang gets `phase`.
  void SetGangPhase(const std::string& name, std::string_view phase);
};

// The condition of `type` in the job's status; an empty condition (type "") when absent.
const api::Condition& ConditionOf(const api::TrainingJob& job, std::string_view type);
// metadata.name of each pod, in order.
std::vector<std::string> PodNames(const std::vector<nlohmann::json>& pods);
// The object's metadata, decoded; empty metadata when it does not decode (the test then fails on
// what it expected of it).
api::ObjectMeta MetaOf(const nlohmann::json& object);
std::vector<std::string> PodNames(const std::vector<kube::Pod>& pods);
std::vector<std::string> PodNames(const std::vector<kube::Service>& services);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_TESTS_CONTROLLER_FAKE_CLUSTER_H_
