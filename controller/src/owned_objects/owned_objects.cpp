// Names, labels, owner references, the Plan ConfigMap and the gangs' rendezvous Services of a
// TrainingJob (owned_objects.h).
#include "wavepool/controller/owned_objects.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "owned_objects/owned_objects_internal.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/object_key.h"
#include "wavepool/base/fnv1a.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::controller {
namespace {

// Kubernetes label keys and values may not end in '-' or '.'; neither may DNS names.
std::string_view TrimTrailingSeparators(std::string_view text) {
  while (!text.empty() && (text.back() == '-' || text.back() == '.')) text.remove_suffix(1);
  return text;
}

// Label values and DNS labels allow 63 characters; DNS subdomains (object names) 253.
constexpr std::size_t kMaxLabelLength = 63;
constexpr std::size_t kMaxSubdomainLength = 253;

// `<kept prefix of shown>-<8 hex of FNV-1a(hashed)><suffix>` within max_length: the low 32 bits
// of FNV-1a make a collision between two jobs of one namespace sharing a 40+ character prefix
// very unlikely.
std::string HashedName(std::string_view shown, std::string_view hashed, std::string_view suffix,
                       std::size_t max_length) {
  const std::string hash =
      absl::StrFormat("-%08x", static_cast<std::uint32_t>(Fnv1a64(hashed) & 0xffffffffULL));
  const std::size_t keep = max_length - suffix.size() - hash.size();
  return absl::StrCat(std::string(TrimTrailingSeparators(shown.substr(0, keep))), hash,
                      std::string(suffix));
}

// `<base><suffix>` as a DNS label of at most 63 characters (RFC 1123; RFC 1035 with
// `letter_first`, as Service names are). A base that is not one already gets a hash of itself
// (HashedName), so that "a.b" and "a-b" stay distinct. Job names are DNS-1123 subdomains:
// lowercase letters, digits, '-' and '.', starting and ending with a letter or digit.
std::string DnsLabelWithSuffix(std::string_view base, std::string_view suffix, bool letter_first) {
  std::string label(base);
  std::replace(label.begin(), label.end(), '.', '-');
  const bool starts_with_letter = !label.empty() && label.front() >= 'a' && label.front() <= 'z';
  if (letter_first && !starts_with_letter) label.insert(0, "tj-");
  if (label == base) return NameWithSuffix(base, suffix, kMaxLabelLength);
  constexpr std::size_t kHashLength = 9;  // "-" + 8 hex digits
  return HashedName(label, base, suffix,
                    std::min(kMaxLabelLength, label.size() + kHashLength + suffix.size()));
}

}  // namespace

std::string NameWithSuffix(std::string_view base, std::string_view suffix, std::size_t max_length) {
  if (base.size() + suffix.size() <= max_length) {
    return absl::StrCat(std::string(base), std::string(suffix));
  }
  return HashedName(base, base, suffix, max_length);
}

std::string GangServiceName(std::string_view job_name, std::int64_t gang_generation) {
  return DnsLabelWithSuffix(job_name, absl::StrCat("-g", gang_generation), /*letter_first=*/true);
}

std::string PodHostname(std::string_view job_name, std::int64_t gang_generation,
                        std::int64_t rank) {
  return DnsLabelWithSuffix(job_name, absl::StrCat("-g", gang_generation, "-", rank),
                            /*letter_first=*/false);
}

std::string RendezvousStore(const api::TrainingJob& job, std::int64_t gang_generation) {
  return absl::StrCat("tcp://", PodHostname(job.metadata.name, gang_generation, 0), ".",
                      GangServiceName(job.metadata.name, gang_generation), ".",
                      job.metadata.namespace_, ".svc:", kRendezvousPort);
}

std::string PlanConfigMapName(std::string_view job_name) {
  return NameWithSuffix(job_name, "-plan", kMaxSubdomainLength);
}

std::string PodName(std::string_view job_name, std::int64_t gang_generation, std::int64_t rank) {
  return NameWithSuffix(job_name, absl::StrCat("-g", gang_generation, "-", rank), kMaxLabelLength);
}

std::string JobLabelValue(std::string_view job_name) {
  return NameWithSuffix(job_name, "", kMaxLabelLength);
}

std::map<std::string, std::string> JobSelector(std::string_view job_name) {
  return {{std::string(kLabelAppName), std::string(kAppName)},
          {std::string(kLabelManagedBy), std::string(kManagedBy)},
          {std::string(kLabelJob), JobLabelValue(job_name)}};
}

std::map<std::string, std::string> GangSelector(std::string_view job_name,
                                                std::int64_t gang_generation) {
  std::map<std::string, std::string> selector = JobSelector(job_name);
  selector[std::string(kLabelGangGeneration)] = absl::StrCat(gang_generation);
  return selector;
}

bool IsControllerMetadataKey(std::string_view key) {
  constexpr std::string_view kDomain = "wavepool.dev";
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view prefix = key.substr(0, slash);
  if (prefix == kDomain) return true;
  // A subdomain: "<something>.wavepool.dev".
  return prefix.size() > kDomain.size() &&
         prefix.substr(prefix.size() - kDomain.size()) == kDomain &&
         prefix[prefix.size() - kDomain.size() - 1] == '.';
}

std::string HashJson(const nlohmann::json& json) {
  return absl::StrFormat("%016x", Fnv1a64(json.dump()));
}

api::OwnerReference ControllerOwnerReference(const api::TrainingJob& job) {
  api::OwnerReference owner;
  owner.api_version = std::string(api::kApiVersion);
  owner.kind = std::string(api::kTrainingJobKind);
  owner.name = job.metadata.name;
  owner.uid = job.metadata.uid;
  owner.controller = true;
  owner.block_owner_deletion = true;
  return owner;
}

namespace {

// The ownerReference with controller: true, or nullptr.
const api::OwnerReference* ControllerReference(const api::ObjectMeta& metadata) {
  for (const api::OwnerReference& owner : metadata.owner_references) {
    if (owner.controller.value_or(false)) return &owner;
  }
  return nullptr;
}

}  // namespace

bool IsControlledBy(const api::ObjectMeta& metadata, std::string_view uid) {
  const api::OwnerReference* owner = ControllerReference(metadata);
  return owner != nullptr && !uid.empty() && owner->uid == uid;
}

std::string ControllingJobUid(const api::ObjectMeta& metadata) {
  const api::OwnerReference* owner = ControllerReference(metadata);
  if (owner == nullptr || owner->kind != api::kTrainingJobKind ||
      owner->api_version != api::kApiVersion) {
    return "";
  }
  return owner->uid;
}

namespace internal {

absl::Status CheckJobIdentity(const api::TrainingJob& job) {
  if (job.metadata.name.empty()) {
    return absl::InvalidArgumentError("TrainingJob metadata.name: required");
  }
  const std::string object = absl::StrCat("TrainingJob ", job.metadata.name);
  if (job.metadata.namespace_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(object, ": metadata.namespace: required (TrainingJob is namespaced)"));
  }
  if (job.metadata.uid.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        object,
        ": metadata.uid: required for the ownerReference (use the object read from the "
        "API server)"));
  }
  return absl::OkStatus();
}

nlohmann::json OwnedMetadata(const api::TrainingJob& job, const std::string& name) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [key, value] : JobSelector(job.metadata.name)) labels[key] = value;
  return {
      {"name", name},
      {"namespace", job.metadata.namespace_},
      {"labels", labels},
      {"annotations", {{std::string(kAnnotationJobName), job.metadata.name}}},
      {"ownerReferences", nlohmann::json::array({api::ToJson(ControllerOwnerReference(job))})},
  };
}

}  // namespace internal

absl::StatusOr<nlohmann::json> BuildPlanConfigMap(const api::TrainingJob& job,
                                                  const api::Plan& plan) {
  WAVEPOOL_RETURN_IF_ERROR(internal::CheckJobIdentity(job));
  const nlohmann::json plan_json = api::ToJson(plan);
  nlohmann::json config_map = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata", internal::OwnedMetadata(job, PlanConfigMapName(job.metadata.name))},
      // Indented so that `kubectl get configmap -o yaml` shows a readable block.
      {"data", {{std::string(kPlanKey), plan_json.dump(2) + "\n"}}},
  };
  config_map["metadata"]["annotations"][std::string(kAnnotationPlanHash)] = HashJson(plan_json);
  return config_map;
}

absl::StatusOr<nlohmann::json> BuildGangService(const api::TrainingJob& job,
                                                std::int64_t gang_generation) {
  WAVEPOOL_RETURN_IF_ERROR(internal::CheckJobIdentity(job));
  if (gang_generation < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainingJob ", api::NamespacedName(job.metadata),
                     ": gangGeneration: must be >= 0, got ", gang_generation));
  }
  nlohmann::json metadata =
      internal::OwnedMetadata(job, GangServiceName(job.metadata.name, gang_generation));
  metadata["labels"][std::string(kLabelGangGeneration)] = absl::StrCat(gang_generation);
  nlohmann::json selector = nlohmann::json::object();
  for (const auto& [key, value] : GangSelector(job.metadata.name, gang_generation)) {
    selector[key] = value;
  }
  return nlohmann::json{
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", std::move(metadata)},
      {"spec",
       {
           // Headless: DNS answers with the pods themselves, and gives each pod whose
           // hostname/subdomain name this Service an A record of its own.
           {"clusterIP", "None"},
           // The ranks look each other up while they start, long before any is ready.
           {"publishNotReadyAddresses", true},
           {"selector", std::move(selector)},
           {"ports", nlohmann::json::array({{{"name", std::string(kRendezvousPortName)},
                                             {"port", kRendezvousPort},
                                             {"targetPort", kRendezvousPort},
                                             {"protocol", "TCP"}}})},
       }},
  };
}

namespace {

// "Pod <ns>/<name>: <field>: <what>".
absl::Status BadPod(const std::string& pod, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("Pod ", pod, ": ", std::string(field), ": ", std::string(what)));
}

// metadata.<map>[key]; nullopt when absent.
std::optional<std::string> MetaString(const std::map<std::string, std::string>& entries,
                                      std::string_view key) {
  const auto found = entries.find(std::string(key));
  if (found == entries.end()) return std::nullopt;
  return found->second;
}

absl::StatusOr<std::string> RequiredAnnotation(const kube::Pod& pod, const std::string& id,
                                               std::string_view key) {
  std::optional<std::string> value = MetaString(pod.metadata.annotations, key);
  if (!value || value->empty()) {
    return BadPod(id, absl::StrCat("metadata.annotations[", std::string(key), "]"), "required");
  }
  return *value;
}

absl::StatusOr<double> NumberAnnotation(const kube::Pod& pod, const std::string& id,
                                        std::string_view key) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string text, RequiredAnnotation(pod, id, key));
  double value = 0;
  if (!absl::SimpleAtod(text, &value)) {
    return BadPod(id, absl::StrCat("metadata.annotations[", std::string(key), "]"),
                  absl::StrCat("must be a number, got \"", text, "\""));
  }
  return value;
}

// The fields only a fg pod carries (what bg placement weighs against).
absl::Status ReadForegroundAnnotations(const kube::Pod& pod, const std::string& id,
                                       GpuAssignment& a) {
  WAVEPOOL_ASSIGN_OR_RETURN(double idle, NumberAnnotation(pod, id, kAnnotationIdleFraction));
  WAVEPOOL_ASSIGN_OR_RETURN(double slowdown, NumberAnnotation(pod, id, kAnnotationMaxSlowdown));
  WAVEPOOL_ASSIGN_OR_RETURN(std::string allow,
                            RequiredAnnotation(pod, id, kAnnotationAllowBackground));
  if (allow != "true" && allow != "false") {
    return BadPod(
        id, absl::StrCat("metadata.annotations[", std::string(kAnnotationAllowBackground), "]"),
        absl::StrCat("must be \"true\" or \"false\", got \"", allow, "\""));
  }
  a.idle_fraction = idle;
  a.max_foreground_slowdown = slowdown;
  a.allow_background = allow == "true";
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<GpuAssignment>> AssignmentFromPod(const kube::Pod& pod) {
  const std::string& ns = pod.metadata.namespace_;
  const std::string& name = pod.metadata.name;
  const std::string id = api::NamespacedName(pod.metadata);
  if (name.empty()) return BadPod(id, "metadata.name", "required");
  const std::string& phase = pod.status.phase;
  if (phase == "Succeeded" || phase == "Failed") return std::optional<GpuAssignment>();
  GpuAssignment a;
  a.pod = id;
  const std::optional<std::string> role = MetaString(pod.metadata.labels, kLabelRole);
  const std::optional<api::Role> parsed =
      role ? api::ParseEnum<api::Role>(*role) : std::optional<api::Role>();
  if (!parsed) {
    return BadPod(id, absl::StrCat("metadata.labels[", std::string(kLabelRole), "]"),
                  absl::StrCat("must be one of ", api::EnumNames<api::Role>()));
  }
  a.role = *parsed;
  if (ControllingJobUid(pod.metadata).empty()) {
    return BadPod(id, "metadata.ownerReferences",
                  "no controller reference to a TrainingJob (not created by wavepool, or "
                  "orphaned from its job): its GPUs are not counted");
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string job, RequiredAnnotation(pod, id, kAnnotationJobName));
  a.job = api::ObjectKey{ns, job}.ToString();
  a.node = pod.spec.node_name;
  if (a.node.empty()) return BadPod(id, "spec.nodeName", "required (wavepool binds its pods)");
  WAVEPOOL_ASSIGN_OR_RETURN(std::string uuids, RequiredAnnotation(pod, id, kAnnotationGpuUuids));
  a.gpu_uuids = absl::StrSplit(uuids, ',', absl::SkipEmpty());
  WAVEPOOL_ASSIGN_OR_RETURN(std::string memory,
                            RequiredAnnotation(pod, id, kAnnotationMemoryPerGpu));
  if (!absl::SimpleAtoi(memory, &a.memory_per_gpu_bytes) || a.memory_per_gpu_bytes < 0) {
    return BadPod(id,
                  absl::StrCat("metadata.annotations[", std::string(kAnnotationMemoryPerGpu), "]"),
                  absl::StrCat("must be a byte count >= 0, got \"", memory, "\""));
  }
  if (a.role == api::Role::kForeground) {
    WAVEPOOL_RETURN_IF_ERROR(ReadForegroundAnnotations(pod, id, a));
  }
  return std::optional<GpuAssignment>(std::move(a));
}

absl::StatusOr<std::optional<GpuAssignment>> AssignmentFromPod(const nlohmann::json& pod) {
  absl::StatusOr<kube::Pod> decoded = kube::Pod::FromJson(pod);
  if (!decoded.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        decoded.status().message(), " (not a wavepool pod: its GPUs are not counted)"));
  }
  return AssignmentFromPod(*decoded);
}

}  // namespace wavepool::controller
