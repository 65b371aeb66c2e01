// JSON decoding and omit-empty encoding shared by every wavepool.dev type and the Kubernetes
// client's core kinds (wavepool::kube).
//
// Decoding: DecodeValue(json, path, &out) overloads check one value's JSON type and convert it;
// an ObjectReader walks one JSON object field by field, keeps the first error, and at Finish()
// reports any field nobody read (strict decoding) or hands the leftovers back (lenient decoding:
// metadata, and Kubernetes objects that carry fields nobody here models). FieldOrNull and FieldAs
// look one field up without recording anything, for filters over raw objects that must not fail.
// Struct codecs are DecodeValue/EncodeValue overloads in namespace wavepool::api, declared before
// use, so the templates below find them by argument-dependent lookup.
#ifndef WAVEPOOL_API_JSON_CODEC_H_
#define WAVEPOOL_API_JSON_CODEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/enums.h"
#include "wavepool/api/field_path.h"

namespace wavepool::api {

// How an error message shows a JSON value: `string "eight"`, `number 2.5`, `boolean true`,
// `null`, `object`, `array`. Long strings are cut at 64 characters.
std::string Describe(const nlohmann::json& value);

// `text` as a JSON string literal for messages ("vgg 16" -> "\"vgg 16\""), cut after
// `max_bytes` (on a character boundary, with "..." after the quote); bytes that are not UTF-8
// become U+FFFD rather than an exception.
std::string Quote(std::string_view text, std::size_t max_bytes = 256);

// The shortest text that reads back as the same double, with a ".0" on whole numbers
// ("0.5", "2.0", "1e-05"), as JSON writes it.
std::string FormatDouble(double value);

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, std::int64_t* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, double* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, bool* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, std::string* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path,
                         std::map<std::string, std::string>* out);
// Auto | On | Off; also true (On) and false (Off), because YAML 1.1 parsers such as kubectl's
// read an unquoted On/Off as a boolean.
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, Toggle* out);

template <typename E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, E* out) {
  if (value.is_string()) {
    if (std::optional<E> parsed = ParseEnum<E>(value.get_ref<const std::string&>())) {
      *out = *parsed;
      return absl::OkStatus();
    }
    return path.Invalid(absl::StrCat("must be one of ", EnumNames<E>(), ", got ",
                                     Quote(value.get_ref<const std::string&>())));
  }
  return path.Invalid(absl::StrCat("must be one of ", EnumNames<E>(), ", got ", Describe(value)));
}

template <typename T>
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, std::vector<T>* out) {
  if (!value.is_array()) return path.Invalid("must be an array, got " + Describe(value));
  std::vector<T> items(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    absl::Status status = DecodeValue(value[i], path.Index(i), &items[i]);
    if (!status.ok()) return status;
  }
  *out = std::move(items);
  return absl::OkStatus();
}

// Reads one JSON object. Not thread-safe; borrows `value`, which must outlive the reader.
class ObjectReader {
 public:
  // A non-object `value` records "must be an object" as the reader's error.
  ObjectReader(const nlohmann::json& value, FieldPath path);

  const FieldPath& path() const { return path_; }
  bool ok() const { return status_.ok(); }

  // Decodes field `key` into *out when it is present and not null; leaves *out alone otherwise.
  template <typename T>
  void Read(std::string_view key, T* out) {
    if (const nlohmann::json* field = Find(key)) Record(DecodeValue(*field, path_.Child(key), out));
  }
  template <typename T>
  void Read(std::string_view key, std::optional<T>* out) {
    if (const nlohmann::json* field = Find(key)) {
      T value{};
      absl::Status status = DecodeValue(*field, path_.Child(key), &value);
      if (status.ok()) *out = std::move(value);
      Record(status);
    }
  }
  // Copies field `key` verbatim (any JSON type); null when absent.
  void ReadRaw(std::string_view key, nlohmann::json* out);
  // As ReadRaw, but the field must be an object when present.
  void ReadRawObject(std::string_view key, nlohmann::json* out);
  // Records "required" when field `key` is absent or null.
  void Require(std::string_view key);
  // Requires field `key` to be the string `expected` (apiVersion, kind).
  void Expect(std::string_view key, std::string_view expected);
  // Records `status` unless an earlier error is already recorded.
  void Record(const absl::Status& status);

  // The first error; else an unknown field ("did you mean ...?"); else OK.
  absl::Status Finish();
  // The first error; else OK, with the fields nobody read copied into *unknown_fields.
  absl::Status Finish(nlohmann::json* unknown_fields);

 private:
  // The field's value when present, non-null and no error is recorded yet; marks `key` as known.
  const nlohmann::json* Find(std::string_view key);
  bool IsKnown(const std::string& key) const;

  const nlohmann::json& value_;
  FieldPath path_;
  absl::Status status_;
  std::vector<std::string> known_;
};

// Lenient lookups, for code that only looks at raw objects and must never fail (informer event
// filters and indexes). Unlike ObjectReader they record nothing: a field that is absent, null or
// of another type reads as absent, and so does every field of a value that is not an object.

// Field `key` of `object` as it is (any JSON type, null included); null when `object` is not an
// object or has no field `key`.
const nlohmann::json& FieldOrNull(const nlohmann::json& object, std::string_view key);

// Field `key` of `object` converted as DecodeValue converts it; nullopt when the field is absent,
// null or does not convert (a number where a string belongs; a map with one entry that is not a
// string), or when `object` is not an object.
template <typename T>
std::optional<T> FieldAs(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json& field = FieldOrNull(object, key);
  T value{};
  if (field.is_null() || !DecodeValue(field, FieldPath(), &value).ok()) return std::nullopt;
  return value;
}

template <typename E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
nlohmann::json EncodeValue(E value) {
  return std::string(ToString(value));
}
inline nlohmann::json EncodeValue(std::int64_t value) { return value; }
inline nlohmann::json EncodeValue(double value) { return value; }
inline nlohmann::json EncodeValue(bool value) { return value; }
inline nlohmann::json EncodeValue(const std::string& value) { return value; }
inline nlohmann::json EncodeValue(const nlohmann::json& value) { return value; }
inline nlohmann::json EncodeValue(const std::map<std::string, std::string>& value) {
  return nlohmann::json(value);
}
template <typename T>
nlohmann::json EncodeValue(const std::vector<T>& values) {
  nlohmann::json array = nlohmann::json::array();
  for (const T& value : values) array.push_back(EncodeValue(value));
  return array;
}

// Builds one JSON object; the Omit* forms leave out empty values, as Kubernetes' omitempty does.
class ObjectWriter {
 public:
  template <typename T>
  ObjectWriter& Put(std::string_view key, const T& value) {
    object_[std::string(key)] = EncodeValue(value);
    return *this;
  }
  template <typename T>
  ObjectWriter& Put(std::string_view key, const std::optional<T>& value) {
    if (value.has_value()) object_[std::string(key)] = EncodeValue(*value);
    return *this;
  }
  template <typename T>
  ObjectWriter& OmitEmpty(std::string_view key, const T& value) {
    if (!IsEmpty(value)) object_[std::string(key)] = EncodeValue(value);
    return *this;
  }
  nlohmann::json Take() { return std::move(object_); }

 private:
  static bool IsEmpty(std::int64_t value) { return value == 0; }
  static bool IsEmpty(double value) { return value == 0.0; }
  static bool IsEmpty(bool value) { return !value; }
  static bool IsEmpty(const nlohmann::json& value) { return value.is_null() || value.empty(); }
  template <typename C>
  static bool IsEmpty(const C& container) {
    return container.empty();
  }

  nlohmann::json object_ = nlohmann::json::object();
};

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_JSON_CODEC_H_
