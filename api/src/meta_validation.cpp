// Rules shared by every kind: Kubernetes names, metav1.Condition, numbers and times.
#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "validation_util.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/validation.h"

namespace wavepool::api {
namespace {

constexpr std::size_t kMaxSubdomainLength = 253;
constexpr std::size_t kMaxLabelLength = 63;
// metav1.Condition limits (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
constexpr std::size_t kMaxConditionTypeLength = 316;
constexpr std::size_t kMaxReasonLength = 1024;
constexpr std::size_t kMaxMessageLength = 32768;

bool IsLowerAlnum(char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z'); }

// One dot-free part of a DNS name: [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool IsDnsPart(std::string_view part) {
  if (part.empty() || !IsLowerAlnum(part.front()) || !IsLowerAlnum(part.back())) return false;
  for (char c : part) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// The name part of a qualified name: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool IsQualifiedNamePart(std::string_view name) {
  if (name.empty() || !absl::ascii_isalnum(name.front()) || !absl::ascii_isalnum(name.back())) {
    return false;
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// metav1.Condition type: "Planned" or "example.com/Planned".
bool IsConditionType(std::string_view type) {
  if (type.size() > kMaxConditionTypeLength) return false;
  const std::size_t slash = type.rfind('/');
  if (slash == std::string_view::npos) return IsQualifiedNamePart(type);
  return IsDns1123Subdomain(type.substr(0, slash)) && IsQualifiedNamePart(type.substr(slash + 1));
}

// metav1.Condition reason: [A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?
bool IsConditionReason(std::string_view reason) {
  if (reason.empty() || reason.size() > kMaxReasonLength || !absl::ascii_isalpha(reason.front())) {
    return false;
  }
  if (reason.back() == ',' || reason.back() == ':') return false;
  for (char c : reason) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != ',' && c != ':') return false;
  }
  return true;
}

absl::Status ValidateCondition(const Condition& condition, const FieldPath& path) {
  if (condition.type.empty()) return path.Child("type").Invalid("required");
  if (!IsConditionType(condition.type)) {
    return path.Child("type").Invalid(
        "must be a CamelCase name, optionally prefixed by a DNS subdomain and '/' (e.g. "
        "\"Planned\"), got " +
        Quote(condition.type));
  }
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("observedGeneration"), condition.observed_generation, 0));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckRfc3339(path.Child("lastTransitionTime"), condition.last_transition_time, true));
  if (condition.reason.empty()) return path.Child("reason").Invalid("required");
  if (!IsConditionReason(condition.reason)) {
    return path.Child("reason").Invalid(
        "must be a CamelCase word of letters, digits, '_', ',' and ':' (e.g. \"PlanFound\"), "
        "got " +
        Quote(condition.reason));
  }
  if (condition.message.size() > kMaxMessageLength) {
    return path.Child("message").Invalid(absl::StrCat("must be at most ", kMaxMessageLength,
                                                      " bytes, got ", condition.message.size()));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsDns1123Subdomain(std::string_view name) {
  if (name.empty() || name.size() > kMaxSubdomainLength) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    if (!IsDnsPart(name.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsDns1123Label(std::string_view name) {
  return name.size() <= kMaxLabelLength && IsDnsPart(name);
}

absl::Status ValidateConditions(const std::vector<Condition>& conditions, const FieldPath& path) {
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateCondition(conditions[i], path.Index(i)));
    for (std::size_t j = 0; j < i; ++j) {
      if (conditions[j].type == conditions[i].type) {
        return path.Index(i).Child("type").Invalid(
            absl::StrCat("duplicates ", path.Index(j).str(), ".type ", Quote(conditions[i].type)));
      }
    }
  }
  return absl::OkStatus();
}

std::string ObjectContext(std::string_view kind, std::string_view name) {
  // A valid namespace/name is at most 63 + 1 + 253 bytes; an invalid one is echoed in part.
  constexpr std::size_t kMaxShown = 320;
  std::string context =
      absl::StrCat(std::string(kind), " ", std::string(name.substr(0, kMaxShown)));
  if (name.size() > kMaxShown) context += "...";
  return context;
}

absl::Status CheckAtLeast(const FieldPath& path, std::int64_t value, std::int64_t minimum) {
  if (value >= minimum) return absl::OkStatus();
  return path.Invalid(absl::StrCat("must be >= ", minimum, ", got ", value));
}

absl::Status CheckAtLeast(const FieldPath& path, double value, double minimum) {
  if (std::isfinite(value) && value >= minimum) return absl::OkStatus();
  // "+Inf" is >= any minimum: say what is wrong with it.
  return path.Invalid(absl::StrCat("must be ", std::isfinite(value) ? "" : "a finite number ",
                                   ">= ", FormatDouble(minimum), ", got ", FormatDouble(value)));
}

absl::Status CheckPositive(const FieldPath& path, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return path.Invalid(absl::StrCat("must be ", std::isfinite(value) ? "" : "a finite number ",
                                   "> 0.0, got ", FormatDouble(value)));
}

absl::Status CheckLearningRateFitsFloat32(const FieldPath& path, double value) {
  constexpr double kMaxFloat = std::numeric_limits<float>::max();
  if (value <= kMaxFloat) return absl::OkStatus();
  return path.Invalid(absl::StrCat("must be at most ", FormatDouble(kMaxFloat),
                                   " (the largest float32: the workers train in float32), got ",
                                   FormatDouble(value)));
}

absl::Status CheckInClosedRange(const FieldPath& path, double value, double low, double high) {
  if (std::isfinite(value) && value >= low && value <= high) return absl::OkStatus();
  return path.Invalid(absl::StrCat("must be in [", FormatDouble(low), ", ", FormatDouble(high),
                                   "], got ", FormatDouble(value)));
}

absl::Status CheckNonEmpty(const FieldPath& path, std::string_view value) {
  return value.empty() ? path.Invalid("required") : absl::OkStatus();
}

absl::Status CheckRfc3339(const FieldPath& path, std::string_view value, bool required) {
  if (value.empty()) return required ? path.Invalid("required") : absl::OkStatus();
  absl::StatusOr<std::chrono::system_clock::time_point> time = ParseRfc3339(value);
  return time.ok() ? absl::OkStatus() : path.Invalid(std::string(time.status().message()));
}

absl::Status CheckObjectNames(const ObjectMeta& metadata, bool namespaced) {
  const FieldPath name_path("metadata.name");
  if (metadata.name.empty()) return name_path.Invalid("required");
  if (!IsDns1123Subdomain(metadata.name)) {
    return name_path.Invalid(
        "must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and '.', "
        "starting and ending with a letter or digit), got " +
        Quote(metadata.name));
  }
  const FieldPath namespace_path("metadata.namespace");
  if (!namespaced) {
    if (metadata.namespace_.empty()) return absl::OkStatus();
    return namespace_path.Invalid("must be empty for a cluster-scoped object, got " +
                                  Quote(metadata.namespace_));
  }
  if (metadata.namespace_.empty()) return namespace_path.Invalid("required");
  if (!IsDns1123Label(metadata.namespace_)) {
    return namespace_path.Invalid(
        "must be a DNS-1123 label (at most 63 lowercase letters, digits and '-', starting and "
        "ending with a letter or digit), got " +
        Quote(metadata.namespace_));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::api
