// What the reconciler reads from and writes to the cluster, as two interfaces so that the
// reconcile logic runs unchanged against the informer caches and the API server (KubeCluster,
// kube_cluster.h) and against an in-memory fake in unit tests.
//
// Reads come from caches that may lag the API server: a reconcile decides from what it reads and
// writes idempotently (create-if-absent with deterministic names, status updates with the read
// resourceVersion so a stale write gets Conflict and the key is retried), which is what makes
// the reconciler level-based and safe to kill at any point.
#ifndef WAVEPOOL_CONTROLLER_CLUSTER_H_
#define WAVEPOOL_CONTROLLER_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/object_key.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/placement.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::controller {

// The condition the controller owns on a GPUNode (the agent owns Ready and keeps the others as
// it finds them): True while something the agent reports is withheld from placement (a GPU
// UUID another GPUNode reports too, an empty UUID, a negative memory figure, no
// spec.nodeName), with the fields and the other GPUNodes named in its message.
inline constexpr std::string_view kGpuNodeConditionInvalid = "Invalid";

// The TrainingJobs ("ns/name") changed since a version of the job cache's change log, each as
// it is now (nullptr: deleted); ClusterReader::JobChangesSince.
using JobChanges = ChangeSet<api::TrainingJob>;

// The GPUNodes (by name) whose status.heartbeatTime changed since a version, each with the value
// its agent wrote (nullptr: the GPUNode is gone); ClusterReader::GpuNodeHeartbeatsSince. The
// values are compared only for change, never with a clock.
using HeartbeatChanges = ChangeSet<std::string>;

// A GPUNode as placement reads it (ClusterReader::GpuNodes): the whole object but for what its
// agent rewrites on every heartbeat, which placement never reads: status.heartbeatTime, each GPU's
// occupancy and tasks, and its memory wave but for the peak. A list of these changes only when a
// placement decision could come out differently.
api::GpuNode PlacementPartOf(api::GpuNode node);
// Whether two placement parts are the same but for metadata.resourceVersion, which moves with
// every heartbeat.
bool SamePlacementPart(const api::GpuNode& a, const api::GpuNode& b);

// Read access to the objects the controller watches. Implementations are thread-safe; every
// result is a copy the caller owns or an immutable value shared with the reader (GpuNodes,
// SharedNodeStates, the change sets' objects), and ForEachJob and
// ForEachJobInPhase lend each job for one call.
class ClusterReader {
 public:
  virtual ~ClusterReader() = default;

  // The TrainingJob as last observed; nullopt when it does not exist (any more).
  virtual std::optional<api::TrainingJob> GetJob(std::string_view ns,
                                                 std::string_view name) const = 0;
  // Every TrainingJob, sorted by namespace/name.
  virtual std::vector<api::TrainingJob> ListJobs() const = 0;
  // Calls `visit` with every TrainingJob, in ListJobs' order, without copying the jobs: a
  // reconcile that looks at every job for the few it needs (the gangs being created, the
  // background jobs queued ahead) pays for those alone. The reference is valid only during the
  // call; `visit` may call the reader again. The default visits ListJobs().
  virtual void ForEachJob(const std::function<void(const api::TrainingJob&)>& visit) const {
    for (const api::TrainingJob& job : ListJobs()) visit(job);
  }
  // ForEachJob for the jobs whose status.phase is `phase` alone. KubeCluster keeps its jobs
  // indexed by phase, so a placement decision that looks for the few gangs being created or
  // jobs waiting does not visit every job in the cluster. The default filters ForEachJob.
  virtual void ForEachJobInPhase(api::JobPhase phase,
                                 const std::function<void(const api::TrainingJob&)>& visit) const {
    ForEachJob([&](const api::TrainingJob& job) {
      if (job.status.phase == phase) visit(job);
    });
  }
  // The pods labelled as the job's (JobSelector), including terminating ones; sorted by name.
  // Typed: the cache's JSON is decoded where it enters the reader (kube::Pod::FromJson; in
  // KubeCluster once per resourceVersion, as the informer delivers it), so nothing downstream
  // reads JSON. A pod that does not decode (a field of the wrong type, which an API server never
  // sends) is left out, and the reader logs its name and the field; its name stays taken, so
  // creating it again gets AlreadyExists.
  virtual std::vector<kube::Pod> PodsOfJob(std::string_view ns, std::string_view job) const = 0;
  // The Services labelled as the job's (JobSelector): the rendezvous Services of its gangs,
  // including those of earlier gangs not deleted yet; sorted by name. Decoded as PodsOfJob
  // decodes pods (an undecodable Service is left out and logged).
  virtual std::vector<kube::Service> ServicesOfJob(std::string_view ns,
                                                   std::string_view job) const = 0;
  // A ConfigMap in the job's namespace (the Plan ConfigMap, or a layer table / profile the job
  // references); nullopt when absent. A ConfigMap that does not decode (data not a map of
  // strings, say) is an error naming it and the field: InvalidArgument.
  virtual absl::StatusOr<std::optional<kube::ConfigMap>> GetConfigMap(
      std::string_view ns, std::string_view name) const = 0;
  // Every GPUNode, whole and as last observed, sorted by name.
  virtual std::vector<api::GpuNode> ListGpuNodes() const = 0;
  // The GPUNode named `name`, whole and as last observed: for a status write, which replaces the
  // whole status; nullopt when it does not exist. The default searches ListGpuNodes().
  virtual std::optional<api::GpuNode> GetGpuNode(std::string_view name) const;
  // Every GPUNode's placement part (PlacementPartOf), sorted by name, as an immutable value.
  // KubeCluster hands out the same pointer until a placement part changes, not on every
  // heartbeat, so that what a caller derives from it (the GPUNodes screened for placement) can be
  // kept under the pointer instead of being redone on every reconcile. A placement part keeps
  // the resourceVersion of the change that made it, so a write from one gets Conflict once the
  // agent has published again; write from GetGpuNode instead. The default takes the placement
  // parts of ListGpuNodes() on each call.
  virtual std::shared_ptr<const std::vector<api::GpuNode>> GpuNodes() const;
  // The heartbeat times that changed since `version` (0, or what an earlier call returned), for
  // a reader that keeps their verdicts between reconciles: with a heartbeat every 30 s from each
  // of 1,000 nodes, reading every GPUNode's on each change is 33 full reads a second. KubeCluster
  // keeps a change log (ChangeLog); the default lists every GPUNode's, complete.
  virtual HeartbeatChanges GpuNodeHeartbeatsSince(std::uint64_t version) const;
  // The GPUNodes, whole, that list a task of the job (`ns`/`job`) on one of their GPUs, sorted by
  // name: where its workers' progress is. KubeCluster keeps them indexed by job, so a job's
  // reconcile does not read every GPUNode in the cluster. The default filters ListGpuNodes().
  virtual std::vector<api::GpuNode> GpuNodesWithTasksOf(std::string_view ns,
                                                        std::string_view job) const;
  // The Node's readiness and labels as placement needs them, for every Node, by name. The
  // heartbeat verdict (NodeState::heartbeat_fresh) is left false: the reconciler decides it
  // from GPUNode heartbeats and its own clock.
  virtual std::map<std::string, NodeState> NodeStates() const = 0;
  // NodeStates() as an immutable value. KubeCluster hands out the same pointer until a Node's
  // state changes, so that what a caller derives from it can be kept under the pointer; the
  // default copies NodeStates() on each call.
  virtual NodeStateMap SharedNodeStates() const {
    return std::make_shared<const std::map<std::string, NodeState>>(NodeStates());
  }
  // Every GPU held by a controller-owned pod that is not Succeeded or Failed (terminating pods
  // still hold theirs), built with AssignmentFromPod; together with the pods this controller
  // created that the cache has not shown yet (see ClusterWriter::CreatePod).
  virtual std::vector<GpuAssignment> Assignments() const = 0;
  // The TrainingJobs ("ns/name") that changed since `version` (0, or what an earlier call
  // returned), each as it is now (nullptr: deleted), for what a reconciler keeps derived from
  // them between decisions (the gangs being created). KubeCluster keeps a change log
  // (ChangeLog); the default lists every job, complete.
  virtual JobChanges JobChangesSince(std::uint64_t version) const {
    (void)version;
    JobChanges changes;
    changes.complete = true;
    for (api::TrainingJob& job : ListJobs()) {
      std::string key = api::NamespacedName(job.metadata);
      changes.changed.emplace_back(std::move(key),
                                   std::make_shared<const api::TrainingJob>(std::move(job)));
    }
    return changes;
  }
  // The pods' assignments that changed since `version` (0, or what an earlier call returned),
  // for an inventory kept between placement decisions (AssignmentChanges). KubeCluster keeps a
  // change log (GpuClaims::PodChangesSince); the default lists every pod's, complete.
  virtual AssignmentChanges AssignmentChangesSince(std::uint64_t version) const {
    (void)version;
    AssignmentChanges changes;
    changes.complete = true;
    for (GpuAssignment& a : Assignments()) {
      std::string pod = a.pod;
      changes.changed.emplace_back(std::move(pod),
                                   std::make_shared<const GpuAssignment>(std::move(a)));
    }
    return changes;
  }
};

// Write access. Errors are the API server's, as kube::Client returns them (kube::IsConflict,
// kube::IsNotFound, IsAlreadyExists via the status code kAlreadyExists).
class ClusterWriter {
 public:
  virtual ~ClusterWriter() = default;

  // Creates the pod; AlreadyExists when a pod of that name exists. On success the pod's GPUs
  // count in ClusterReader::Assignments() at once, before the cache sees the pod.
  virtual absl::StatusOr<nlohmann::json> CreatePod(const nlohmann::json& pod) = 0;
  // Deletes the pod (only the incarnation `uid` when not empty) with `grace_period_seconds`
  // (nullopt: the pod's own). NotFound when it is already gone.
  virtual absl::Status DeletePod(std::string_view ns, std::string_view name, std::string_view uid,
                                 std::optional<std::int64_t> grace_period_seconds) = 0;
  // Adds or replaces annotations on the pod (a JSON merge patch of metadata.annotations).
  virtual absl::Status AnnotatePod(std::string_view ns, std::string_view name,
                                   const std::map<std::string, std::string>& annotations) = 0;
  // Creates the Service; AlreadyExists when a Service of that name exists.
  virtual absl::StatusOr<nlohmann::json> CreateService(const nlohmann::json& service) = 0;
  // Deletes the Service (only the incarnation `uid` when not empty). NotFound when it is
  // already gone.
  virtual absl::Status DeleteService(std::string_view ns, std::string_view name,
                                     std::string_view uid) = 0;
  virtual absl::StatusOr<nlohmann::json> CreateConfigMap(const nlohmann::json& config_map) = 0;
  // Replaces the ConfigMap; Conflict when `config_map`'s resourceVersion is stale.
  virtual absl::StatusOr<nlohmann::json> UpdateConfigMap(const nlohmann::json& config_map) = 0;
  // Writes job.status through the status subresource with job.metadata.resourceVersion;
  // Conflict when stale.
  virtual absl::StatusOr<api::TrainingJob> UpdateJobStatus(const api::TrainingJob& job) = 0;
  // Records an Event on the job (asynchronous, best effort, de-duplicated by the recorder).
  virtual void RecordEvent(const api::TrainingJob& job, bool warning, std::string_view reason,
                           std::string_view message) = 0;
  // Writes node.status through the GPUNode's status subresource with
  // node.metadata.resourceVersion; Conflict when stale (the agent published meanwhile).
  virtual absl::Status UpdateGpuNodeStatus(const api::GpuNode& node) = 0;
  // Records an Event on the GPUNode, as RecordEvent does on a job.
  virtual void RecordGpuNodeEvent(const api::GpuNode& node, bool warning, std::string_view reason,
                                  std::string_view message) = 0;
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_CLUSTER_H_
