#include "wavepool/api/json_codec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/base/truncate.h"

namespace wavepool::api {
namespace {

constexpr std::size_t kMaxDescribedString = 64;

// Edit distance between two short field names, to suggest the one a typo meant.
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known field closest to `key` when it is plausibly a typo of it, else "".
std::string ClosestField(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  const std::string lower_key = absl::AsciiStrToLower(key);
  for (const std::string& candidate : known) {
    std::size_t distance =
        lower_key == absl::AsciiStrToLower(candidate) ? 0 : EditDistance(key, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  const std::size_t limit = key.size() <= 4 ? 1 : 2;
  return best_distance <= limit ? best : "";
}

}  // namespace

std::string Describe(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::string: {
      return "string " + Quote(value.get_ref<const std::string&>(), kMaxDescribedString);
    }
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "number " + value.dump();
    case nlohmann::json::value_t::number_float:
      return "number " + FormatDouble(value.get<double>());
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "boolean true" : "boolean false";
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::array:
      return "array";
    default:
      return "binary";
  }
}

std::string Quote(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return nlohmann::json(std::string(text))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return Quote(Utf8Prefix(text, max_bytes), max_bytes) + "...";
}

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return nlohmann::json(value).dump();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, std::int64_t* out) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    *out = value.get<std::int64_t>();
    return absl::OkStatus();
  }
  if (value.is_number_unsigned()) {
    const std::uint64_t unsigned_value = value.get<std::uint64_t>();
    if (unsigned_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return path.Invalid("must be an integer in the 64-bit signed range, got " + value.dump());
    }
    *out = static_cast<std::int64_t>(unsigned_value);
    return absl::OkStatus();
  }
  return path.Invalid("must be an integer, got " + Describe(value));
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, double* out) {
  if (!value.is_number()) return path.Invalid("must be a number, got " + Describe(value));
  const double number = value.get<double>();
  if (!std::isfinite(number))
    return path.Invalid("must be a finite number, got " + Describe(value));
  *out = number;
  return absl::OkStatus();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, bool* out) {
  if (!value.is_boolean()) return path.Invalid("must be a boolean, got " + Describe(value));
  *out = value.get<bool>();
  return absl::OkStatus();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, std::string* out) {
  if (!value.is_string()) return path.Invalid("must be a string, got " + Describe(value));
  *out = value.get<std::string>();
  return absl::OkStatus();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path,
                         std::map<std::string, std::string>* out) {
  if (!value.is_object()) return path.Invalid("must be an object, got " + Describe(value));
  std::map<std::string, std::string> entries;
  for (const auto& [key, entry] : value.items()) {
    WAVEPOOL_RETURN_IF_ERROR(DecodeValue(entry, path.Key(key), &entries[key]));
  }
  *out = std::move(entries);
  return absl::OkStatus();
}

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, Toggle* out) {
  if (value.is_boolean()) {
    *out = value.get<bool>() ? Toggle::kOn : Toggle::kOff;
    return absl::OkStatus();
  }
  return DecodeValue<Toggle>(value, path, out);
}

const nlohmann::json& FieldOrNull(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(std::string(key));
  return it == object.end() ? kNull : *it;
}

ObjectReader::ObjectReader(const nlohmann::json& value, FieldPath path)
    : value_(value), path_(std::move(path)) {
  if (!value_.is_object()) status_ = path_.Invalid("must be an object, got " + Describe(value_));
}

const nlohmann::json* ObjectReader::Find(std::string_view key) {
  known_.emplace_back(key);
  if (!status_.ok()) return nullptr;
  const nlohmann::json& field = FieldOrNull(value_, key);
  return field.is_null() ? nullptr : &field;
}

bool ObjectReader::IsKnown(const std::string& key) const {
  return std::find(known_.begin(), known_.end(), key) != known_.end();
}

void ObjectReader::ReadRaw(std::string_view key, nlohmann::json* out) {
  if (const nlohmann::json* field = Find(key)) *out = *field;
}

void ObjectReader::ReadRawObject(std::string_view key, nlohmann::json* out) {
  if (const nlohmann::json* field = Find(key)) {
    if (!field->is_object()) {
      Record(path_.Child(key).Invalid("must be an object, got " + Describe(*field)));
      return;
    }
    *out = *field;
  }
}

void ObjectReader::Require(std::string_view key) {
  if (!status_.ok()) return;
  if (FieldOrNull(value_, key).is_null()) Record(path_.Child(key).Invalid("required"));
}

void ObjectReader::Expect(std::string_view key, std::string_view expected) {
  const nlohmann::json* field = Find(key);
  if (!status_.ok()) return;
  const std::string quoted = Quote(expected);
  if (field == nullptr) {
    Record(path_.Child(key).Invalid(absl::StrCat("required, must be ", quoted)));
  } else if (!field->is_string() || field->get_ref<const std::string&>() != expected) {
    Record(path_.Child(key).Invalid(absl::StrCat(
        "must be ", quoted, ", got ",
        field->is_string() ? Quote(field->get_ref<const std::string&>()) : Describe(*field))));
  }
}

void ObjectReader::Record(const absl::Status& status) {
  if (status_.ok() && !status.ok()) status_ = status;
}

absl::Status ObjectReader::Finish() {
  WAVEPOOL_RETURN_IF_ERROR(status_);
  for (const auto& [key, field] : value_.items()) {
    if (IsKnown(key)) continue;
    const std::string closest = ClosestField(key, known_);
    if (!closest.empty()) {
      return path_.Child(key).Invalid(
          absl::StrCat("unknown field (did you mean \"", closest, "\"?)"));
    }
    return path_.Child(key).Invalid(
        absl::StrCat("unknown field (valid fields: ", absl::StrJoin(known_, ", "), ")"));
  }
  return absl::OkStatus();
}

absl::Status ObjectReader::Finish(nlohmann::json* unknown_fields) {
  WAVEPOOL_RETURN_IF_ERROR(status_);
  *unknown_fields = nlohmann::json::object();
  for (const auto& [key, field] : value_.items()) {
    if (!IsKnown(key)) (*unknown_fields)[key] = field;
  }
  return absl::OkStatus();
}

}  // namespace wavepool::api
