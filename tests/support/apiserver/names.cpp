#include "tests/support/apiserver/names.h"

#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr char kDns1123LabelFmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr char kDns1123SubdomainFmt[] =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr char kQualifiedNameFmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

// std::regex compiles slowly: each pattern once.
bool FullMatch(std::string_view value, const char* pattern) {
  static const std::regex label(kDns1123LabelFmt);
  static const std::regex subdomain(kDns1123SubdomainFmt);
  static const std::regex qualified(kQualifiedNameFmt);
  const std::regex& re = pattern == kDns1123LabelFmt       ? label
                         : pattern == kDns1123SubdomainFmt ? subdomain
                                                           : qualified;
  return std::regex_match(value.begin(), value.end(), re);
}

std::string MaxLength(std::size_t max) {
  return absl::StrCat("must be no more than ", max, " characters");
}

}  // namespace

std::string CheckDns1123Subdomain(std::string_view value) {
  if (value.size() > 253) return MaxLength(253);
  if (FullMatch(value, kDns1123SubdomainFmt)) return "";
  return absl::StrCat(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
      "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
      "used for validation is '",
      kDns1123SubdomainFmt, "')");
}

std::string CheckDns1123Label(std::string_view value) {
  if (value.size() > 63) return MaxLength(63);
  if (FullMatch(value, kDns1123LabelFmt)) return "";
  return absl::StrCat(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
      "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
      "used for validation is '",
      kDns1123LabelFmt, "')");
}

std::string CheckQualifiedName(std::string_view value) {
  std::string_view name = value;
  const std::size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) return "prefix part must be non-empty";
    const std::string prefix_problem = CheckDns1123Subdomain(prefix);
    if (!prefix_problem.empty()) return absl::StrCat("prefix part ", prefix_problem);
  }
  if (name.empty()) return "name part must be non-empty";
  if (name.size() > 63) return absl::StrCat("name part ", MaxLength(63));
  if (FullMatch(name, kQualifiedNameFmt)) return "";
  return absl::StrCat(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
      "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
      "for validation is '",
      kQualifiedNameFmt, "')");
}

std::string CheckLabelValue(std::string_view value) {
  if (value.empty()) return "";
  if (value.size() > 63) return MaxLength(63);
  if (FullMatch(value, kQualifiedNameFmt)) return "";
  return absl::StrCat(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
      "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
      "'my_value',  or '12345', regex used for validation is '(",
      kQualifiedNameFmt, ")?')");
}

std::string InvalidValueBody(std::string_view value, std::string_view why) {
  return absl::StrCat("Invalid value: \"", std::string(value), "\": ", std::string(why));
}

}  // namespace wavepool::testing::apiserver
