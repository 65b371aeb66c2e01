#include "json_fields.h"

#include <cstdio>
#include <ctime>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/api/object_meta.h"

namespace wavepool::kube {

std::string FormatMicroTime(MicroTime time) {
  // metav1.MicroTime: "2006-01-02T15:04:05.000000Z07:00", always UTC here.
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  std::int64_t seconds = micros / 1'000'000;
  std::int64_t fraction = micros % 1'000'000;
  if (fraction < 0) {
    fraction += 1'000'000;
    seconds -= 1;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[96];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(fraction));
  return text;
}

}  // namespace wavepool::kube

namespace wavepool::kube::internal {

void ReadStringMap(api::ObjectReader& reader, std::string_view key,
                   std::map<std::string, std::string>* out) {
  nlohmann::json value;
  reader.ReadRaw(key, &value);
  if (value.is_null()) return;
  const api::FieldPath path = reader.path().Child(key);
  if (!value.is_object())
    return reader.Record(path.Invalid("must be an object, got " + api::Describe(value)));
  std::map<std::string, std::string> entries;
  for (const auto& [name, item] : value.items()) {
    if (item.is_number()) {
      entries[name] = item.dump();
    } else if (item.is_string()) {
      entries[name] = item.get<std::string>();
    } else {
      return reader.Record(path.Key(name).Invalid("must be a string, got " + api::Describe(item)));
    }
  }
  *out = std::move(entries);
}

void ReadTime(api::ObjectReader& reader, std::string_view key, std::optional<MicroTime>* out) {
  nlohmann::json value;
  reader.ReadRaw(key, &value);
  if (value.is_null()) return;
  if (value.is_string()) {
    absl::StatusOr<MicroTime> time = api::ParseRfc3339(value.get_ref<const std::string&>());
    if (time.ok()) {
      *out = *time;
      return;
    }
  }
  reader.Record(
      reader.path().Child(key).Invalid("must be an RFC 3339 time, got " + api::Describe(value)));
}

nlohmann::json ReadObject(api::ObjectReader& reader, std::string_view key) {
  nlohmann::json value = nlohmann::json::object();
  reader.ReadRawObject(key, &value);  // left empty when absent, null or not an object
  return value;
}

absl::Status Lenient(api::ObjectReader& reader) {
  nlohmann::json unknown_fields;  // kept by the caller in its raw JSON
  return reader.Finish(&unknown_fields);
}

void Put(nlohmann::json& out, const char* key, const std::string& value) {
  if (value.empty()) {
    out.erase(key);
  } else {
    out[key] = value;
  }
}

void Put(nlohmann::json& out, const char* key, const std::map<std::string, std::string>& value) {
  if (value.empty()) {
    out.erase(key);
  } else {
    out[key] = value;
  }
}

void Put(nlohmann::json& out, const char* key, const std::vector<std::string>& value) {
  if (value.empty()) {
    out.erase(key);
  } else {
    out[key] = value;
  }
}

void Put(nlohmann::json& out, const char* key, const std::optional<std::int64_t>& value) {
  if (value) {
    out[key] = *value;
  } else {
    out.erase(key);
  }
}

void Put(nlohmann::json& out, const char* key, const std::optional<MicroTime>& value) {
  if (value) {
    out[key] = FormatMicroTime(*value);
  } else {
    out.erase(key);
  }
}

void PutBool(nlohmann::json& out, const char* key, bool value) {
  if (value) {
    out[key] = true;
  } else {
    out.erase(key);
  }
}

void PutInt(nlohmann::json& out, const char* key, std::int64_t value) {
  if (value != 0) {
    out[key] = value;
  } else {
    out.erase(key);
  }
}

void PutObject(nlohmann::json& out, const char* key, nlohmann::json value) {
  if (value.empty()) {
    out.erase(key);
  } else {
    out[key] = std::move(value);
  }
}

nlohmann::json Base(const nlohmann::json& raw) {
  return raw.is_object() ? raw : nlohmann::json::object();
}

absl::Status DecodeTop(const nlohmann::json& json, const char* kind, ObjectMeta* metadata,
                       std::string* name) {
  *name = kind;
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": must be a JSON object, got ", json.type_name()));
  }
  const auto found = json.find("metadata");
  if (found != json.end() && !found->is_null()) {
    absl::StatusOr<ObjectMeta> decoded = ObjectMeta::FromJson(*found);
    if (!decoded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind, ": metadata.", decoded.status().message()));
    }
    *metadata = *std::move(decoded);
  }
  *name = absl::StrCat(kind, " ", api::NamespacedName(*metadata));
  const auto actual_kind = json.find("kind");
  if (actual_kind != json.end() && *actual_kind != kind) {
    return absl::InvalidArgumentError(
        absl::StrCat(*name, ": kind: must be \"", kind, "\", got ", actual_kind->dump()));
  }
  return absl::OkStatus();
}

nlohmann::json EncodeTop(const nlohmann::json& raw, const char* api_version, const char* kind,
                         const ObjectMeta& metadata) {
  nlohmann::json out = Base(raw);
  out["apiVersion"] = api_version;
  out["kind"] = kind;
  out["metadata"] = api::ToJson(metadata);
  return out;
}

void DropRawMetadata(ObjectMeta& metadata) {
  metadata.unknown_fields = nullptr;
  for (api::OwnerReference& owner : metadata.owner_references) owner.unknown_fields = nullptr;
}

absl::Status Named(const std::string& name, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(name, ": ", status.message()));
}

}  // namespace wavepool::kube::internal
