#include "json_fields.h"

#include <cstdio>
#include <ctime>
#include <string>

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

namespace {

const nlohmann::json& EmptyObject() {
  static const nlohmann::json* const kEmpty = new nlohmann::json(nlohmann::json::object());
  return *kEmpty;
}

}  // namespace

FieldReader::FieldReader(const nlohmann::json& object, std::string path)
    : object_(&object), path_(std::move(path)) {
  if (object.is_null()) {
    object_ = &EmptyObject();
  } else if (!object.is_object()) {
    Fail(path_.empty() ? "object" : path_, "must be an object", object);
    object_ = &EmptyObject();
  }
}

std::string FieldReader::Path(const char* key) const {
  return path_.empty() ? key : absl::StrCat(path_, ".", key);
}

const nlohmann::json* FieldReader::Find(const char* key) const {
  if (!status_.ok()) return nullptr;
  const auto it = object_->find(key);
  return it == object_->end() || it->is_null() ? nullptr : &*it;
}

void FieldReader::Fail(const std::string& path, const char* expected, const nlohmann::json& got) {
  if (!status_.ok()) return;
  status_ = absl::InvalidArgumentError(
      absl::StrCat(path, ": ", expected, ", got ",
                   got.is_string() ? "string " + got.dump() : std::string(got.type_name())));
}

void FieldReader::String(const char* key, std::string* out) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return;
  if (!value->is_string()) return Fail(Path(key), "must be a string", *value);
  *out = value->get<std::string>();
}

void FieldReader::Bool(const char* key, bool* out) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return;
  if (!value->is_boolean()) return Fail(Path(key), "must be true or false", *value);
  *out = value->get<bool>();
}

void FieldReader::Int(const char* key, std::int64_t* out) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return;
  if (!value->is_number_integer()) return Fail(Path(key), "must be an integer", *value);
  *out = value->get<std::int64_t>();
}

void FieldReader::OptionalInt(const char* key, std::optional<std::int64_t>* out) {
  std::int64_t value = 0;
  if (Find(key) == nullptr) return;
  Int(key, &value);
  if (status_.ok()) *out = value;
}

void FieldReader::StringMap(const char* key, std::map<std::string, std::string>* out) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return;
  if (!value->is_object()) return Fail(Path(key), "must be an object", *value);
  out->clear();
  for (const auto& [name, item] : value->items()) {
    // Quantities ("cpu": 2) may come as numbers from hand-written manifests.
    if (item.is_number()) {
      (*out)[name] = item.dump();
    } else if (item.is_string()) {
      (*out)[name] = item.get<std::string>();
    } else {
      return Fail(absl::StrCat(Path(key), "[", name, "]"), "must be a string", item);
    }
  }
}

void FieldReader::StringList(const char* key, std::vector<std::string>* out) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return;
  if (!value->is_array()) return Fail(Path(key), "must be a list", *value);
  out->clear();
  for (std::size_t i = 0; i < value->size(); ++i) {
    if (!(*value)[i].is_string()) {
      return Fail(absl::StrCat(Path(key), "[", i, "]"), "must be a string", (*value)[i]);
    }
    out->push_back((*value)[i].get<std::string>());
  }
}

void FieldReader::Time(const char* key, std::optional<MicroTime>* out) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return;
  if (!value->is_string()) return Fail(Path(key), "must be an RFC 3339 time", *value);
  absl::StatusOr<MicroTime> time = api::ParseRfc3339(value->get<std::string>());
  if (!time.ok()) return Fail(Path(key), "must be an RFC 3339 time", *value);
  *out = *time;
}

const nlohmann::json& FieldReader::Object(const char* key) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return EmptyObject();
  if (!value->is_object()) {
    Fail(Path(key), "must be an object", *value);
    return EmptyObject();
  }
  return *value;
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

absl::Status Named(const std::string& name, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(name, ": ", status.message()));
}

}  // namespace wavepool::kube::internal
