// Field-by-field JSON decoding with paths in every error, and omit-empty encoding, for the core
// kinds (core_types.h).
#ifndef WAVEPOOL_KUBE_SRC_JSON_FIELDS_H_
#define WAVEPOOL_KUBE_SRC_JSON_FIELDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "wavepool/kube/core_types.h"

namespace wavepool::kube::internal {

// Reads the fields of one JSON object (null reads as an empty object). The first error is kept
// and later reads do nothing, so a decoder reads every field and checks status() once.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string path);

  // Absent or null fields leave `out` as it is.
  void String(const char* key, std::string* out);
  void Bool(const char* key, bool* out);
  void Int(const char* key, std::int64_t* out);
  void OptionalInt(const char* key, std::optional<std::int64_t>* out);
  void StringMap(const char* key, std::map<std::string, std::string>* out);
  void StringList(const char* key, std::vector<std::string>* out);
  void Time(const char* key, std::optional<MicroTime>* out);

  // The object at `key`: an empty object when absent or null, or after an error.
  const nlohmann::json& Object(const char* key);

  // Decodes each element of the list at `key` with decode(element, element_path, &item).
  template <typename T, typename Decode>
  void List(const char* key, std::vector<T>* out, Decode decode) {
    const nlohmann::json* list = Find(key);
    if (list == nullptr) return;
    if (!list->is_array()) return Fail(Path(key), "must be a list", *list);
    out->clear();
    for (std::size_t i = 0; i < list->size() && status_.ok(); ++i) {
      T item;
      status_ = decode((*list)[i], absl::StrCat(Path(key), "[", i, "]"), &item);
      out->push_back(std::move(item));
    }
  }

  std::string Path(const char* key) const;
  const absl::Status& status() const { return status_; }

 private:
  const nlohmann::json* Find(const char* key) const;
  void Fail(const std::string& path, const char* expected, const nlohmann::json& got);

  const nlohmann::json* object_;
  std::string path_;
  absl::Status status_;
};

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

// "Pod default/w-0: <error>".
absl::Status Named(const std::string& name, const absl::Status& status);

}  // namespace wavepool::kube::internal

#endif  // WAVEPOOL_KUBE_SRC_JSON_FIELDS_H_
