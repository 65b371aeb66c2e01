// Binding a worker's identity to the controller's placement record (placement_records.h).
#include "wavepool/agent/placement_records.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::agent {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  return values;
}

std::string Where(const PodRecord& pod) {
  return absl::StrCat("pod ", pod.namespace_name, "/", pod.name, ": ");
}

// OK when the pod's controller ownerReference is a TrainingJob: the owner that Confirm reads and
// CheckPlacement compares with.
absl::Status CheckOwnedByTrainingJob(const PodRecord& pod) {
  const std::optional<api::OwnerReference>& owner = pod.controller_owner;
  if (!owner.has_value() || owner->kind != "TrainingJob" ||
      !absl::StartsWith(owner->api_version, "wavepool.dev/")) {
    return absl::PermissionDeniedError(
        absl::StrCat(Where(pod), "not controlled by a TrainingJob (controller ownerReference)"));
  }
  return absl::OkStatus();
}

class KubePlacementRecords final : public PlacementRecords {
 public:
  KubePlacementRecords(kube::Client* client, std::string node_name)
      : client_(client), node_name_(std::move(node_name)) {}

  absl::Status Confirm(const PodRecord& pod, const WorkerIdentity& identity) override {
    WAVEPOOL_RETURN_IF_ERROR(CheckOwnedByTrainingJob(pod));
    absl::StatusOr<api::TrainingJob> job = kube::TypedClient<api::TrainingJob>(client_).Get(
        pod.namespace_name, pod.controller_owner->name);
    if (absl::IsNotFound(job.status())) {
      return absl::PermissionDeniedError(absl::StrCat("pod ", pod.namespace_name, "/", pod.name,
                                                      ": its owner TrainingJob ",
                                                      pod.controller_owner->name, " is gone"));
    }
    if (!job.ok()) {
      return absl::UnavailableError(absl::StrCat("read TrainingJob ", pod.namespace_name, "/",
                                                 pod.controller_owner->name, ": ",
                                                 job.status().message()));
    }
    return CheckPlacement(*job, pod, identity, node_name_);
  }

 private:
  kube::Client* const client_;
  const std::string node_name_;
};

}  // namespace

absl::Status CheckPlacement(const api::TrainingJob& job, const PodRecord& pod,
                            const WorkerIdentity& identity, std::string_view node) {
  WAVEPOOL_RETURN_IF_ERROR(CheckOwnedByTrainingJob(pod));
  const std::string where = Where(pod);
  const std::string job_key = absl::StrCat(job.metadata.namespace_, "/", job.metadata.name);
  const api::OwnerReference& owner = *pod.controller_owner;
  if (job.metadata.namespace_ != pod.namespace_name || owner.name != job.metadata.name ||
      owner.uid != job.metadata.uid) {
    return absl::PermissionDeniedError(absl::StrCat(where, "its owner is TrainingJob ", owner.name,
                                                    " of uid ", owner.uid, ", not ", job_key,
                                                    " of uid ", job.metadata.uid));
  }
  if (identity.job != job.metadata.name) {
    return absl::PermissionDeniedError(
        absl::StrCat(where, "names job ", identity.job, " but is owned by ", job_key));
  }
  const api::Role role = job.spec.role.value_or(api::Role::kForeground);
  const bool foreground = identity.role == Role::kForeground;
  if ((role == api::Role::kForeground) != foreground) {
    return absl::PermissionDeniedError(
        absl::StrCat(where, "role ", foreground ? "Foreground" : "Background", " but ", job_key,
                     " is ", std::string(api::ToString(role))));
  }
  for (const api::PodPlacement& placed : job.status.placement) {
    if (placed.pod != pod.name) continue;
    if (placed.node != node) {
      return absl::PermissionDeniedError(absl::StrCat(where, job_key, " places it on node ",
                                                      placed.node, ", not on ", std::string(node)));
    }
    if (Sorted(placed.gpu_uuids) != Sorted(identity.gpu_uuids)) {
      return absl::PermissionDeniedError(
          absl::StrCat(where, job_key, " places it on GPUs ", absl::StrJoin(placed.gpu_uuids, ","),
                       ", not on ", absl::StrJoin(identity.gpu_uuids, ",")));
    }
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(where, job_key, " places no such pod (status.placement)"));
}

absl::StatusOr<PlacementRecordsPtr> MakeKubePlacementRecords(kube::Client* client,
                                                             std::string node_name) {
  if (client == nullptr) return absl::InvalidArgumentError("placement records: client is required");
  if (node_name.empty()) {
    return absl::InvalidArgumentError("placement records: node_name: must be set (--node-name)");
  }
  return PlacementRecordsPtr(std::make_unique<KubePlacementRecords>(client, std::move(node_name)));
}

}  // namespace wavepool::agent
