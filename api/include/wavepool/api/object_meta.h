// The Kubernetes object metadata every wavepool.dev object carries: ObjectMeta (metav1.ObjectMeta),
// OwnerReference and Condition (metav1.Condition), with their JSON forms and RFC 3339 times.
//
// All types here are plain values: copyable, not synchronised (guard shared instances yourself).
#ifndef WAVEPOOL_API_OBJECT_META_H_
#define WAVEPOOL_API_OBJECT_META_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/enums.h"

namespace wavepool::api {

inline constexpr std::string_view kGroup = "wavepool.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "wavepool.dev/v1alpha1";

// metav1.OwnerReference: the object that owns this one (a TrainingJob owns its Pods and Plan
// ConfigMap). Fields a later Kubernetes adds are kept in unknown_fields.
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  nlohmann::json unknown_fields = nlohmann::json::object();

  static absl::StatusOr<OwnerReference> FromJson(const nlohmann::json& json);
};

// metav1.ObjectMeta, the fields wavepool reads or writes. Every other metadata field the API
// server sends (managedFields, selfLink, deletionGracePeriodSeconds, ...) is kept verbatim in
// unknown_fields and written back by ToJson, so a read-modify-write never drops data.
// Empty strings, zero generation and empty maps are omitted from JSON, as Kubernetes does.
struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;  // "namespace" on the wire; the trailing underscore dodges the keyword.
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339, set by the API server.
  std::string deletion_timestamp;  // RFC 3339, set by the API server.
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  nlohmann::json unknown_fields = nlohmann::json::object();

  static absl::StatusOr<ObjectMeta> FromJson(const nlohmann::json& json);
};

// metav1.Condition: one aspect of an object's state. Conditions in a list are keyed by type.
struct Condition {
  std::string type;  // e.g. "Planned"; CamelCase, or "<domain>/<Type>".
  ConditionStatus status = ConditionStatus::kUnknown;
  std::int64_t observed_generation = 0;  // The metadata.generation the condition was set from.
  std::string last_transition_time;      // RFC 3339; changes only when status changes.
  std::string reason;                    // CamelCase machine-readable cause, e.g. "PlanFound".
  std::string message;                   // For people; may be empty.

  static absl::StatusOr<Condition> FromJson(const nlohmann::json& json);
};

// "namespace/name", or "name" when the namespace is empty (cluster-scoped objects).
std::string NamespacedName(const ObjectMeta& metadata);

nlohmann::json ToJson(const OwnerReference& owner);
nlohmann::json ToJson(const ObjectMeta& metadata);
nlohmann::json ToJson(const Condition& condition);

// The condition of `type` in `conditions`, or nullptr. The pointer is valid until the vector
// changes.
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);

// Adds `condition`, or updates the one of the same type, as meta.SetStatusCondition does:
// last_transition_time becomes `now` when the condition is new or its status changed, and is
// kept otherwise. Returns whether anything changed.
bool SetCondition(std::vector<Condition>* conditions, Condition condition,
                  std::chrono::system_clock::time_point now);

// "2026-05-01T10:00:00Z": UTC, whole seconds, as metav1.Time serialises.
std::string FormatRfc3339(std::chrono::system_clock::time_point time);

// Parses an RFC 3339 date-time ("2026-05-01T10:00:00Z", "2026-05-01T12:00:00.5+02:00").
// InvalidArgument for anything else.
absl::StatusOr<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_OBJECT_META_H_
