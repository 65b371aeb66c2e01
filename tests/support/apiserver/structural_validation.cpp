// Validation of custom objects against their CRD schema, in the order and words of kube-openapi's
// validator (pkg/validation/validate) as apiextensions-apiserver converts its errors to field
// causes (ValidateCustomResource): type, allOf, string, format, number, array, enum, object.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/support/apiserver/field_errors.h"
#include "tests/support/apiserver/structural_internal.h"
#include "tests/support/apiserver/structural_schema.h"

namespace wavepool::testing::apiserver {
namespace structural {
namespace {

using field_errors::GoNumber;
using field_errors::GoQuote;
using field_errors::GoValue;
using nlohmann::json;
using Causes = std::vector<FieldCause>;

// "<path> in body <what>" as kube-openapi words it; a value at the root has no name.
std::string InBody(const std::string& path, const std::string& what) {
  return path.empty() ? absl::StrCat("in body ", what) : absl::StrCat(path, " in body ", what);
}

// The JSON-schema type name of a value, as the type validator reports it.
std::string SchemaTypeOf(const json& x) {
  if (x.is_null()) return "null";
  if (x.is_boolean()) return "boolean";
  if (x.is_string()) return "string";
  if (x.is_number_integer()) return "integer";
  if (x.is_number()) return "number";
  if (x.is_array()) return "array";
  return "object";
}

bool IsIntegral(const json& x) {
  if (x.is_number_integer()) return true;
  if (!x.is_number_float()) return false;
  const double d = x.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool MatchesType(const std::string& type, const json& x) {
  if (type == "integer") return IsIntegral(x);  // 2.0 passes: isFloatInt
  if (type == "number") return x.is_number();
  if (type == "string") return x.is_string();
  if (type == "boolean") return x.is_boolean();
  if (type == "object") return x.is_object();
  if (type == "array") return x.is_array();
  return true;
}

// Returns false when the value's type rules out the remaining checks.
bool ValidateType(const json& x, const json& s, const std::string& path, Causes& causes) {
  std::string type = TypeOf(s);
  bool matches = MatchesType(type, x);
  if (Flag(s, "x-kubernetes-int-or-string")) {
    type = "integer,string";  // the server validates int-or-string as type [integer, string]
    matches = IsIntegral(x) || x.is_string();
  }
  if (x.is_null()) {
    if (Flag(s, "nullable") || type.empty()) return false;
    matches = false;
  }
  if (type.empty() || matches) return true;
  const std::string actual = SchemaTypeOf(x);
  causes.push_back(field_errors::TypeInvalid(
      path, actual, InBody(path, absl::StrCat("must be of type ", type, ": ", GoQuote(actual)))));
  return false;
}

// Counts UTF-8 code points, as Go's utf8.RuneCountInString.
int64_t RuneCount(const std::string& text) {
  int64_t count = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
  }
  return count;
}

void ValidateString(const std::string& text, const json& s, const std::string& path,
                    Causes& causes) {
  const json value = text;
  if (auto it = s.find("maxLength");
      it != s.end() && it->is_number() && RuneCount(text) > it->get<int64_t>()) {
    causes.push_back(field_errors::TooLong(path, it->get<int64_t>()));
  }
  if (auto it = s.find("minLength");
      it != s.end() && it->is_number() && RuneCount(text) < it->get<int64_t>()) {
    causes.push_back(field_errors::Invalid(
        path, value,
        InBody(path, absl::StrCat("should be at least ", it->get<int64_t>(), " chars long"))));
  }
  if (auto it = s.find("pattern"); it != s.end() && it->is_string()) {
    try {
      if (!std::regex_search(text, std::regex(it->get<std::string>(), std::regex::ECMAScript))) {
        causes.push_back(field_errors::Invalid(
            path, value,
            InBody(path, absl::StrCat("should match '", it->get<std::string>(), "'"))));
      }
    } catch (const std::regex_error&) {
      // Parse refused the pattern already; a schema cannot get here with a bad one.
    }
  }
}

// format int32/int64: the value must fit the declared width (IsValueValidAgainstRange). The
// server decodes an integer past int64 as a float64, which then fails the int64 check.
void ValidateIntegerFormat(const json& x, const std::string& name, const std::string& path,
                           Causes& causes) {
  const double d = x.get<double>();
  bool fits = true;
  if (name == "int32") {
    fits = d >= std::numeric_limits<int32_t>::min() && d <= std::numeric_limits<int32_t>::max();
  } else if (name == "int64") {
    // nlohmann keeps 2^63 .. 2^64-1 as unsigned, which is_number_integer() also admits.
    fits =
        x.is_number_unsigned()
            ? x.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
            : x.is_number_integer() || (d >= -9223372036854775808.0 && d < 9223372036854775808.0);
  } else {
    return;
  }
  if (!fits) {
    causes.push_back(field_errors::Invalid(
        path, "",
        absl::StrCat("Checked value must be of type integer with format ", name, " in ", path)));
  }
}

bool AllDigits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// strfmt's IsDate: Go's time.Parse("2006-01-02", text), which checks the day against the month
// (and February against leap years).
bool IsDate(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-' || !AllDigits(text.substr(0, 4)) ||
      !AllDigits(text.substr(5, 2)) || !AllDigits(text.substr(8, 2))) {
    return false;
  }
  const int year = std::stoi(std::string(text.substr(0, 4)));
  const int month = std::stoi(std::string(text.substr(5, 2)));
  const int day = std::stoi(std::string(text.substr(8, 2)));
  if (month < 1 || month > 12) return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const int days_in_month = month == 2 && leap ? 29 : kDays[month - 1];
  return day >= 1 && day <= days_in_month;
}

// strfmt's IsDateTime: lowercased and split at every 't', the first part a date and the second
// "hh:mm:ss[<any character><digits>](z|+hh:mm|-hh:mm)" with hh <= 23, mm and ss <= 59.
bool IsDateTime(const std::string& text) {
  if (text.size() < 4) return false;
  const std::vector<std::string> parts = absl::StrSplit(absl::AsciiStrToLower(text), 't');
  if (parts.size() < 2 || !IsDate(parts[0])) return false;
  static const std::regex* kTime =
      new std::regex("^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$",
                     std::regex::ECMAScript);
  std::smatch m;
  if (!std::regex_match(parts[1], m, *kTime)) return false;
  return m[1].str() <= "23" && m[2].str() <= "59" && m[3].str() <= "59";
}

// Of the string formats the server validates (apiextensions' supportedFormats, named without
// dashes as go-openapi normalizes them), date and date-time; the others are not checked here.
void ValidateStringFormat(const std::string& text, const std::string& name, const std::string& path,
                          Causes& causes) {
  std::string normalized = name;
  normalized.erase(std::remove(normalized.begin(), normalized.end(), '-'), normalized.end());
  bool valid = true;
  if (normalized == "datetime") {
    valid = IsDateTime(text);
  } else if (normalized == "date") {
    valid = IsDate(text);
  }
  if (!valid) {
    causes.push_back(field_errors::TypeInvalid(
        path, text, InBody(path, absl::StrCat("must be of type ", name, ": ", GoQuote(text)))));
  }
}

void ValidateFormat(const json& x, const json& s, const std::string& path, Causes& causes) {
  auto format = s.find("format");
  if (format == s.end() || !format->is_string()) return;
  const std::string name = format->get<std::string>();
  if (x.is_string()) {
    ValidateStringFormat(x.get<std::string>(), name, path, causes);
  } else if (x.is_number() && TypeOf(s) == "integer") {
    ValidateIntegerFormat(x, name, path, causes);
  }
}

void ValidateNumber(const json& x, const json& s, const std::string& path, Causes& causes) {
  const double d = x.get<double>();
  if (auto it = s.find("multipleOf"); it != s.end() && it->is_number() && it->get<double>() > 0) {
    const double quotient = d / it->get<double>();
    if (std::fabs(quotient - std::round(quotient)) > 1e-9) {
      causes.push_back(field_errors::Invalid(
          path, x, InBody(path, absl::StrCat("should be a multiple of ", GoNumber(*it)))));
    }
  }
  if (auto it = s.find("maximum"); it != s.end() && it->is_number()) {
    const bool exclusive = Flag(s, "exclusiveMaximum");
    const double max = it->get<double>();
    if (exclusive ? d >= max : d > max) {
      causes.push_back(
          field_errors::Invalid(path, x,
                                InBody(path, absl::StrCat(exclusive ? "should be less than "
                                                                    : "should be less than or "
                                                                      "equal to ",
                                                          GoNumber(*it)))));
    }
  }
  if (auto it = s.find("minimum"); it != s.end() && it->is_number()) {
    const bool exclusive = Flag(s, "exclusiveMinimum");
    const double min = it->get<double>();
    if (exclusive ? d <= min : d < min) {
      causes.push_back(field_errors::Invalid(
          path, x,
          InBody(path, absl::StrCat(exclusive ? "should be greater than "
                                              : "should be greater than or equal to ",
                                    GoNumber(*it)))));
    }
  }
}

// Go's %#v of a scalar inside map[string]interface{}.
std::string GoSharpV(const json& value) {
  if (value.is_string()) return GoQuote(value.get<std::string>());
  if (value.is_null()) return "interface {}(nil)";
  return GoValue(value);
}

// x-kubernetes-list-type set and map: no two items may be equal (set) or share their keys (map).
void ValidateListType(const json& x, const json& s, const std::string& path, Causes& causes) {
  auto list_type = s.find("x-kubernetes-list-type");
  if (list_type == s.end() || !list_type->is_string()) return;
  const std::string type = list_type->get<std::string>();
  if (type == "set") {
    for (size_t i = 1; i < x.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (x[i] == x[j]) {
          causes.push_back(field_errors::Duplicate(field_errors::Index(path, i), GoValue(x[i])));
          break;
        }
      }
    }
  } else if (type == "map") {
    const json keys = s.value("x-kubernetes-list-map-keys", json::array());
    std::set<std::string> seen;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!x[i].is_object()) continue;
      json identity = json::object();
      std::vector<std::string> rendered;
      for (const json& key : keys) {
        if (!key.is_string() || !x[i].contains(key.get<std::string>())) continue;
        const std::string name = key.get<std::string>();
        identity[name] = x[i][name];
        rendered.push_back(absl::StrCat(GoQuote(name), ":", GoSharpV(x[i][name])));
      }
      if (!seen.insert(identity.dump()).second) {
        causes.push_back(field_errors::Duplicate(
            field_errors::Index(path, i),
            absl::StrCat("map[string]interface {}{", absl::StrJoin(rendered, ", "), "}")));
      }
    }
  }
}

void ValidateArray(const json& x, const json& s, const std::string& path, Causes& causes) {
  const auto size = static_cast<int64_t>(x.size());
  if (auto it = s.find("minItems"); it != s.end() && it->is_number() && size < it->get<int64_t>()) {
    causes.push_back(field_errors::Invalid(
        path, size,
        InBody(path, absl::StrCat("should have at least ", it->get<int64_t>(), " items"))));
  }
  if (auto it = s.find("maxItems"); it != s.end() && it->is_number() && size > it->get<int64_t>()) {
    causes.push_back(field_errors::TooMany(path, size, it->get<int64_t>()));
  }
  ValidateListType(x, s, path, causes);
  if (const json* items = Sub(s, "items")) {
    for (size_t i = 0; i < x.size(); ++i) {
      ValidateValue(x[i], *items, field_errors::Index(path, i), causes);
    }
  }
}

void ValidateEnum(const json& x, const json& s, const std::string& path, Causes& causes) {
  auto it = s.find("enum");
  if (it == s.end() || !it->is_array()) return;
  for (const json& allowed : *it) {
    if (allowed == x) return;
  }
  std::vector<std::string> supported;
  for (const json& allowed : *it) {
    supported.push_back(allowed.is_string() ? allowed.get<std::string>() : allowed.dump());
  }
  causes.push_back(field_errors::NotSupported(path, x, supported));
}

void ValidateObject(const json& x, const json& s, const std::string& path, Causes& causes) {
  const auto size = static_cast<int64_t>(x.size());
  if (auto it = s.find("maxProperties");
      it != s.end() && it->is_number() && size > it->get<int64_t>()) {
    causes.push_back(field_errors::TooMany(path, size, it->get<int64_t>()));
  }
  if (auto it = s.find("minProperties");
      it != s.end() && it->is_number() && size < it->get<int64_t>()) {
    causes.push_back(field_errors::Invalid(
        path, size,
        InBody(path, absl::StrCat("should have at least ", it->get<int64_t>(), " properties"))));
  }
  if (auto it = s.find("required"); it != s.end() && it->is_array()) {
    for (const json& name : *it) {
      if (name.is_string() && !x.contains(name.get<std::string>())) {
        causes.push_back(
            field_errors::Required(field_errors::Child(path, name.get<std::string>()), ""));
      }
    }
  }
  const json* properties = Sub(s, "properties");
  const json* additional = Sub(s, "additionalProperties");
  for (const auto& [key, value] : x.items()) {
    const std::string child = field_errors::Child(path, key);
    if (properties != nullptr && properties->contains(key)) {
      ValidateValue(value, (*properties)[key], child, causes);
    } else if (additional != nullptr) {
      ValidateValue(value, *additional, child, causes);
    }
  }
}

}  // namespace

void ValidateValue(const nlohmann::json& x, const nlohmann::json& s, const std::string& path,
                   std::vector<FieldCause>& causes) {
  if (!s.is_object() || !ValidateType(x, s, path, causes)) return;
  if (auto all_of = s.find("allOf"); all_of != s.end() && all_of->is_array()) {
    for (const json& branch : *all_of) {
      if (branch.is_object()) ValidateValue(x, branch, path, causes);
    }
  }
  if (x.is_string()) ValidateString(x.get<std::string>(), s, path, causes);
  ValidateFormat(x, s, path, causes);
  if (x.is_number()) ValidateNumber(x, s, path, causes);
  if (x.is_array()) ValidateArray(x, s, path, causes);
  ValidateEnum(x, s, path, causes);
  if (x.is_object()) ValidateObject(x, s, path, causes);
}

}  // namespace structural

std::vector<FieldCause> StructuralSchema::Validate(const nlohmann::json& object,
                                                   const nlohmann::json* old) const {
  std::vector<FieldCause> causes;
  structural::ValidateValue(object, schema_, "", causes);
  if (!structural::HasRules(schema_)) return causes;
  // A value of the wrong type would make the rules fail for the wrong reason: the real server
  // evaluates none then and says so (hasBlockingErr).
  const bool blocked = std::any_of(causes.begin(), causes.end(), [](const FieldCause& cause) {
    return cause.reason == "FieldValueTypeInvalid" || cause.reason == "FieldValueNotSupported";
  });
  if (blocked) {
    causes.push_back(field_errors::Invalid(
        "", nullptr,
        "some validation rules were not checked because the object was invalid; correct the "
        "existing errors to complete validation"));
    return causes;
  }
  structural::EvaluateRules(object, schema_, "", old, causes);
  return causes;
}

}  // namespace wavepool::testing::apiserver
