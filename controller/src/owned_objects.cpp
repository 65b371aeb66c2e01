// Names, labels, owner references and the Plan ConfigMap of a TrainingJob (owned_objects.h).
#include "wavepool/controller/owned_objects.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "owned_objects_internal.h"

namespace wavepool::controller {
namespace {

// 64-bit FNV-1a: tiny, stable across platforms and releases (std::hash is neither).
std::uint64_t Fnv1a64(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

// Kubernetes label keys and values may not end in '-' or '.'; neither may DNS names.
std::string_view TrimTrailingSeparators(std::string_view text) {
  while (!text.empty() && (text.back() == '-' || text.back() == '.')) text.remove_suffix(1);
  return text;
}

// Label values and DNS labels allow 63 characters; DNS subdomains (object names) 253.
constexpr std::size_t kMaxLabelLength = 63;
constexpr std::size_t kMaxSubdomainLength = 253;

}  // namespace

std::string NameWithSuffix(std::string_view base, std::string_view suffix, std::size_t max_length) {
  if (base.size() + suffix.size() <= max_length) {
    return absl::StrCat(std::string(base), std::string(suffix));
  }
  // "-" + 8 hex digits of the hash; the low 32 bits of FNV-1a make a collision between two
  // jobs of one namespace sharing a 40+ character prefix very unlikely.
  const std::string hash =
      absl::StrFormat("-%08x", static_cast<std::uint32_t>(Fnv1a64(base) & 0xffffffffULL));
  const std::size_t keep = max_length - suffix.size() - hash.size();
  return absl::StrCat(std::string(TrimTrailingSeparators(base.substr(0, keep))), hash,
                      std::string(suffix));
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
  if (absl::Status status = internal::CheckJobIdentity(job); !status.ok()) return status;
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

}  // namespace wavepool::controller
