#include "tests/support/apiserver/field_errors.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace wavepool::testing::apiserver::field_errors {
namespace {

// field.ErrorType reasons and their ErrorBody prefixes.
constexpr char kRequired[] = "FieldValueRequired";
constexpr char kForbidden[] = "FieldValueForbidden";
constexpr char kInvalid[] = "FieldValueInvalid";
constexpr char kTypeInvalid[] = "FieldValueTypeInvalid";
constexpr char kNotSupported[] = "FieldValueNotSupported";
constexpr char kTooLong[] = "FieldValueTooLong";
constexpr char kTooMany[] = "FieldValueTooMany";
constexpr char kDuplicate[] = "FieldValueDuplicate";

std::string WithDetail(std::string body, std::string_view detail) {
  if (!detail.empty()) absl::StrAppend(&body, ": ", std::string(detail));
  return body;
}

// The shortest %.*e rendering of `value` that parses back to it: digits and exponent.
void ShortestDigits(double value, std::string& digits, int& exponent) {
  char buffer[64];
  for (int precision = 0; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  std::string text(buffer);
  const size_t e = text.find('e');
  exponent = std::atoi(text.c_str() + e + 1);
  digits.clear();
  for (size_t i = 0; i < e; ++i) {
    if (text[i] != '.' && text[i] != '-') digits.push_back(text[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
}

// Go's %v for float64 (strconv 'g', shortest): an exponent when exp < -4 || exp >= 6.
std::string GoFloat(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";
  std::string digits;
  int exponent = 0;
  ShortestDigits(value, digits, exponent);
  std::string out = value < 0 ? "-" : "";
  if (exponent < -4 || exponent >= 6) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppend(&out, exponent < 0 ? "e-" : "e+", absl::StrFormat("%02d", std::abs(exponent)));
    return out;
  }
  if (exponent < 0) {
    return absl::StrCat(out, "0.", std::string(static_cast<size_t>(-exponent - 1), '0'), digits);
  }
  const size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    return absl::StrCat(out, digits, std::string(int_digits - digits.size(), '0'));
  }
  return absl::StrCat(out, digits.substr(0, int_digits), ".", digits.substr(int_digits));
}

FieldCause Make(const char* reason, std::string field, std::string message) {
  return FieldCause{reason, std::move(field), std::move(message)};
}

}  // namespace

std::string Child(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", std::string(name));
}

std::string Index(const std::string& path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

std::string Key(const std::string& path, std::string_view key) {
  return absl::StrCat(path, "[", std::string(key), "]");
}

std::string GoQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          out += absl::StrFormat("\\x%02x", byte);
        } else {
          out.push_back(c);
        }
    }
  }
  out += "\"";
  return out;
}

std::string GoNumber(const nlohmann::json& number) {
  if (number.is_number_integer()) return number.dump();
  return GoFloat(number.get<double>());
}

std::string GoValue(const nlohmann::json& value) {
  if (value.is_null()) return "\"null\"";
  if (value.is_string()) return GoQuote(value.get<std::string>());
  if (value.is_number()) return GoNumber(value);
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

FieldCause Required(std::string field, std::string_view detail) {
  return Make(kRequired, std::move(field), WithDetail("Required value", detail));
}

FieldCause Forbidden(std::string field, std::string_view detail) {
  return Make(kForbidden, std::move(field), WithDetail("Forbidden", detail));
}

FieldCause Invalid(std::string field, const nlohmann::json& value, std::string_view detail) {
  return Make(kInvalid, std::move(field),
              WithDetail(absl::StrCat("Invalid value: ", GoValue(value)), detail));
}

FieldCause TypeInvalid(std::string field, const nlohmann::json& value, std::string_view detail) {
  return Make(kTypeInvalid, std::move(field),
              WithDetail(absl::StrCat("Invalid value: ", GoValue(value)), detail));
}

FieldCause NotSupported(std::string field, const nlohmann::json& value,
                        const std::vector<std::string>& supported) {
  std::vector<std::string> quoted;
  quoted.reserve(supported.size());
  for (const std::string& s : supported) quoted.push_back(GoQuote(s));
  std::string detail;
  if (!quoted.empty()) detail = absl::StrCat("supported values: ", absl::StrJoin(quoted, ", "));
  return Make(kNotSupported, std::move(field),
              WithDetail(absl::StrCat("Unsupported value: ", GoValue(value)), detail));
}

FieldCause TooLong(std::string field, int64_t max_length) {
  // apimachinery >= 1.32 words every length limit in bytes (TooLongMaxLength calls TooLong).
  return Make(kTooLong, std::move(field),
              absl::StrCat("Too long: may not be more than ", max_length,
                           max_length == 1 ? " byte" : " bytes"));
}

FieldCause TooMany(std::string field, int64_t actual, int64_t max_items) {
  return Make(kTooMany, std::move(field),
              absl::StrCat("Too many: ", actual, ": must have at most ", max_items,
                           max_items == 1 ? " item" : " items"));
}

FieldCause Duplicate(std::string field, std::string_view rendered) {
  return Make(kDuplicate, std::move(field),
              absl::StrCat("Duplicate value: ", std::string(rendered)));
}

std::string JoinCauses(const std::vector<FieldCause>& causes) {
  std::vector<std::string> parts;
  parts.reserve(causes.size());
  for (const FieldCause& cause : causes) {
    parts.push_back(cause.field.empty() ? cause.message
                                        : absl::StrCat(cause.field, ": ", cause.message));
  }
  if (parts.size() == 1) return parts.front();
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

}  // namespace wavepool::testing::apiserver::field_errors
