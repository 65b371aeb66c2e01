// The template policy's value checks (template_checker.h): scalars, privilege, host access,
// service accounts, and the checks no option widens (GPU resources, images).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "template_policy/template_checker.h"
#include "wavepool/api/validation.h"
#include "wavepool/controller/image_reference.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

constexpr std::int64_t kMaxFileMode = 0777;
constexpr std::int64_t kMaxPort = 65535;

// The integer value of `v`, or nullopt when it is not an integer (or past int64).
std::optional<std::int64_t> IntegerOf(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

std::string Got(const json& v) {
  return absl::StrCat("got ", v.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

// --- Values -------------------------------------------------------------------------------

void Checker::AnyObject(const json& v, const FieldPath& p) {
  if (!v.is_object()) Fail(kReasonMalformedTemplate, p, "must be an object, " + Got(v));
}

void Checker::String(const json& v, const FieldPath& p) {
  if (!v.is_string()) Fail(kReasonMalformedTemplate, p, "must be a string, " + Got(v));
}

void Checker::StringList(const json& v, const FieldPath& p) {
  if (!v.is_array())
    return Fail(kReasonMalformedTemplate, p, "must be a list of strings, " + Got(v));
  for (std::size_t i = 0; i < v.size(); ++i) String(v[i], p.Index(i));
}

void Checker::StringMap(const json& v, const FieldPath& p) {
  if (!v.is_object())
    return Fail(kReasonMalformedTemplate, p, "must be a map of strings, " + Got(v));
  for (const auto& [key, value] : v.items()) String(value, p.Key(key));
}

namespace {

// The API server's limit on the annotations of one object, keys and values together, less what
// BuildPod adds to a pod (owned_objects.h: the job's name, hashes, GPU UUIDs, a few numbers).
constexpr std::size_t kMaxAnnotationBytes = 256 * 1024 - 4 * 1024;

}  // namespace

// Whether `key` of a label or annotation map at `p` may be set by a template: the API server
// would refuse a malformed key (and the pod with it, leaving the gang's GPUs reserved for pods
// that never come), and the controller's own keys say what only it decides.
bool Checker::MetadataKey(const std::string& key, const FieldPath& p) {
  if (IsControllerMetadataKey(key)) {
    Fail(kReasonForbiddenTemplateField, p,
         "reserved: keys with the prefix wavepool.dev/ are written by the controller alone, which "
         "with the node agent trusts them to name a pod's job, role, GPUs and preemption");
    return false;
  }
  if (!IsQualifiedName(key)) {
    Fail(kReasonMalformedTemplate, p,
         absl::StrCat("\"", key,
                      "\" is not a valid key: an optional DNS subdomain prefix and '/', then at "
                      "most 63 letters, digits, '-', '_' and '.', starting and ending with a "
                      "letter or digit (e.g. \"team\", \"example.com/queue\")"));
    return false;
  }
  return true;
}

void Checker::Labels(const json& v, const FieldPath& p) {
  if (!v.is_object())
    return Fail(kReasonMalformedTemplate, p, "must be a map of strings, " + Got(v));
  for (const auto& [key, value] : v.items()) {
    const FieldPath child = p.Key(key);
    if (!MetadataKey(key, child)) return;
    if (!value.is_string()) return String(value, child);
    if (!IsLabelValue(value.get<std::string>())) {
      return Fail(kReasonMalformedTemplate, child,
                  "must be a label value: empty, or at most 63 letters, digits, '-', '_' and '.', "
                  "starting and ending with a letter or digit, " +
                      Got(value));
    }
  }
}

void Checker::Annotations(const json& v, const FieldPath& p) {
  if (!v.is_object())
    return Fail(kReasonMalformedTemplate, p, "must be a map of strings, " + Got(v));
  std::size_t bytes = 0;
  for (const auto& [key, value] : v.items()) {
    const FieldPath child = p.Key(key);
    if (!MetadataKey(key, child)) return;
    if (!value.is_string()) return String(value, child);
    bytes += key.size() + value.get<std::string>().size();
  }
  if (bytes > kMaxAnnotationBytes) {
    Fail(kReasonMalformedTemplate, p,
         absl::StrCat("must total at most ", kMaxAnnotationBytes,
                      " bytes of keys and values (the API server's 256 KiB for a pod's "
                      "annotations, less 4 KiB for the controller's own), got ",
                      bytes));
  }
}

void Checker::Bool(const json& v, const FieldPath& p) {
  if (!v.is_boolean()) Fail(kReasonMalformedTemplate, p, "must be true or false, " + Got(v));
}

void Checker::NonNegativeInt(const json& v, const FieldPath& p) {
  const std::optional<std::int64_t> n = IntegerOf(v);
  if (!n || *n < 0) Fail(kReasonMalformedTemplate, p, "must be an integer >= 0, " + Got(v));
}

void Checker::FileMode(const json& v, const FieldPath& p) {
  const std::optional<std::int64_t> n = IntegerOf(v);
  if (!n || *n < 0 || *n > kMaxFileMode) {
    Fail(kReasonMalformedTemplate, p, "must be a file mode in [0, 0777] (0 to 511), " + Got(v));
  }
}

void Checker::PortNumber(const json& v, const FieldPath& p) {
  const std::optional<std::int64_t> n = IntegerOf(v);
  if (!n || *n < 1 || *n > kMaxPort) {
    Fail(kReasonMalformedTemplate, p, "must be a port in [1, 65535], " + Got(v));
  }
}

void Checker::PortName(const json& v, const FieldPath& p) {
  if (!v.is_string()) return String(v, p);
  const std::string name = v.get<std::string>();
  if (name.empty() || IsPortName(name)) return;  // An empty name is no name.
  Fail(kReasonMalformedTemplate, p,
       "must be a port name (IANA service name): at most 15 lowercase letters, digits and '-', "
       "with at least one letter, not starting or ending with '-' and without \"--\" (e.g. "
       "\"metrics\", \"grpc-2\"), " +
           Got(v));
}

namespace {

constexpr char kEnvVarNameRule[] =
    "letters, digits, '_', '-' and '.', not starting with a digit, and not \".\", \"..\" or "
    "starting with \"..\" (e.g. \"BATCH_SIZE\", \"my.env-name\")";

}  // namespace

void Checker::EnvVarName(const json& v, const FieldPath& p) {
  if (!v.is_string()) return String(v, p);
  if (v.get<std::string>().empty()) {
    return Fail(kReasonMalformedTemplate, p,
                absl::StrCat("required: an environment variable name: ", kEnvVarNameRule));
  }
  if (!IsEnvVarName(v.get<std::string>())) {
    Fail(kReasonMalformedTemplate, p,
         absl::StrCat("must be an environment variable name: ", kEnvVarNameRule, ", ", Got(v)));
  }
}

void Checker::DataKey(const json& v, const FieldPath& p) {
  if (!v.is_string()) return String(v, p);
  if (api::IsConfigMapKey(v.get<std::string>())) return;
  Fail(kReasonMalformedTemplate, p,
       "must be a ConfigMap or Secret key: at most 253 letters, digits, '-', '_' and '.', not "
       "\".\" or \"..\", " +
           Got(v));
}

void Checker::EnvPrefix(const json& v, const FieldPath& p) {
  if (!v.is_string()) return String(v, p);
  if (v.get<std::string>().empty() || IsEnvVarName(v.get<std::string>())) return;
  Fail(kReasonMalformedTemplate, p,
       absl::StrCat("must be empty or an environment variable name (it starts every variable "
                    "taken from the source): ",
                    kEnvVarNameRule, ", ", Got(v)));
}

void Checker::Quantity(const json& v, const FieldPath& p) {
  const bool ok =
      (v.is_number() && v.get<double>() >= 0) ||
      (v.is_string() && IsQuantity(v.get<std::string>()) && v.get<std::string>().front() != '-');
  if (!ok) {
    Fail(kReasonMalformedTemplate, p,
         "must be a non-negative quantity (\"500m\", \"16Gi\", \"2\"), " + Got(v));
  }
}

void Checker::RelativePath(const json& v, const FieldPath& p) {
  if (!v.is_string() ||
      (!v.get<std::string>().empty() && !IsContainedRelativePath(v.get<std::string>()))) {
    Fail(kReasonMalformedTemplate, p, "must be a relative path without \"..\", " + Got(v));
  }
}

void Checker::AbsolutePath(const json& v, const FieldPath& p) {
  if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().front() != '/') {
    Fail(kReasonMalformedTemplate, p, "must be an absolute path, " + Got(v));
  }
}

// Presence and syntax are CheckImages' (no option widens them); here only the type.
void Checker::Image(const json& v, const FieldPath& p) { String(v, p); }

void Checker::MountName(const json& v, const FieldPath& p) {
  if (!v.is_string()) return String(v, p);
  if (volume_names_.count(v.get<std::string>()) == 0) {
    Fail(kReasonMalformedTemplate, p,
         absl::StrCat("\"", v.get<std::string>(),
                      "\" names no volume of spec.template.spec.volumes (volumes: ",
                      volume_names_.empty() ? "none" : absl::StrJoin(volume_names_, ", "), ")"));
  }
}

void Checker::OneOf(const json& v, const FieldPath& p,
                    std::initializer_list<std::string_view> choices) {
  if (v.is_string() &&
      std::find(choices.begin(), choices.end(), v.get<std::string>()) != choices.end()) {
    return;
  }
  std::vector<std::string> quoted;
  for (std::string_view c : choices) quoted.push_back(absl::StrCat("\"", std::string(c), "\""));
  Fail(kReasonMalformedTemplate, p,
       absl::StrCat("must be one of ", absl::StrJoin(quoted, ", "), ", ", Got(v)));
}

// --- Privilege and host access ------------------------------------------------------------

void Checker::HostNamespace(const json& v, const FieldPath& p) {
  if (!v.is_boolean()) return Bool(v, p);
  if (v.get<bool>()) {
    Fail(kReasonHostAccessInTemplate, p,
         absl::StrCat("must be false or absent: the pod would share the node's namespace with "
                      "every process on it; an operator may allow it with "
                      "--allow-template-field ",
                      p.Generalized()));
  }
}

void Checker::HostPort(const json& v, const FieldPath& p) {
  const std::optional<std::int64_t> n = IntegerOf(v);
  if ((n && *n == 0) || (v.is_string() && v.get<std::string>().empty())) return;  // None.
  Fail(kReasonHostAccessInTemplate, p,
       absl::StrCat("must be absent: the pod would bind a port of the node, ", Got(v),
                    "; an operator may allow it with --allow-template-field ", p.Generalized()));
}

void Checker::HostPath(const json& v, const FieldPath& p) {
  if (!v.is_object()) return AnyObject(v, p);
  const std::string path =
      v.contains("path") && v["path"].is_string() ? v["path"].get<std::string>() : "";
  const bool allowed =
      IsCleanAbsolutePath(path) &&
      std::any_of(options_.allowed_host_path_prefixes.begin(),
                  options_.allowed_host_path_prefixes.end(),
                  [&](const std::string& prefix) { return PathIsUnder(path, prefix); });
  if (!allowed) {
    const std::string allowed_list =
        options_.allowed_host_path_prefixes.empty()
            ? "none are allowed"
            : absl::StrCat("allowed: under ",
                           absl::StrJoin(options_.allowed_host_path_prefixes, ", "));
    return Fail(
        kReasonHostAccessInTemplate, p,
        absl::StrCat(
            "hostPath volume of ",
            path.empty()
                ? v.value("path", json()).dump(-1, ' ', false, json::error_handler_t::replace)
                : "\"" + path + "\"",
            " refused: it would expose the node's files to the pod (", allowed_list,
            "); an operator may allow a directory with "
            "--allow-host-path"));
  }
  for (const auto& [key, value] : v.items()) {
    if (key == "type") {
      OneOf(value, p.Child(key),
            {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice",
             "BlockDevice"});
    } else if (key != "path") {
      Fail(kReasonForbiddenTemplateField, p.Child(key), "not allowed (allowed here: path, type)");
    }
  }
}

void Checker::NotPrivileged(const json& v, const FieldPath& p) {
  if (!v.is_boolean()) return Bool(v, p);
  if (v.get<bool>()) {
    Fail(kReasonPrivilegedTemplate, p,
         absl::StrCat("must be false or absent: a training container runs unprivileged; an "
                      "operator may allow it with --allow-template-field ",
                      p.Generalized()));
  }
}

void Checker::CapabilitiesAdd(const json& v, const FieldPath& p) {
  if (v.is_array() && v.empty()) return;
  Fail(kReasonPrivilegedTemplate, p,
       absl::StrCat("must be absent: capabilities may only be dropped, ", Got(v),
                    "; an operator may allow it with --allow-template-field ", p.Generalized()));
}

void Checker::SeccompType(const json& v, const FieldPath& p) {
  if (v.is_string() && v.get<std::string>() == "Unconfined") {
    return Fail(kReasonPrivilegedTemplate, p,
                "must be \"RuntimeDefault\" or \"Localhost\": \"Unconfined\" lifts the "
                "runtime's system-call filter");
  }
  OneOf(v, p, {"RuntimeDefault", "Localhost"});
}

void Checker::PositiveId(const json& v, const FieldPath& p) {
  const std::optional<std::int64_t> n = IntegerOf(v);
  if (!n || *n < 0) return Fail(kReasonMalformedTemplate, p, "must be an integer > 0, " + Got(v));
  // kube-apiserver's IsValidUserID and IsValidGroupID: ids are 31-bit.
  if (*n > kMaxPodGroupId) {
    return Fail(kReasonMalformedTemplate, p,
                absl::StrCat("must be at most ", kMaxPodGroupId,
                             " (the API server's limit for user and group ids), ", Got(v)));
  }
  if (*n == 0) {
    Fail(kReasonPrivilegedTemplate, p,
         "must be > 0: the root user and group (0) are not allowed; an operator may allow it "
         "with --allow-template-field " +
             p.Generalized());
  }
}

void Checker::PositiveIds(const json& v, const FieldPath& p) {
  if (!v.is_array())
    return Fail(kReasonMalformedTemplate, p, "must be a list of integers, " + Got(v));
  for (std::size_t i = 0; i < v.size(); ++i) PositiveId(v[i], p.Index(i));
}

void Checker::ServiceAccount(const json& v, const FieldPath& p) {
  if (!v.is_string()) return String(v, p);
  const std::string name = v.get<std::string>();
  if (name.empty() || name == "default") return;
  const std::string qualified = absl::StrCat(job_.metadata.namespace_, "/", name);
  for (const std::string& allowed : options_.allowed_service_accounts) {
    if (allowed == name || allowed == qualified) return;
  }
  Fail(kReasonServiceAccountNotAllowed, p,
       absl::StrCat("service account \"", name,
                    "\" is not allowed: job pods run as their namespace's default service "
                    "account; an operator may allow it with --allow-service-account ",
                    qualified, " (or ", name, " in every namespace)"));
}

// --- Never widened --------------------------------------------------------------------------

void CheckGpuResources(const json& pod_spec, Checker& checker) {
  const FieldPath spec = FieldPath::Template().Child("spec");
  for (const char* list : {"containers", "initContainers"}) {
    if (!pod_spec.contains(list) || !pod_spec[list].is_array()) continue;
    const json& containers = pod_spec[list];
    for (std::size_t i = 0; i < containers.size(); ++i) {
      const json& c = containers[i];
      if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
      for (const char* kind : {"limits", "requests"}) {
        const json& resources = c["resources"];
        if (!resources.contains(kind) || !resources[kind].is_object()) continue;
        for (const auto& [name, quantity] : resources[kind].items()) {
          if (!IsGpuResource(name)) continue;
          return checker.Fail(
              kReasonGpuResourceInTemplate,
              spec.Child(list).Index(i).Child("resources").Child(kind).Key(name),
              "must not be set: the controller assigns GPUs itself, by UUID (spec.gpus), and the "
              "device plugin would hand the container other GPUs");
        }
      }
    }
  }
}

namespace {

void CheckImage(const std::string& image, const FieldPath& path, Checker& checker) {
  absl::StatusOr<ImageReference> parsed = ParseImageReference(image);
  if (!parsed.ok()) {
    checker.Fail(kReasonInvalidImage, path,
                 absl::StrCat("not an image reference: ", parsed.status().message()));
  }
}

// The image of container `c`; empty when absent (or not a string: the walk reports that).
std::string ImageOf(const json& c) {
  return c.is_object() && c.contains("image") && c["image"].is_string()
             ? c["image"].get<std::string>()
             : "";
}

}  // namespace

void CheckImages(const json& pod_spec, std::string_view default_image, Checker& checker) {
  const FieldPath spec = FieldPath::Template().Child("spec");
  const json containers = pod_spec.contains("containers") && pod_spec["containers"].is_array()
                              ? pod_spec["containers"]
                              : json::array();
  // The worker container: the one named "worker", else the first (owned_objects.h).
  std::size_t worker = 0;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    if (containers[i].is_object() && containers[i].value("name", json()) == "worker") {
      worker = i;
      break;
    }
  }
  for (std::size_t i = 0; i < std::max<std::size_t>(containers.size(), 1); ++i) {
    const FieldPath path = spec.Child("containers").Index(i).Child("image");
    const std::string image = i < containers.size() ? ImageOf(containers[i]) : "";
    if (!image.empty()) {
      CheckImage(image, path, checker);
    } else if (i != worker) {
      checker.Fail(kReasonInvalidImage, path,
                   "required: only the worker container gets the controller's default image");
    } else if (default_image.empty()) {
      checker.Fail(kReasonInvalidImage, path,
                   "required: the worker container names no image and the controller has no "
                   "--default-image");
    } else {
      CheckImage(std::string(default_image), path, checker);  // Checked at start-up too.
    }
  }
  if (!pod_spec.contains("initContainers") || !pod_spec["initContainers"].is_array()) return;
  const json& init = pod_spec["initContainers"];
  for (std::size_t i = 0; i < init.size(); ++i) {
    const FieldPath path = spec.Child("initContainers").Index(i).Child("image");
    const std::string image = ImageOf(init[i]);
    if (image.empty()) {
      checker.Fail(kReasonInvalidImage, path, "required: an init container needs an image");
    } else {
      CheckImage(image, path, checker);
    }
  }
}

}  // namespace wavepool::controller::internal
