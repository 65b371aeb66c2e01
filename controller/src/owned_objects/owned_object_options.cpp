// The check of the controller's own pod options (owned_objects.h: ValidateOwnedObjectOptions).
// Every job's pods carry these, so one the API server refuses would fail every job with
// PodRejected, and a job failed that way is not retried until its spec changes: they are checked
// once, at start-up, naming the flag.
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "template_policy/template_policy_internal.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/image_reference.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller {
namespace {

// Where every worker mounts the MPS shared memory and the plan (pod_builder.cpp): the agent and
// MPS directories are mounted at their own paths, which must not land on or under these.
constexpr std::string_view kShmMountPath = "/dev/shm";

absl::Status Bad(std::string_view flag, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(flag), ": ", std::string(what)));
}

// A host directory the pods mount: a clean absolute path other than the node's root. `why_not_root`
// says what "/" would do.
absl::Status CheckHostDirectory(std::string_view flag, const std::string& path,
                                std::string_view why_not_root) {
  if (!internal::IsCleanAbsolutePath(path)) {
    return Bad(flag, absl::StrCat("\"", path,
                                  "\" must be an absolute path without empty, \".\" or \"..\" "
                                  "components (and no trailing '/')"));
  }
  if (path == "/") return Bad(flag, absl::StrCat("must not be \"/\": ", std::string(why_not_root)));
  return absl::OkStatus();
}

constexpr std::string_view kWholeNode = "every training pod would mount the node's root directory";

// A directory mounted into the worker at its own path must not be where the pod builder mounts
// something else: two mounts at one path are refused by the API server, and a mount under the
// read-only plan volume or /dev/shm cannot be created.
absl::Status CheckMountPathFree(std::string_view flag, const std::string& path) {
  for (std::string_view taken : {kShmMountPath, kPlanMountPath}) {
    if (internal::PathIsUnder(path, taken)) {
      return Bad(flag, absl::StrCat("\"", path, "\" must not be ", std::string(taken),
                                    " or under it: worker pods mount ",
                                    taken == kShmMountPath ? "the MPS shared memory" : "the plan",
                                    " there"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDirectories(const OwnedObjectOptions& o) {
  WAVEPOOL_RETURN_IF_ERROR(CheckHostDirectory("--agent-dir", o.agent_directory, kWholeNode));
  WAVEPOOL_RETURN_IF_ERROR(CheckMountPathFree("--agent-dir", o.agent_directory));
  if (!o.mps_directory.empty()) {
    WAVEPOOL_RETURN_IF_ERROR(CheckHostDirectory("--mps-dir", o.mps_directory, kWholeNode));
    WAVEPOOL_RETURN_IF_ERROR(CheckMountPathFree("--mps-dir", o.mps_directory));
    if (o.mps_directory == o.agent_directory) {
      return Bad("--mps-dir",
                 absl::StrCat("\"", o.mps_directory,
                              "\" must differ from --agent-dir: worker pods mount both, each at "
                              "its own path, and the API server refuses two mounts at one path"));
    }
  }
  return CheckHostDirectory(
      "--checkpoint-host-root", o.checkpoint_host_root,
      "each job would mount /<namespace>/<job> of the node, a host directory its tenant picks by "
      "naming the namespace and the job (etc/cron.d)");
}

}  // namespace

absl::Status CheckCheckpointMountPath(const std::string& path, const OwnedObjectOptions& options) {
  if (path.empty() || path.front() != '/') return absl::OkStatus();
  const auto bad = [&path](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.checkpoint.path: \"", path, "\" ", std::string(why)));
  };
  if (!internal::IsCleanAbsolutePath(path)) {
    return bad(
        "must be an absolute path without empty, \".\" or \"..\" components (and no "
        "trailing '/'), or an object-store URL");
  }
  if (path == "/") return bad("must not be \"/\": the checkpoint directory is mounted there");
  const std::pair<std::string_view, std::string_view> taken[] = {
      {kShmMountPath, "the MPS shared memory"},
      {kPlanMountPath, "the plan"},
      {options.agent_directory, "the node agent's directory"},
      {options.mps_directory, "the MPS pipe directory"},
  };
  for (const auto& [mount, what] : taken) {
    if (!mount.empty() && internal::PathIsUnder(path, mount)) {
      return bad(absl::StrCat("must not be ", std::string(mount),
                              " or under it: worker pods mount ", std::string(what), " there"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateOwnedObjectOptions(const OwnedObjectOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(CheckDirectories(options));
  const std::string& priority_class = options.background_priority_class;
  if (!priority_class.empty() && !api::IsDns1123Subdomain(priority_class)) {
    return Bad("--background-priority-class",
               absl::StrCat("\"", priority_class,
                            "\" must be a PriorityClass name: a DNS-1123 subdomain (at most 253 "
                            "lowercase letters, digits, '-' and '.', starting and ending with a "
                            "letter or digit)"));
  }
  if (options.background_termination_grace_seconds < 0) {
    return Bad("--background-grace-seconds",
               absl::StrCat("must be >= 0, got ", options.background_termination_grace_seconds));
  }
  if (!options.default_image.empty()) {
    absl::StatusOr<ImageReference> image = ParseImageReference(options.default_image);
    if (!image.ok()) return Bad("--default-image", std::string(image.status().message()));
  }
  if (options.agent_socket_gid > kMaxPodGroupId) {
    return Bad("--agent-socket-gid",
               absl::StrCat("must be -1 (none) or a group id in [0, ", kMaxPodGroupId,
                            "]: the API server refuses a pod's supplementalGroups beyond it, got ",
                            options.agent_socket_gid));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::controller
