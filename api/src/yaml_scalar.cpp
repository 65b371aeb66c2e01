#include "yaml_scalar.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::api {
namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

bool IsOneOf(std::string_view text, std::initializer_list<std::string_view> words) {
  for (std::string_view word : words) {
    if (text == word) return true;
  }
  return false;
}

bool AllDigits(std::string_view text, int base) {
  if (text.empty()) return false;
  for (char c : text) {
    const bool ok = base == 16 ? absl::ascii_isxdigit(static_cast<unsigned char>(c))
                               : (c >= '0' && c < static_cast<char>('0' + base));
    if (!ok) return false;
  }
  return true;
}

std::string_view StripPlus(std::string_view text) {
  return !text.empty() && text[0] == '+' ? text.substr(1) : text;
}

// [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
bool LooksLikeFloat(std::string_view text) {
  std::size_t i = 0;
  auto digits = [&]() {
    std::size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  const std::size_t integer_digits = digits();
  std::size_t fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    fraction_digits = digits();
  }
  if (integer_digits == 0 && fraction_digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

absl::StatusOr<nlohmann::json> ParseDouble(std::string_view text) {
  const std::string_view unsigned_text = StripPlus(text);
  double value = 0;
  auto [end, error] =
      std::from_chars(unsigned_text.data(), unsigned_text.data() + unsigned_text.size(), value);
  if (error != std::errc() || end != unsigned_text.data() + unsigned_text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("number ", std::string(text), " is outside the range of a double"));
  }
  return nlohmann::json(value);
}

// Unsigned digits in `base` as the narrowest JSON integer that holds them.
absl::StatusOr<nlohmann::json> ParseUnsigned(std::string_view digits, int base,
                                             std::string_view text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (error != std::errc() || end != digits.data() + digits.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("integer ", std::string(text), " is outside the 64-bit range"));
  }
  if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return nlohmann::json(static_cast<std::int64_t>(value));
  }
  return nlohmann::json(value);
}

// Decimal, 0x hex or 0o octal; nullopt-like empty json when `text` is not an integer.
absl::StatusOr<nlohmann::json> ParseInteger(std::string_view text, bool* is_integer) {
  *is_integer = true;
  if (text.size() > 2 && text[0] == '0' && text[1] == 'x' && AllDigits(text.substr(2), 16)) {
    return ParseUnsigned(text.substr(2), 16, text);
  }
  if (text.size() > 2 && text[0] == '0' && text[1] == 'o' && AllDigits(text.substr(2), 8)) {
    return ParseUnsigned(text.substr(2), 8, text);
  }
  const bool negative = !text.empty() && text[0] == '-';
  const std::string_view digits =
      (negative || (!text.empty() && text[0] == '+')) ? text.substr(1) : text;
  if (!AllDigits(digits, 10)) {
    *is_integer = false;
    return nlohmann::json();
  }
  if (!negative) {
    absl::StatusOr<nlohmann::json> value = ParseUnsigned(digits, 10, text);
    // Larger than uint64: keep the magnitude as a double, as JSON parsers do.
    return value.ok() ? value : ParseDouble(text);
  }
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return ParseDouble(text);
  return nlohmann::json(value);
}

absl::Status NotFinite(std::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(text),
                   " is not a finite number and JSON cannot carry it (quote it for a string)"));
}

}  // namespace

absl::StatusOr<nlohmann::json> ResolvePlainScalar(std::string_view text) {
  if (IsOneOf(text, {"", "~", "null", "Null", "NULL"})) return nlohmann::json();
  if (IsOneOf(text, {"true", "True", "TRUE"})) return nlohmann::json(true);
  if (IsOneOf(text, {"false", "False", "FALSE"})) return nlohmann::json(false);
  bool is_integer = false;
  absl::StatusOr<nlohmann::json> integer = ParseInteger(text, &is_integer);
  if (is_integer) return integer;
  if (LooksLikeFloat(text)) return ParseDouble(text);
  if (IsOneOf(StripPlus(text), {".inf", ".Inf", ".INF", "-.inf", "-.Inf", "-.INF"}) ||
      IsOneOf(text, {".nan", ".NaN", ".NAN"})) {
    return NotFinite(text);
  }
  return nlohmann::json(std::string(text));
}

absl::StatusOr<nlohmann::json> ResolveTaggedScalar(std::string_view text, std::string_view tag) {
  if (tag == "!") return nlohmann::json(std::string(text));
  if (tag.substr(0, kTagPrefix.size()) != kTagPrefix) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported tag \"", std::string(tag), "\""));
  }
  const std::string_view kind = tag.substr(kTagPrefix.size());
  const std::string quoted = Quote(text);
  if (kind == "str") return nlohmann::json(std::string(text));
  WAVEPOOL_ASSIGN_OR_RETURN(nlohmann::json value, ResolvePlainScalar(text));
  const bool matches =
      (kind == "null" && value.is_null()) || (kind == "bool" && value.is_boolean()) ||
      (kind == "int" && value.is_number_integer()) || (kind == "float" && value.is_number());
  if (matches) return kind == "float" ? nlohmann::json(value.get<double>()) : value;
  if (IsOneOf(kind, {"null", "bool", "int", "float"})) {
    return absl::InvalidArgumentError(
        absl::StrCat("!!", std::string(kind), " ", quoted, " is not a valid ", std::string(kind)));
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported tag \"", std::string(tag), "\""));
}

bool NeedsQuotes(std::string_view text) {
  absl::StatusOr<nlohmann::json> plain = ResolvePlainScalar(text);
  if (!plain.ok() || !plain->is_string()) return true;
  // YAML 1.1 readers (kubectl's among them) take these for booleans, merge keys or values.
  const std::string lower = absl::AsciiStrToLower(std::string(text));
  if (IsOneOf(lower, {"y", "n", "yes", "no", "on", "off", "=", "<<"})) return true;
  // ... and numbers with '_' separators, sexagesimals and timestamps start like numbers.
  const auto starts_number = [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.';
  };
  if (starts_number(text[0])) return true;
  return (text[0] == '-' || text[0] == '+') && text.size() > 1 && starts_number(text[1]);
}

bool IsValidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t code_point = 0;
    if (byte < 0x80) {
      ++i;
      continue;
    } else if ((byte & 0xE0) == 0xC0) {
      length = 2;
      code_point = byte & 0x1F;
    } else if ((byte & 0xF0) == 0xE0) {
      length = 3;
      code_point = byte & 0x0F;
    } else if ((byte & 0xF8) == 0xF0) {
      length = 4;
      code_point = byte & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto continuation = static_cast<unsigned char>(text[i + k]);
      if ((continuation & 0xC0) != 0x80) return false;
      code_point = (code_point << 6) | (continuation & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    static constexpr std::array<std::uint32_t, 5> kMinimum = {0, 0, 0x80, 0x800, 0x10000};
    if (code_point < kMinimum[length] || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

}  // namespace wavepool::api
