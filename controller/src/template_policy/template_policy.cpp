// The template policy (template_policy.h): a walk over spec.template against the built-in allow
// list (the tables below, the one place it is written down), then the checks no option widens
// (GPU resources, images).
#include "wavepool/controller/template_policy.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "template_policy/template_checker.h"
#include "wavepool/base/truncate.h"

namespace wavepool::controller {
namespace internal {
namespace {

// Bounds on what a refusal repeats of the template (map keys, values): Truncate.
constexpr std::size_t kMaxFieldBytes = 512;
constexpr std::size_t kMaxMessageBytes = 2048;

// --- The built-in allow list: every field a TrainingJob's pod template may set. -------------

constexpr FieldRule kTemplateRules[] = {
    {"metadata", &Checker::Metadata},
    {"spec", &Checker::PodSpec},
};
constexpr FieldRule kMetadataRules[] = {
    {"annotations", &Checker::Annotations},
    {"labels", &Checker::Labels},
};
constexpr FieldRule kPodSpecRules[] = {
    {"affinity", &Checker::AnyObject},  // Scheduling constraints only; the kubelet checks them.
    {"automountServiceAccountToken", &Checker::Bool},
    {"containers", &Checker::Containers},
    {"hostIPC", &Checker::HostNamespace},
    {"hostNetwork", &Checker::HostNamespace},
    {"hostPID", &Checker::HostNamespace},
    {"imagePullSecrets", &Checker::PullSecrets},
    {"initContainers", &Checker::Containers},
    {"nodeSelector", &Checker::StringMap},
    {"restartPolicy", &Checker::RestartPolicy},  // Replaced by Never (owned_objects.h).
    {"securityContext", &Checker::PodSecurity},
    {"serviceAccount", &Checker::ServiceAccount},  // The deprecated spelling.
    {"serviceAccountName", &Checker::ServiceAccount},
    {"terminationGracePeriodSeconds", &Checker::NonNegativeInt},
    {"tolerations", &Checker::Tolerations},
    {"volumes", &Checker::Volumes},
};
constexpr FieldRule kContainerRules[] = {
    {"args", &Checker::StringList},     {"command", &Checker::StringList},
    {"env", &Checker::EnvList},         {"envFrom", &Checker::EnvFromList},
    {"image", &Checker::Image},         {"imagePullPolicy", &Checker::PullPolicy},
    {"name", &Checker::ContainerName},  {"ports", &Checker::Ports},
    {"resources", &Checker::Resources}, {"securityContext", &Checker::ContainerSecurity},
    {"volumeMounts", &Checker::Mounts}, {"workingDir", &Checker::String},
};
constexpr FieldRule kEnvVarRules[] = {
    {"name", &Checker::EnvVarName},
    {"value", &Checker::String},
    {"valueFrom", &Checker::EnvVarSource},
};
// ConfigMaps and Secrets are always the pod's (the job's) namespace: a reference cannot name
// another.
constexpr FieldRule kEnvVarSourceRules[] = {
    {"configMapKeyRef", &Checker::KeyRef},
    {"fieldRef", &Checker::FieldRef},
    {"resourceFieldRef", &Checker::ResourceFieldRef},
    {"secretKeyRef", &Checker::KeyRef},
};
constexpr FieldRule kKeyRefRules[] = {
    {"key", &Checker::DataKey},
    {"name", &Checker::String},
    {"optional", &Checker::Bool},
};
constexpr FieldRule kFieldRefRules[] = {
    {"apiVersion", &Checker::String},
    {"fieldPath", &Checker::String},
};
constexpr FieldRule kResourceFieldRefRules[] = {
    {"containerName", &Checker::String},
    {"divisor", &Checker::Quantity},
    {"resource", &Checker::String},
};
constexpr FieldRule kEnvFromRules[] = {
    {"configMapRef", &Checker::NameRef},
    {"prefix", &Checker::EnvPrefix},
    {"secretRef", &Checker::NameRef},
};
constexpr FieldRule kNameRefRules[] = {
    {"name", &Checker::String},
    {"optional", &Checker::Bool},
};
constexpr FieldRule kResourcesRules[] = {
    {"limits", &Checker::ResourceList},
    {"requests", &Checker::ResourceList},
};
// The resources a container may ask for; GPUs are the controller's to assign.
constexpr std::string_view kResourceNames[] = {"cpu", "ephemeral-storage", "memory"};
constexpr FieldRule kPortRules[] = {
    {"containerPort", &Checker::PortNumber}, {"hostIP", &Checker::HostPort},
    {"hostPort", &Checker::HostPort},        {"name", &Checker::PortName},
    {"protocol", &Checker::Protocol},
};
constexpr FieldRule kMountRules[] = {
    {"mountPath", &Checker::AbsolutePath},
    {"name", &Checker::MountName},
    {"readOnly", &Checker::Bool},
    {"subPath", &Checker::RelativePath},
};
constexpr FieldRule kVolumeRules[] = {
    {"configMap", &Checker::ConfigMapVolume},
    {"downwardAPI", &Checker::DownwardApi},
    {"emptyDir", &Checker::EmptyDir},
    {"hostPath", &Checker::HostPath},  // Only under an operator's --allow-host-path.
    {"name", &Checker::String},
    {"persistentVolumeClaim", &Checker::ClaimVolume},
    {"projected", &Checker::ProjectedVolume},
    {"secret", &Checker::SecretVolume},
};
constexpr FieldRule kEmptyDirRules[] = {
    {"medium", &Checker::Medium},
    {"sizeLimit", &Checker::Quantity},
};
constexpr FieldRule kConfigMapVolumeRules[] = {
    {"defaultMode", &Checker::FileMode},
    {"items", &Checker::KeyPaths},
    {"name", &Checker::String},
    {"optional", &Checker::Bool},
};
constexpr FieldRule kSecretVolumeRules[] = {
    {"defaultMode", &Checker::FileMode},
    {"items", &Checker::KeyPaths},
    {"optional", &Checker::Bool},
    {"secretName", &Checker::String},
};
constexpr FieldRule kKeyPathRules[] = {
    {"key", &Checker::String},
    {"mode", &Checker::FileMode},
    {"path", &Checker::RelativePath},
};
constexpr FieldRule kClaimVolumeRules[] = {
    {"claimName", &Checker::String},
    {"readOnly", &Checker::Bool},
};
constexpr FieldRule kProjectedRules[] = {
    {"defaultMode", &Checker::FileMode},
    {"sources", &Checker::Projections},
};
constexpr FieldRule kProjectionRules[] = {
    {"configMap", &Checker::ProjectedItems},
    {"downwardAPI", &Checker::DownwardApi},
    {"secret", &Checker::ProjectedItems},
};
constexpr FieldRule kProjectedItemsRules[] = {
    {"items", &Checker::KeyPaths},
    {"name", &Checker::String},
    {"optional", &Checker::Bool},
};
constexpr FieldRule kDownwardApiRules[] = {
    {"defaultMode", &Checker::FileMode},
    {"items", &Checker::DownwardItems},
};
constexpr FieldRule kDownwardItemRules[] = {
    {"fieldRef", &Checker::FieldRef},
    {"mode", &Checker::FileMode},
    {"path", &Checker::RelativePath},
    {"resourceFieldRef", &Checker::ResourceFieldRef},
};
constexpr FieldRule kTolerationRules[] = {
    {"effect", &Checker::String},   {"key", &Checker::String},
    {"operator", &Checker::String}, {"tolerationSeconds", &Checker::NonNegativeInt},
    {"value", &Checker::String},
};
// The restricted Pod Security Standard's form of a security context.
constexpr FieldRule kPodSecurityRules[] = {
    {"fsGroup", &Checker::PositiveId},
    {"fsGroupChangePolicy", &Checker::ChangePolicy},
    {"runAsGroup", &Checker::PositiveId},
    {"runAsNonRoot", &Checker::Bool},
    {"runAsUser", &Checker::PositiveId},
    {"seccompProfile", &Checker::Seccomp},
    {"supplementalGroups", &Checker::PositiveIds},
};
constexpr FieldRule kContainerSecurityRules[] = {
    {"allowPrivilegeEscalation", &Checker::NotPrivileged},
    {"capabilities", &Checker::Capabilities},
    {"privileged", &Checker::NotPrivileged},
    {"readOnlyRootFilesystem", &Checker::Bool},
    {"runAsGroup", &Checker::PositiveId},
    {"runAsNonRoot", &Checker::Bool},
    {"runAsUser", &Checker::PositiveId},
    {"seccompProfile", &Checker::Seccomp},
};
constexpr FieldRule kCapabilitiesRules[] = {
    {"add", &Checker::CapabilitiesAdd},
    {"drop", &Checker::StringList},
};
constexpr FieldRule kSeccompRules[] = {
    {"localhostProfile", &Checker::String},
    {"type", &Checker::SeccompType},
};

// --- Structure ------------------------------------------------------------------------------

}  // namespace

Checker::Checker(const api::TrainingJob& job, const TemplatePolicyOptions& options)
    : job_(job), options_(options) {
  for (const std::string& field : options.allowed_fields) {
    absl::StatusOr<std::vector<internal::PathSegment>> path = internal::ParseAllowedPath(field);
    if (path.ok()) allowed_.push_back(std::move(*path));
  }
}

void Checker::Fail(std::string_view reason, const FieldPath& path, std::string_view what) {
  if (violation_.has_value()) return;
  const std::string field = Truncate(path.ToString(), kMaxFieldBytes);
  violation_ = TemplateViolation{
      reason, field, Truncate(absl::StrCat(field, ": ", std::string(what)), kMaxMessageBytes)};
}

bool Checker::Allowed(const FieldPath& path) const {
  for (const auto& allowed : allowed_) {
    if (internal::PathCovers(allowed, path)) return true;
  }
  return false;
}

void Checker::Object(const json& value, const FieldPath& path, Rules rules) {
  if (!value.is_object()) {
    return Fail(kReasonMalformedTemplate, path,
                absl::StrCat("must be an object, got ", value.type_name()));
  }
  for (const auto& [key, child] : value.items()) {
    if (violation_.has_value()) return;
    const FieldPath child_path = path.Child(key);
    // A null is an absent field (YAML's `key:` with no value).
    if (child.is_null() || Allowed(child_path)) continue;
    const FieldRule* rule = nullptr;
    for (const FieldRule& r : rules) {
      if (r.name == key) rule = &r;
    }
    if (rule == nullptr) {
      std::vector<std::string> names;
      for (const FieldRule& r : rules) names.emplace_back(r.name);
      return Fail(kReasonForbiddenTemplateField, child_path,
                  absl::StrCat("not allowed in a TrainingJob's pod template (allowed here: ",
                               absl::StrJoin(names, ", "),
                               "); an operator may allow it with --allow-template-field ",
                               child_path.Generalized()));
    }
    (this->*(rule->check))(child, child_path);
  }
}

void Checker::List(const json& value, const FieldPath& path, Rule each) {
  if (!value.is_array()) {
    return Fail(kReasonMalformedTemplate, path,
                absl::StrCat("must be a list, got ", value.type_name()));
  }
  for (std::size_t i = 0; i < value.size() && !violation_.has_value(); ++i) {
    if (!Allowed(path.Index(i))) (this->*each)(value[i], path.Index(i));
  }
}

void Checker::Template(const json& v, const FieldPath& p) { Object(v, p, kTemplateRules); }
void Checker::Metadata(const json& v, const FieldPath& p) { Object(v, p, kMetadataRules); }

void Checker::PodSpec(const json& v, const FieldPath& p) {
  if (v.is_object() && v.contains("volumes") && v["volumes"].is_array()) {
    for (const json& volume : v["volumes"]) {
      if (volume.is_object() && volume.contains("name") && volume["name"].is_string()) {
        volume_names_.insert(volume["name"].get<std::string>());
      }
    }
  }
  Object(v, p, kPodSpecRules);
}

void Checker::Container(const json& v, const FieldPath& p) {
  Object(v, p, kContainerRules);
  // The API server refuses a pod with a nameless container (the worker gets its name only when
  // the template has no container at all).
  if (!violation_ && v.is_object() && (!v.contains("name") || v["name"].is_null())) {
    Fail(kReasonMalformedTemplate, p.Child("name"),
         "required: a DNS label (lowercase letters, digits and '-'), unique in the pod");
  }
}

void Checker::ContainerName(const json& v, const FieldPath& p) {
  if (!v.is_string()) return String(v, p);
  const std::string name = v.get<std::string>();
  if (!IsDns1123Label(name)) {
    return Fail(kReasonMalformedTemplate, p,
                absl::StrCat("must be a DNS label (at most 63 lowercase letters, digits and '-', "
                             "starting and ending with a letter or digit), got \"",
                             name, "\""));
  }
  // Containers and init containers share one namespace of names.
  if (!container_names_.insert(name).second) {
    Fail(kReasonMalformedTemplate, p, absl::StrCat("duplicate container name \"", name, "\""));
  }
}

void Checker::EnvVar(const json& v, const FieldPath& p) {
  Object(v, p, kEnvVarRules);
  if (!violation_ && (!v.contains("name") || !v["name"].is_string())) {
    Fail(kReasonMalformedTemplate, p.Child("name"), "required: a string");
  }
}

void Checker::EnvVarSource(const json& v, const FieldPath& p) { Object(v, p, kEnvVarSourceRules); }
void Checker::KeyRef(const json& v, const FieldPath& p) { Object(v, p, kKeyRefRules); }
void Checker::FieldRef(const json& v, const FieldPath& p) { Object(v, p, kFieldRefRules); }
void Checker::ResourceFieldRef(const json& v, const FieldPath& p) {
  Object(v, p, kResourceFieldRefRules);
}
void Checker::EnvFromSource(const json& v, const FieldPath& p) { Object(v, p, kEnvFromRules); }
void Checker::NameRef(const json& v, const FieldPath& p) { Object(v, p, kNameRefRules); }
void Checker::Resources(const json& v, const FieldPath& p) { Object(v, p, kResourcesRules); }

void Checker::ResourceList(const json& v, const FieldPath& p) {
  if (!v.is_object()) {
    return Fail(kReasonMalformedTemplate, p,
                absl::StrCat("must be an object, got ", v.type_name()));
  }
  for (const auto& [name, quantity] : v.items()) {
    if (violation_.has_value()) return;
    const FieldPath child = p.Key(name);
    if (internal::IsGpuResource(name)) {
      return Fail(kReasonGpuResourceInTemplate, child,
                  "must not be set: the controller assigns GPUs itself, by UUID (spec.gpus), and "
                  "the device plugin would hand the container other GPUs");
    }
    if (Allowed(child)) continue;
    if (std::find(std::begin(kResourceNames), std::end(kResourceNames), name) ==
        std::end(kResourceNames)) {
      return Fail(kReasonForbiddenTemplateField, child,
                  absl::StrCat("not allowed: a template may ask for cpu, memory and "
                               "ephemeral-storage only; an operator may allow it with "
                               "--allow-template-field ",
                               child.Generalized()));
    }
    Quantity(quantity, child);
  }
}

// kube-apiserver refuses two ports of one name in a container ("Duplicate value"); across the
// pod's containers it only warns.
void Checker::Ports(const json& v, const FieldPath& p) {
  List(v, p, &Checker::Port);
  std::map<std::string, std::size_t> seen;  // Port name -> its first index.
  for (std::size_t i = 0; i < v.size() && !violation_; ++i) {
    if (!v[i].is_object() || !v[i].contains("name") || !v[i]["name"].is_string()) continue;
    const std::string name = v[i]["name"].get<std::string>();
    if (name.empty()) continue;
    const auto [first, inserted] = seen.emplace(name, i);
    if (!inserted) {
      Fail(kReasonMalformedTemplate, p.Index(i).Child("name"),
           absl::StrCat("duplicate port name \"", name, "\" in this container (also ",
                        p.Index(first->second).ToString(), ")"));
    }
  }
}

void Checker::Port(const json& v, const FieldPath& p) {
  Object(v, p, kPortRules);
  if (!violation_ && v.is_object() &&
      (!v.contains("containerPort") || v["containerPort"].is_null())) {
    Fail(kReasonMalformedTemplate, p.Child("containerPort"), "required: a port in [1, 65535]");
  }
}

void Checker::Mount(const json& v, const FieldPath& p) {
  Object(v, p, kMountRules);
  if (violation_) return;
  for (const char* required : {"name", "mountPath"}) {
    if (!v.contains(required) || !v[required].is_string()) {
      return Fail(kReasonMalformedTemplate, p.Child(required), "required: a string");
    }
  }
}

void Checker::Volumes(const json& v, const FieldPath& p) {
  List(v, p, &Checker::Volume);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < v.size() && !violation_; ++i) {
    if (!v[i].is_object() || !v[i].contains("name") || !v[i]["name"].is_string()) continue;
    const std::string name = v[i]["name"].get<std::string>();
    if (!seen.insert(name).second) {
      Fail(kReasonMalformedTemplate, p.Index(i).Child("name"),
           absl::StrCat("duplicate volume name \"", name, "\""));
    }
  }
}

void Checker::Volume(const json& v, const FieldPath& p) {
  Object(v, p, kVolumeRules);
  if (violation_) return;
  if (!v.contains("name") || !v["name"].is_string() || v["name"].get<std::string>().empty()) {
    return Fail(kReasonMalformedTemplate, p.Child("name"), "required: a non-empty string");
  }
  std::vector<std::string> sources;
  for (const auto& [key, source] : v.items()) {
    if (key != "name" && !source.is_null()) sources.push_back(key);
  }
  if (sources.size() > 1) {
    Fail(kReasonMalformedTemplate, p,
         absl::StrCat("must have one volume source, got ", absl::StrJoin(sources, ", ")));
  }
}

void Checker::EmptyDir(const json& v, const FieldPath& p) { Object(v, p, kEmptyDirRules); }
void Checker::ConfigMapVolume(const json& v, const FieldPath& p) {
  Object(v, p, kConfigMapVolumeRules);
}
void Checker::SecretVolume(const json& v, const FieldPath& p) { Object(v, p, kSecretVolumeRules); }
void Checker::ClaimVolume(const json& v, const FieldPath& p) { Object(v, p, kClaimVolumeRules); }
void Checker::ProjectedVolume(const json& v, const FieldPath& p) { Object(v, p, kProjectedRules); }
void Checker::Projection(const json& v, const FieldPath& p) { Object(v, p, kProjectionRules); }
void Checker::ProjectedItems(const json& v, const FieldPath& p) {
  Object(v, p, kProjectedItemsRules);
}
void Checker::DownwardApi(const json& v, const FieldPath& p) { Object(v, p, kDownwardApiRules); }
void Checker::DownwardItem(const json& v, const FieldPath& p) { Object(v, p, kDownwardItemRules); }
void Checker::KeyPath(const json& v, const FieldPath& p) { Object(v, p, kKeyPathRules); }
void Checker::Toleration(const json& v, const FieldPath& p) { Object(v, p, kTolerationRules); }
void Checker::PodSecurity(const json& v, const FieldPath& p) { Object(v, p, kPodSecurityRules); }
void Checker::ContainerSecurity(const json& v, const FieldPath& p) {
  Object(v, p, kContainerSecurityRules);
}
void Checker::Capabilities(const json& v, const FieldPath& p) { Object(v, p, kCapabilitiesRules); }
void Checker::Seccomp(const json& v, const FieldPath& p) { Object(v, p, kSeccompRules); }

}  // namespace internal

std::optional<TemplateViolation> CheckPodTemplate(const api::TrainingJob& job,
                                                  const TemplatePolicyOptions& options,
                                                  std::string_view default_image) {
  const nlohmann::json& tmpl = job.spec.pod_template;
  internal::Checker checker(job, options);
  const internal::FieldPath root = internal::FieldPath::Template();
  // The checks test every type before reading a value; should one slip, nlohmann::json throws,
  // and the template is refused rather than the reconcile crashing.
  try {
    if (!tmpl.is_null()) checker.Template(tmpl, root);
    const nlohmann::json spec =
        tmpl.is_object() && tmpl.contains("spec") && tmpl["spec"].is_object()
            ? tmpl["spec"]
            : nlohmann::json::object();
    if (!checker.violation()) internal::CheckGpuResources(spec, checker);
    if (!checker.violation()) internal::CheckImages(spec, default_image, checker);
  } catch (const nlohmann::json::exception& e) {
    checker.Fail(kReasonMalformedTemplate, root,
                 absl::StrCat("not a valid PodTemplateSpec: ", e.what()));
  }
  return checker.violation();
}

}  // namespace wavepool::controller
