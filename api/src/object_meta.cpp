#include "wavepool/api/object_meta.h"

#include <utility>

#include "absl/time/time.h"
#include "object_meta_codec.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::api {

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, OwnerReference* out) {
  ObjectReader reader(value, path);
  reader.Read("apiVersion", &out->api_version);
  reader.Read("kind", &out->kind);
  reader.Read("name", &out->name);
  reader.Read("uid", &out->uid);
  reader.Read("controller", &out->controller);
  reader.Read("blockOwnerDeletion", &out->block_owner_deletion);
  return reader.Finish(&out->unknown_fields);
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, ObjectMeta* out) {
  ObjectReader reader(value, path);
  reader.Read("name", &out->name);
  reader.Read("generateName", &out->generate_name);
  reader.Read("namespace", &out->namespace_);
  reader.Read("uid", &out->uid);
  reader.Read("resourceVersion", &out->resource_version);
  reader.Read("generation", &out->generation);
  reader.Read("creationTimestamp", &out->creation_timestamp);
  reader.Read("deletionTimestamp", &out->deletion_timestamp);
  reader.Read("labels", &out->labels);
  reader.Read("annotations", &out->annotations);
  reader.Read("ownerReferences", &out->owner_references);
  reader.Read("finalizers", &out->finalizers);
  return reader.Finish(&out->unknown_fields);
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, Condition* out) {
  ObjectReader reader(value, path);
  reader.Read("type", &out->type);
  reader.Require("status");
  reader.Read("status", &out->status);
  reader.Read("observedGeneration", &out->observed_generation);
  reader.Read("lastTransitionTime", &out->last_transition_time);
  reader.Read("reason", &out->reason);
  reader.Read("message", &out->message);
  return reader.Finish();
}

absl::StatusOr<OwnerReference> OwnerReference::FromJson(const nlohmann::json& json) {
  OwnerReference owner;
  WAVEPOOL_RETURN_IF_ERROR(DecodeValue(json, FieldPath(), &owner));
  return owner;
}

absl::StatusOr<ObjectMeta> ObjectMeta::FromJson(const nlohmann::json& json) {
  ObjectMeta metadata;
  WAVEPOOL_RETURN_IF_ERROR(DecodeValue(json, FieldPath(), &metadata));
  return metadata;
}

absl::StatusOr<Condition> Condition::FromJson(const nlohmann::json& json) {
  Condition condition;
  WAVEPOOL_RETURN_IF_ERROR(DecodeValue(json, FieldPath(), &condition));
  return condition;
}

nlohmann::json ToJson(const OwnerReference& owner) {
  nlohmann::json json =
      owner.unknown_fields.is_object() ? owner.unknown_fields : nlohmann::json::object();
  json.update(ObjectWriter()
                  .Put("apiVersion", owner.api_version)
                  .Put("kind", owner.kind)
                  .Put("name", owner.name)
                  .Put("uid", owner.uid)
                  .Put("controller", owner.controller)
                  .Put("blockOwnerDeletion", owner.block_owner_deletion)
                  .Take());
  return json;
}

nlohmann::json ToJson(const ObjectMeta& metadata) {
  // Modelled fields win over a stale copy of the same key in unknown_fields.
  nlohmann::json json =
      metadata.unknown_fields.is_object() ? metadata.unknown_fields : nlohmann::json::object();
  json.update(ObjectWriter()
                  .OmitEmpty("name", metadata.name)
                  .OmitEmpty("generateName", metadata.generate_name)
                  .OmitEmpty("namespace", metadata.namespace_)
                  .OmitEmpty("uid", metadata.uid)
                  .OmitEmpty("resourceVersion", metadata.resource_version)
                  .OmitEmpty("generation", metadata.generation)
                  .OmitEmpty("creationTimestamp", metadata.creation_timestamp)
                  .OmitEmpty("deletionTimestamp", metadata.deletion_timestamp)
                  .OmitEmpty("labels", metadata.labels)
                  .OmitEmpty("annotations", metadata.annotations)
                  .OmitEmpty("ownerReferences", metadata.owner_references)
                  .OmitEmpty("finalizers", metadata.finalizers)
                  .Take());
  return json;
}

nlohmann::json ToJson(const Condition& condition) {
  return ObjectWriter()
      .Put("type", condition.type)
      .Put("status", condition.status)
      .OmitEmpty("observedGeneration", condition.observed_generation)
      .OmitEmpty("lastTransitionTime", condition.last_transition_time)
      .Put("reason", condition.reason)
      .Put("message", condition.message)
      .Take();
}

std::string NamespacedName(const ObjectMeta& metadata) {
  if (metadata.namespace_.empty()) return metadata.name;
  return metadata.namespace_ + "/" + metadata.name;
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const Condition& condition : conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

bool SetCondition(std::vector<Condition>* conditions, Condition condition,
                  std::chrono::system_clock::time_point now) {
  for (Condition& existing : *conditions) {
    if (existing.type != condition.type) continue;
    bool changed = false;
    if (existing.status != condition.status) {
      existing.status = condition.status;
      existing.last_transition_time = FormatRfc3339(now);
      changed = true;
    }
    auto assign = [&changed](auto& field, auto& value) {
      if (field != value) {
        field = std::move(value);
        changed = true;
      }
    };
    assign(existing.reason, condition.reason);
    assign(existing.message, condition.message);
    assign(existing.observed_generation, condition.observed_generation);
    return changed;
  }
  condition.last_transition_time = FormatRfc3339(now);
  conditions->push_back(std::move(condition));
  return true;
}

std::string FormatRfc3339(std::chrono::system_clock::time_point time) {
  const absl::Time truncated = absl::FromUnixSeconds(
      std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count());
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", truncated, absl::UTCTimeZone());
}

absl::StatusOr<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text) {
  absl::Time time;
  std::string error;
  // RFC3339_full accepts fractional seconds and "Z" or a numeric offset.
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &time, &error)) {
    return absl::InvalidArgumentError(
        "must be an RFC 3339 time such as \"2026-05-01T10:00:00Z\", got " + Quote(text));
  }
  return absl::ToChronoTime(time);
}

}  // namespace wavepool::api
