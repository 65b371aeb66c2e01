#include "identity/registration_check.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "identity/worker_strings.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent::internal {
namespace {

const char* RoleName(Role role) { return role == Role::kForeground ? "Foreground" : "Background"; }

absl::Status Mismatch(const PeerCredentials& peer, const char* field, const std::string& said,
                      const std::string& is) {
  return absl::PermissionDeniedError(absl::StrCat("Register.", field, ": \"", said,
                                                  "\" is not the identity of process ", peer.pid,
                                                  " (its pod's is \"", is, "\")"));
}

}  // namespace

absl::StatusOr<std::optional<WorkerIdentity>> CheckRegister(PeerIdentity* identity,
                                                            const PeerCredentials& peer,
                                                            const RegisterRequest& request) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateRegisterStrings(request));
  if (identity == nullptr) return std::optional<WorkerIdentity>();
  if (peer.pid <= 0) {
    // SO_PEERCRED gives 0 for a process in a pid namespace the agent cannot see.
    return absl::PermissionDeniedError(
        "Register: the peer's process is not visible to the agent (pid 0: run the agent in the "
        "host's pid namespace)");
  }
  absl::StatusOr<WorkerIdentity> resolved = identity->Resolve(peer.pid);
  if (!resolved.ok()) {
    const absl::StatusCode code = resolved.status().code() == absl::StatusCode::kUnavailable
                                      ? absl::StatusCode::kUnavailable
                                      : absl::StatusCode::kPermissionDenied;
    return absl::Status(code, absl::StrCat("Register: cannot tell who process ", peer.pid,
                                           " is: ", resolved.status().message()));
  }
  if (request.role != resolved->role) {
    return Mismatch(peer, "role", RoleName(request.role), RoleName(resolved->role));
  }
  if (request.namespace_name != resolved->namespace_name) {
    return Mismatch(peer, "namespace", request.namespace_name, resolved->namespace_name);
  }
  if (request.job != resolved->job) return Mismatch(peer, "job", request.job, resolved->job);
  if (request.pod != resolved->pod) return Mismatch(peer, "pod", request.pod, resolved->pod);
  return std::optional<WorkerIdentity>(*std::move(resolved));
}

absl::Status CheckPodSlots(const WorkerIdentity& identity, const GpuInfo& gpu,
                           std::size_t held_total, bool holds_gpu) {
  const bool assigned = std::find(identity.gpu_uuids.begin(), identity.gpu_uuids.end(), gpu.uuid) !=
                            identity.gpu_uuids.end() ||
                        std::find(identity.gpu_indices.begin(), identity.gpu_indices.end(),
                                  gpu.index) != identity.gpu_indices.end();
  const std::string pod = absl::StrCat(identity.namespace_name, "/", identity.pod);
  if (!assigned) {
    return absl::PermissionDeniedError(
        absl::StrCat("Register.gpu_index: GPU ", gpu.index, " (", gpu.uuid,
                     ") is not assigned to pod ", pod, " (it has ",
                     identity.gpu_uuids.empty() ? absl::StrJoin(identity.gpu_indices, ",")
                                                : absl::StrJoin(identity.gpu_uuids, ","),
                     ")"));
  }
  if (holds_gpu || held_total >= identity.gpu_count()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "Register.gpu_index: pod ", pod, " holds ", held_total, " slot(s) already",
        holds_gpu ? absl::StrCat(", one of them on GPU ", gpu.index) : std::string(),
        "; a pod may hold one slot per GPU it was assigned (", identity.gpu_count(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::agent::internal
