// Who a connecting worker is allowed to be, from the process the kernel saw connect (the pid of
// SO_PEERCRED), never from what the worker says in Register (docs/agent.md, "Registration and
// identity"). Two sources:
//   * Kubernetes: the pod UID from /proc/<pid>/cgroup (the kubelet puts every container in a
//     kubepods cgroup named after its pod), then the pod itself as the API server knows it
//     (PodSource): namespace, name, the controller's labels and annotations (job, role, the GPUs
//     it was assigned).
//   * Local (`wavepool run`): the agent runs in the process that started the workers, so whoever
//     starts one records its pid and identity in a LocalPeerIdentity.
// The agent compares the Register request with the resolved identity and refuses a mismatch.
//
// Thread safety: every class here is safe for concurrent use. Ownership: KubernetesPeerIdentity
// borrows its PodSource, which must outlive it.
#ifndef WAVEPOOL_AGENT_PEER_IDENTITY_H_
#define WAVEPOOL_AGENT_PEER_IDENTITY_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/base/clock.h"
#include "wavepool/kube/client.h"

namespace wavepool::agent {

// The controller's pod metadata the agent trusts (controller/owned_objects.h, pod_builder.cpp).
inline constexpr char kPodLabelRole[] = "wavepool.dev/role";  // "Foreground"/"Background"
inline constexpr char kPodLabelJob[] = "wavepool.dev/job";    // the job, maybe shortened
inline constexpr char kPodAnnotationJobName[] = "wavepool.dev/job-name";    // the job's full name
inline constexpr char kPodAnnotationGpuUuids[] = "wavepool.dev/gpu-uuids";  // "GPU-a,GPU-b"
inline constexpr char kPodManagedBySelector[] = "app.kubernetes.io/managed-by=wavepool-controller";

// Who a worker process may register as.
struct WorkerIdentity {
  std::string namespace_name;
  std::string job;
  std::string pod;
  std::string pod_uid;  // Kubernetes; empty in local mode
  Role role = Role::kForeground;
  // The GPUs assigned to the pod, by UUID (Kubernetes) or by the agent's index (local mode). A
  // pod may hold one slot on each, and no more.
  std::vector<std::string> gpu_uuids;
  std::vector<std::uint32_t> gpu_indices;
  std::size_t gpu_count() const { return gpu_uuids.size() + gpu_indices.size(); }
};

class PeerIdentity {
 public:
  virtual ~PeerIdentity() = default;
  // The identity of process `pid`. NotFound: the process is no worker this source knows (not in
  // a pod, a pod the controller does not manage, a pid nobody started); InvalidArgument: its
  // pod's metadata is not what the controller writes; Unavailable: the source cannot answer now.
  // May block on I/O for up to the source's timeout (the Kubernetes API on a cache miss).
  virtual absl::StatusOr<WorkerIdentity> Resolve(pid_t pid) = 0;
  // What the socket server counts connections by: processes of one pod share it. Never blocks.
  virtual std::string ConnectionGroup(pid_t pid) { return "pid:" + std::to_string(pid); }
};
using PeerIdentityPtr = std::unique_ptr<PeerIdentity>;

// The pod UID in the text of a /proc/<pid>/cgroup file (cgroup v1 or v2; the kubelet's
// cgroupfs driver: ".../kubepods/burstable/pod<uid>/<container>", its systemd driver:
// ".../kubepods-burstable-pod<uid with _ for ->.slice/<container>.scope"), with dashes.
// NotFound when no line is under a kubepods cgroup; InvalidArgument naming the line when the
// pod component is malformed or two lines name different pods.
absl::StatusOr<std::string> PodUidFromCgroup(std::string_view cgroup_file);

// A pod as the API server reports it: only what identity needs.
struct PodRecord {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  // The ownerReference with controller: true, if any (the pod's TrainingJob).
  std::optional<api::OwnerReference> controller_owner;
};

// The identity the controller gave `pod` (its role label, job-name annotation or job label, and
// gpu-uuids annotation). InvalidArgument naming the label or annotation when one is missing or
// malformed.
absl::StatusOr<WorkerIdentity> IdentityOfPod(const PodRecord& pod);

// The pods of this node, as the agent can trust them (the API server, not the pod itself).
class PodSource {
 public:
  virtual ~PodSource() = default;
  // NotFound when no pod of this node has `uid`; Unavailable when the source cannot answer.
  virtual absl::StatusOr<PodRecord> FindByUid(const std::string& uid) = 0;
};
using PodSourcePtr = std::unique_ptr<PodSource>;

struct KubePodSourceOptions {
  std::string node_name;  // REQUIRES: set; pods are listed with spec.nodeName=<node_name>
  // A listing answers lookups for this long; a UID not in it lists again, at most once per
  // min_relist (a new pod registers within a second or two of starting).
  std::chrono::milliseconds cache_ttl{5000};
  std::chrono::milliseconds min_relist{500};
};

// Lists the node's pods managed by the controller through `client` (borrowed; must outlive it),
// timed by `clock` (borrowed). InvalidArgument naming the option.
absl::StatusOr<PodSourcePtr> MakeKubePodSource(kube::Client* client, KubePodSourceOptions options,
                                               Clock* clock);

class PlacementRecords;  // placement_records.h

// Kubernetes mode: /proc/<pid>/cgroup under `proc_root` (a test's fake /proc), then `pods`,
// then, unless `placements` is null, the pod's TrainingJob's placement record (a pod no job
// places is refused with PermissionDenied). Both are borrowed and must outlive it.
class KubernetesPeerIdentity final : public PeerIdentity {
 public:
  KubernetesPeerIdentity(PodSource* pods, PlacementRecords* placements,
                         std::string proc_root = "/proc");
  absl::StatusOr<WorkerIdentity> Resolve(pid_t pid) override;
  // "pod:<uid>" for a process in a pod, else "pid:<pid>".
  std::string ConnectionGroup(pid_t pid) override;

 private:
  absl::StatusOr<std::string> PodUidOf(pid_t pid) const;

  PodSource* const pods_;
  PlacementRecords* const placements_;
  const std::string proc_root_;
};

// Local mode: the processes the agent's own process started.
class LocalPeerIdentity final : public PeerIdentity {
 public:
  // Records `pid` as `identity` (replacing what a previous process of that pid had).
  void Add(pid_t pid, WorkerIdentity identity);
  // Forgets `pid` (its process exited: the pid may be reused by anyone).
  void Remove(pid_t pid);
  absl::StatusOr<WorkerIdentity> Resolve(pid_t pid) override;

 private:
  absl::Mutex mu_;
  std::map<pid_t, WorkerIdentity> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_PEER_IDENTITY_H_
