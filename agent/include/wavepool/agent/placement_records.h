// The controller's record of where it placed each pod: the owning TrainingJob's
// status.placement. A pod's labels and annotations are written by whoever creates the pod, so a
// tenant who may create pods could copy the controller's (a Foreground role, another job's GPUs);
// a job's status only the controller may write. The agent admits a worker only when the
// TrainingJob that owns its pod (the controller ownerReference, same uid) places that pod on this
// node, on exactly the GPUs its annotation names, in the role its label says (docs/agent.md,
// "Registration and identity").
//
// Thread safety: implementations are safe for concurrent use.
#ifndef WAVEPOOL_AGENT_PLACEMENT_RECORDS_H_
#define WAVEPOOL_AGENT_PLACEMENT_RECORDS_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/agent/peer_identity.h"
#include "wavepool/api/training_job.h"
#include "wavepool/kube/client.h"

namespace wavepool::agent {

// Whether `job` places `pod` on node `node` as `identity` (resolved from the pod) says: the pod's
// controller owner is `job` (kind TrainingJob of group wavepool.dev, same uid), identity.job is
// the job's name, identity.role its spec.role, and status.placement has an entry for the pod on
// `node` with identity.gpu_uuids (in any order). PermissionDenied naming what differs.
absl::Status CheckPlacement(const api::TrainingJob& job, const PodRecord& pod,
                            const WorkerIdentity& identity, std::string_view node);

class PlacementRecords {
 public:
  virtual ~PlacementRecords() = default;
  // OK when the pod's owning TrainingJob places it as `identity` says (CheckPlacement);
  // PermissionDenied when it does not or the pod has no such owner; Unavailable when the
  // record cannot be read now. May block on the API server for up to the client's timeout.
  virtual absl::Status Confirm(const PodRecord& pod, const WorkerIdentity& identity) = 0;
};
using PlacementRecordsPtr = std::unique_ptr<PlacementRecords>;

// Reads the owning TrainingJob through `client` (borrowed; must outlive the result) for pods of
// node `node_name`. InvalidArgument for a null client or an empty node name.
absl::StatusOr<PlacementRecordsPtr> MakeKubePlacementRecords(kube::Client* client,
                                                             std::string node_name);

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_PLACEMENT_RECORDS_H_
