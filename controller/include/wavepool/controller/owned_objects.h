// The objects a TrainingJob owns, built as pure functions (no I/O): the Plan ConfigMap, one
// headless Service per gang and one Pod per rank. The reconciler creates them and compares them
// with what exists; placement decides the PodAssignment (node and GPUs of each rank).
// docs/controller.md describes the pod shape and the rendezvous; docs/agent.md the agent
// directory the pods mount.
//
// Names are deterministic: `<job>-plan` for the ConfigMap, `<job>-g<generation>` for the gang's
// Service and `<job>-g<generation>-<rank>` for pods. A gang restart bumps the generation, so the
// new gang's pods never clash with the old gang's pods while those are still terminating (a
// terminating pod keeps its name until the kubelet confirms it is gone, which for a
// checkpointing background pod takes up to its grace period). Names too long are shortened with
// a hash of the full job name (NameWithSuffix).
//
// Rendezvous: every pod of a gang gets `hostname` (PodHostname) and `subdomain` (the gang's
// Service), so that the cluster DNS resolves `<hostname>.<service>.<namespace>.svc` to it even
// before it is ready; rank 0 serves the c10d TCP store there (WAVEPOOL_STORE, RendezvousStore).
//
// Pods are bound by the controller (spec.nodeName set): their GPUs are chosen by UUID on one
// node (NVIDIA_VISIBLE_DEVICES), so the scheduler must not move them elsewhere.
//
// All functions are pure and thread-safe; results are plain JSON values owned by the caller.
#ifndef WAVEPOOL_CONTROLLER_OWNED_OBJECTS_H_
#define WAVEPOOL_CONTROLLER_OWNED_OBJECTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/object_meta.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/placement.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::controller {

// Labels on every owned object (pods carry all of them, the ConfigMap the first three).
inline constexpr std::string_view kLabelAppName = "app.kubernetes.io/name";  // "wavepool"
inline constexpr std::string_view kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kLabelJob = "wavepool.dev/job";    // JobLabelValue(name)
inline constexpr std::string_view kLabelRole = "wavepool.dev/role";  // "Foreground"/"Background"
inline constexpr std::string_view kLabelRank = "wavepool.dev/rank";
inline constexpr std::string_view kLabelGangGeneration = "wavepool.dev/gang-generation";
inline constexpr std::string_view kAppName = "wavepool";
inline constexpr std::string_view kManagedBy = "wavepool-controller";

// Annotations: the full job name (the label may be shortened), and hashes that tell the
// reconciler whether an existing object is stale.
inline constexpr std::string_view kAnnotationJobName = "wavepool.dev/job-name";
inline constexpr std::string_view kAnnotationTemplateHash = "wavepool.dev/template-hash";
inline constexpr std::string_view kAnnotationPlanHash = "wavepool.dev/plan-hash";
// What placement needs to count a pod's GPUs without its job (AssignmentFromPod): written by
// BuildPod from the assignment and the plan.
inline constexpr std::string_view kAnnotationGpuUuids = "wavepool.dev/gpu-uuids";  // "a,b"
inline constexpr std::string_view kAnnotationMemoryPerGpu = "wavepool.dev/memory-per-gpu-bytes";
inline constexpr std::string_view kAnnotationIdleFraction = "wavepool.dev/idle-fraction";
inline constexpr std::string_view kAnnotationAllowBackground = "wavepool.dev/allow-background";
inline constexpr std::string_view kAnnotationMaxSlowdown = "wavepool.dev/max-foreground-slowdown";
// Set on a background pod before the controller deletes it to make room for a foreground gang:
// "<namespace>/<job>" of the gang. Its own job's reconcile reads it to report Preempted.
inline constexpr std::string_view kAnnotationPreemptedBy = "wavepool.dev/preempted-by";

// Whether a label or annotation key belongs to the controller: its prefix is wavepool.dev or a
// subdomain of it. The controller and the node agent trust these keys on a pod to say what the
// controller decided (role, job, GPUs, preemption), so a pod template may never set one: BuildPod
// drops them from the template, and the template policy refuses them.
bool IsControllerMetadataKey(std::string_view key);

// The port of rank 0's c10d TCP store, the gang Service's only port.
inline constexpr std::int64_t kRendezvousPort = 29500;
inline constexpr std::string_view kRendezvousPortName = "rendezvous";

// Where the pod finds the Plan: the ConfigMap key `plan.json` mounted at /etc/wavepool.
inline constexpr std::string_view kPlanKey = "plan.json";
inline constexpr std::string_view kPlanMountPath = "/etc/wavepool";
inline constexpr std::string_view kPlanPath = "/etc/wavepool/plan.json";

// The container that runs the worker: the template's container of this name, else its first.
inline constexpr std::string_view kWorkerContainerName = "worker";

// Where one rank runs: placement's decision for one pod.
struct PodAssignment {
  std::int64_t rank = 0;                  // In [0, plan.gpus).
  std::string node_name;                  // The node the pod is bound to.
  std::vector<std::string> gpu_uuids;     // Not empty; "GPU-..." as NVML and GPUNode report them.
  std::vector<std::int64_t> gpu_indices;  // Node-local index of each UUID (GPUNode), same size:
                                          // the agent's MPS pipes are per index.
};

// Cluster-wide settings of the controller (flags), the same for every job.
struct OwnedObjectOptions {
  std::string agent_directory = "/var/run/wavepool";  // The agent's --dir (socket, gates).
  std::string mps_directory;  // MPS pipes, <dir>/<gpu index>/pipe; empty: <agent_directory>/mps.
  std::string background_priority_class;  // PriorityClass of background pods; empty: none.
  std::int64_t background_termination_grace_seconds = 120;  // Time to checkpoint on SIGTERM.
  std::string default_image;  // For a template whose worker container has no image.
  // Host directory for checkpoints when no template volume covers spec.checkpoint.path:
  // <root>/<namespace>/<job> is mounted at the path.
  std::string checkpoint_host_root = "/var/lib/wavepool/checkpoints";
  // The group owning the agent's socket (its --socket-group): added to every worker pod's
  // securityContext.supplementalGroups so that a worker running as any user may connect.
  // Negative: none.
  std::int64_t agent_socket_gid = -1;
};

// The largest group id a pod may name: kube-apiserver refuses supplementalGroups (and user and
// group ids) outside [0, 2^31 - 1] (apimachinery's IsValidGroupID).
inline constexpr std::int64_t kMaxPodGroupId = 2147483647;

// InvalidArgument naming the controller flag and the problem for an option every job's pods
// would carry and the API server (or the kubelet) would refuse, so that a bad flag stops the
// controller at start-up instead of failing each job's pods with PodRejected: --agent-dir,
// --mps-dir and --checkpoint-host-root not clean absolute paths other than "/" (mounted into
// pods, the agent and MPS directories at their own paths, which must not collide with each
// other, /dev/shm or the plan's /etc/wavepool), a --background-priority-class that is not a
// DNS-1123 subdomain, a negative --background-grace-seconds, a --default-image that does not
// parse (image_reference.h), and an --agent-socket-gid above kMaxPodGroupId.
absl::Status ValidateOwnedObjectOptions(const OwnedObjectOptions& options);

// InvalidArgument naming spec.checkpoint.path when a job's checkpoint directory (an absolute path:
// the pod builder mounts the node's <checkpoint root>/<namespace>/<job> there) cannot sit beside
// the mounts every worker gets: not a clean absolute path, "/", or at or under /dev/shm, the
// plan's directory, the agent's or the MPS directory. The API server refuses two mounts at one
// path, and a mount under the agent's host directory would create the tenant's directory on the
// node, inside the agent's. Other paths (an object-store URL) are not mounted and pass.
absl::Status CheckCheckpointMountPath(const std::string& path, const OwnedObjectOptions& options);

// `<base><suffix>`, at most `max_length` characters. A base too long is cut, trailing '-' and
// '.' dropped, and `-<8 hex digits of a hash of base>` added, so distinct bases stay distinct.
// REQUIRES: max_length >= suffix.size() + 10.
std::string NameWithSuffix(std::string_view base, std::string_view suffix, std::size_t max_length);

// "<job>-plan", at most 253 characters (a DNS-1123 subdomain).
std::string PlanConfigMapName(std::string_view job_name);

// "<job>-g<generation>-<rank>", at most 63 characters: the pod's hostname is its name, and a
// hostname is a DNS label.
std::string PodName(std::string_view job_name, std::int64_t gang_generation, std::int64_t rank);

// "<job>-g<generation>", the headless Service of one gang: a DNS-1035 label (at most 63
// characters, lowercase letters, digits and '-', starting with a letter), as Service names must
// be. A job name that is not one already (dots, a leading digit, too long) is mapped to one
// ('.' -> '-', a leading digit prefixed "tj-", cut) with `-<8 hex of FNV-1a(job name)>` before
// the suffix, so that two jobs never share a Service name.
std::string GangServiceName(std::string_view job_name, std::int64_t gang_generation);

// The hostname of the pod of `rank` (spec.hostname): its PodName when that is a DNS-1123 label,
// which it is unless the job name has dots; else a label made as GangServiceName makes one. At
// most 63 characters, and unique within the gang (the rank stays in the suffix).
std::string PodHostname(std::string_view job_name, std::int64_t gang_generation, std::int64_t rank);

// "tcp://<rank 0's hostname>.<service>.<namespace>.svc:29500": where every rank of the gang finds
// rank 0's c10d TCP store (WAVEPOOL_STORE).
std::string RendezvousStore(const api::TrainingJob& job, std::int64_t gang_generation);

// The job name as a label value (at most 63 characters, shortened as NameWithSuffix does).
std::string JobLabelValue(std::string_view job_name);

// Labels selecting every pod of the job (app name, managed-by, job).
std::map<std::string, std::string> JobSelector(std::string_view job_name);

// Labels selecting the pods of one gang: JobSelector plus wavepool.dev/gang-generation.
std::map<std::string, std::string> GangSelector(std::string_view job_name,
                                                std::int64_t gang_generation);

// 16 lowercase hex digits of a 64-bit FNV-1a hash of `json.dump()` (objects dump with sorted
// keys, so equal documents hash equally).
std::string HashJson(const nlohmann::json& json);

// The ownerReference to `job`: controller and blockOwnerDeletion true, so garbage collection
// deletes the owned objects with the job and foreground deletion waits for them.
api::OwnerReference ControllerOwnerReference(const api::TrainingJob& job);

// Whether the object's controller ownerReference (the one with controller: true) names the
// object `uid`. Ownership is by uid, never by name or labels: a job deleted and re-created
// under the same name is another object, and a pod orphaned from its job
// (`kubectl delete --cascade=orphan`) or labelled by someone else has no such reference.
bool IsControlledBy(const api::ObjectMeta& metadata, std::string_view uid);

// The uid of the object's controller ownerReference when that reference is a TrainingJob of
// wavepool.dev; empty otherwise.
std::string ControllingJobUid(const api::ObjectMeta& metadata);

// The ConfigMap `<job>-plan` holding ToJson(plan) under `plan.json`, owned by the job.
// InvalidArgument naming the field when the job's metadata.name, namespace or uid is empty.
absl::StatusOr<nlohmann::json> BuildPlanConfigMap(const api::TrainingJob& job,
                                                  const api::Plan& plan);

// The headless Service of gang `gang_generation` (GangServiceName), owned by the job: clusterIP
// None, publishNotReadyAddresses true (the ranks resolve each other while they start, before any
// readiness), selector GangSelector, one TCP port 29500 named `rendezvous`; labelled as the
// ConfigMap plus wavepool.dev/gang-generation. InvalidArgument naming the field for a job
// without name/namespace/uid or a negative generation.
absl::StatusOr<nlohmann::json> BuildGangService(const api::TrainingJob& job,
                                                std::int64_t gang_generation);

// The pod of `assignment.rank` in gang `gang_generation`: the job's spec.template with the
// wavepool parts merged in (docs/controller.md lists the rules; on a collision with the user's
// env, volumes or mounts, wavepool's win). Annotated with HashJson of the pod built without
// that annotation. InvalidArgument naming the field for a job without name/namespace/uid/role,
// a rank outside [0, plan.gpus), an empty node name or UUID list, UUIDs and indices of
// different sizes, a negative generation, a template that is not a PodTemplateSpec object, a
// worker container without image (and no default), or a template asking for nvidia.com/gpu
// (the device plugin would pick other GPUs than the assigned ones).
absl::StatusOr<nlohmann::json> BuildPod(const api::TrainingJob& job, const api::Plan& plan,
                                        const PodAssignment& assignment,
                                        std::int64_t gang_generation,
                                        const OwnedObjectOptions& options);

// The GPUs a controller-owned pod holds, from its labels, annotations and spec.nodeName; nullopt
// for a pod that holds none (phase Succeeded or Failed). A terminating pod still holds its GPUs
// until it is gone. GpuAssignment::pod is "<namespace>/<pod>" and ::job "<namespace>/<job>", so
// that pods of equally named jobs in two namespaces stay distinct in one Inventory.
// InvalidArgument naming the label or annotation for a pod this controller did not build
// (missing or malformed wavepool annotations), and naming metadata.ownerReferences for a pod
// whose controller ownerReference is not a TrainingJob (ControllingJobUid empty): a pod that
// only carries wavepool's labels and annotations (a tenant's, or one orphaned from its job)
// holds no GPU in placement, so that nobody can reserve GPUs by writing annotations.
absl::StatusOr<std::optional<GpuAssignment>> AssignmentFromPod(const kube::Pod& pod);
// The same for a pod as the API server sends it: decoded first (kube::Pod::FromJson), so that a
// field of the wrong type is InvalidArgument naming the pod and the field.
absl::StatusOr<std::optional<GpuAssignment>> AssignmentFromPod(const nlohmann::json& pod);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_OWNED_OBJECTS_H_
