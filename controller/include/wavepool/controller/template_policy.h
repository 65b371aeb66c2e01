// What a TrainingJob's pod template may contain. The controller creates the job's pods with its
// own rights, so a template is a request to run something on the tenant's behalf: it may ask for
// what a training pod needs and nothing more (docs/controller.md "What a pod template may
// contain" lists it). Built in:
//   - containers and initContainers: name (a DNS label, unique among both lists), image,
//     imagePullPolicy, command, args, workingDir, env (names as kube-apiserver's IsEnvVarName
//     accepts them; values, ConfigMap/Secret keys that are data keys, the downward API), envFrom
//     (ConfigMaps and Secrets: always the job's namespace, since a pod cannot name another; a
//     prefix that is an env var name), ports without hostPort (a containerPort in [1, 65535], a name that is an
//     IANA service name and unique in the container, protocol TCP, UDP or SCTP), resources
//     (limits and requests of cpu, memory and ephemeral-storage), volumeMounts of the template's
//     volumes, and a restricted securityContext (runAsNonRoot, runAsUser/runAsGroup in
//     [1, 2^31 - 1], privileged and allowPrivilegeEscalation false, capabilities.drop,
//     readOnlyRootFilesystem, seccompProfile RuntimeDefault or Localhost);
//   - volumes: emptyDir, configMap, secret, persistentVolumeClaim, projected (configMap, secret,
//     downwardAPI sources) and downwardAPI;
//   - nodeSelector, tolerations, affinity, imagePullSecrets, terminationGracePeriodSeconds,
//     restartPolicy (replaced by Never), automountServiceAccountToken, a restricted pod
//     securityContext (runAsNonRoot, runAsUser/runAsGroup/fsGroup/supplementalGroups in
//     [1, 2^31 - 1], fsGroupChangePolicy, seccompProfile), serviceAccountName "default";
//   - hostPID, hostIPC and hostNetwork only as false;
//   - metadata: labels and annotations with keys and values the API server accepts on a pod,
//     none under wavepool.dev/ (the controller's own keys: IsControllerMetadataKey).
// Everything else is refused with its JSON path. An operator widens the list with
// TemplatePolicyOptions (the controller's --allow-* flags); the built-in list lives in one place,
// the tables of template_policy.cpp.
//
// Never allowed, whatever the options: GPU resources (nvidia.com/*, amd.com/gpu,
// gpu.intel.com/*) in a container's resources, because the controller assigns GPUs itself by UUID
// and the device plugin would hand out others; and an image that is missing (with no default) or
// does not parse (image_reference.h), because the pod could never start.
//
// Pure functions, safe to call from any thread.
#ifndef WAVEPOOL_CONTROLLER_TEMPLATE_POLICY_H_
#define WAVEPOOL_CONTROLLER_TEMPLATE_POLICY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "wavepool/api/training_job.h"

namespace wavepool::controller {

// Reasons of a refused template, for the job's Invalid condition and its Warning Event.
inline constexpr std::string_view kReasonForbiddenTemplateField = "ForbiddenTemplateField";
inline constexpr std::string_view kReasonPrivilegedTemplate = "PrivilegedTemplate";
inline constexpr std::string_view kReasonHostAccessInTemplate = "HostAccessInTemplate";
inline constexpr std::string_view kReasonServiceAccountNotAllowed = "ServiceAccountNotAllowed";
inline constexpr std::string_view kReasonGpuResourceInTemplate = "GpuResourceInTemplate";
inline constexpr std::string_view kReasonInvalidImage = "InvalidImage";
inline constexpr std::string_view kReasonMalformedTemplate = "MalformedTemplate";

// What the operator allows beyond the built-in list. Empty by default: the built-in list alone.
struct TemplatePolicyOptions {
  // Fields accepted as they are, with everything under them (--allow-template-field, repeated):
  // paths as a refusal names them, starting with "spec.template", where "[*]" matches any index
  // or key: "spec.template.spec.hostIPC",
  // "spec.template.spec.containers[*].securityContext.capabilities.add".
  std::vector<std::string> allowed_fields;
  // serviceAccountName values accepted besides "default" (--allow-service-account, repeated):
  // "NAME" in any namespace, or "NAMESPACE/NAME" in that namespace only.
  std::vector<std::string> allowed_service_accounts;
  // hostPath volumes accepted when their path is one of these absolute directories or under it
  // (--allow-host-path, repeated). Paths with "." or ".." components are always refused.
  std::vector<std::string> allowed_host_path_prefixes;
};

// A refusal: the kind of problem, the field and a message naming the field, the problem and what
// would be valid ("spec.template.spec.hostPID: must be false or absent: ...").
struct TemplateViolation {
  std::string_view reason;  // One of the kReason* constants above.
  std::string field;        // "spec.template.spec.containers[0].securityContext.privileged"
  std::string message;      // Starts with `field`.
};

// InvalidArgument naming the option and the entry at fault: an allowed field that is not a path
// under "spec.template" (segments of letters and digits, "[index]", "[key]" or "[*]"), or that
// names a GPU resource; a service account that is not a DNS-1123 subdomain (or a namespace/name
// pair of a DNS-1123 label and a subdomain); a host path prefix that is not absolute or has "."
// or ".." components.
absl::Status ValidateTemplatePolicyOptions(const TemplatePolicyOptions& options);

// The first problem of `job`'s spec.template under `options` (nullopt when it may run):
// malformed shapes (an object where a list belongs, a bad quantity, a mount naming no volume),
// forbidden fields, privilege, host access, service accounts, then GPU resources and images.
// `default_image` is the image the worker container gets when it names none (the controller's
// --default-image; empty when there is none).
// REQUIRES: options valid (ValidateTemplatePolicyOptions); invalid entries match nothing.
std::optional<TemplateViolation> CheckPodTemplate(const api::TrainingJob& job,
                                                  const TemplatePolicyOptions& options,
                                                  std::string_view default_image);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_TEMPLATE_POLICY_H_
