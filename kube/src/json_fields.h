// What the core kinds (core_types.h) add to api's JSON codec (wavepool/api/json_codec.h): lenient
// readers for Kubernetes' looser fields, and writers that update an object's raw JSON in place.
#ifndef WAVEPOOL_KUBE_SRC_JSON_FIELDS_H_
#define WAVEPOOL_KUBE_SRC_JSON_FIELDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/json_codec.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::kube::internal {

// Readers over api::ObjectReader for what Kubernetes writes more loosely than wavepool.dev's
// types. Each marks `key` as read, leaves `*out` alone when the field is absent or null, and
// records its error (by field path) in `reader`.

// A map of strings whose values may also be numbers: quantities ("cpu": 2) come as numbers from
// hand-written manifests, and are kept as their JSON text ("2").
void ReadStringMap(api::ObjectReader& reader, std::string_view key,
                   std::map<std::string, std::string>* out);
// metav1.Time or metav1.MicroTime: an RFC 3339 time.
void ReadTime(api::ObjectReader& reader, std::string_view key, std::optional<MicroTime>* out);
// The object at `key`: an empty object when absent or null, or after an error.
nlohmann::json ReadObject(api::ObjectReader& reader, std::string_view key);
// The reader's first error. Fields nobody read are not errors: Kubernetes objects carry many
// fields that kube does not model, and each type keeps them in its `raw` JSON.
absl::Status Lenient(api::ObjectReader& reader);

// Writers: the field when it has a value, removed when empty (as Kubernetes omits empty fields).
void Put(nlohmann::json& out, const char* key, const std::string& value);
void Put(nlohmann::json& out, const char* key, const std::map<std::string, std::string>& value);
void Put(nlohmann::json& out, const char* key, const std::vector<std::string>& value);
void Put(nlohmann::json& out, const char* key, const std::optional<std::int64_t>& value);
void Put(nlohmann::json& out, const char* key, const std::optional<MicroTime>& value);
void PutBool(nlohmann::json& out, const char* key, bool value);              // false: removed
void PutInt(nlohmann::json& out, const char* key, std::int64_t value);       // 0: removed
void PutObject(nlohmann::json& out, const char* key, nlohmann::json value);  // {} or []: removed

// `json` as an object to start encoding from (an empty object when it is not one).
nlohmann::json Base(const nlohmann::json& raw);

// Decodes the metadata, apiVersion and kind of a top-level object of `kind`: "Pod default/w-0"
// names it in errors (`*name`).
absl::Status DecodeTop(const nlohmann::json& json, const char* kind, ObjectMeta* metadata,
                       std::string* name);
// apiVersion, kind and metadata written over `raw`.
nlohmann::json EncodeTop(const nlohmann::json& raw, const char* api_version, const char* kind,
                         const ObjectMeta& metadata);

// Empties the metadata's unknown fields and its owner references' (DropRawJson).
void DropRawMetadata(ObjectMeta& metadata);

// "Pod default/w-0: <error>".
absl::Status Named(const std::string& name, const absl::Status& status);

}  // namespace wavepool::kube::internal

#endif  // WAVEPOOL_KUBE_SRC_JSON_FIELDS_H_
