// The template policy's paths, names and quantities (template_policy_internal.h) and the check of
// the operator's options (template_policy.h).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "template_policy/template_policy_internal.h"
#include "wavepool/controller/template_policy.h"

namespace wavepool::controller {
namespace internal {
namespace {

constexpr std::size_t kMaxLabelLength = 63;
constexpr std::size_t kMaxSubdomainLength = 253;

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '-'; }
bool IsDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return absl::ascii_isdigit(c); });
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == separator) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

FieldPath FieldPath::Template() {
  FieldPath path;
  path.segments_ = {{false, "spec"}, {false, "template"}};
  return path;
}

FieldPath FieldPath::Child(std::string_view name) const {
  FieldPath child = *this;
  child.segments_.push_back({false, std::string(name)});
  return child;
}

FieldPath FieldPath::Index(std::size_t index) const {
  FieldPath child = *this;
  child.segments_.push_back({true, absl::StrCat(index)});
  return child;
}

FieldPath FieldPath::Key(std::string_view key) const {
  FieldPath child = *this;
  child.segments_.push_back({true, std::string(key)});
  return child;
}

std::string FieldPath::ToString() const {
  std::string out;
  for (const PathSegment& s : segments_) {
    if (s.bracket) {
      absl::StrAppend(&out, "[", s.text, "]");
    } else {
      absl::StrAppend(&out, out.empty() ? "" : ".", s.text);
    }
  }
  return out;
}

std::string FieldPath::Generalized() const {
  FieldPath general = *this;
  for (PathSegment& s : general.segments_) {
    if (s.bracket && IsDigits(s.text)) s.text = "*";
  }
  return general.ToString();
}

absl::StatusOr<std::vector<PathSegment>> ParseAllowedPath(std::string_view text) {
  const auto bad = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("field path \"", std::string(text), "\": ", std::string(what)));
  };
  std::vector<PathSegment> segments;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '[') {
      const std::size_t close = text.find(']', i);
      if (close == std::string_view::npos) return bad("'[' without ']'");
      const std::string_view key = text.substr(i + 1, close - i - 1);
      if (key.empty() || key.find('[') != std::string_view::npos) {
        return bad("a bracket must hold an index, a key or '*'");
      }
      segments.push_back({true, std::string(key)});
      i = close + 1;
      if (i < text.size() && text[i] != '.' && text[i] != '[') {
        return bad("expected '.' or '[' after ']'");
      }
    } else {
      if (text[i] == '.') {
        if (segments.empty()) return bad("must not start with '.'");
        ++i;
      }
      const std::size_t start = i;
      while (i < text.size() && IsNameChar(text[i])) ++i;
      if (i == start) return bad("field names are letters, digits, '_' and '-', joined by '.'");
      segments.push_back({false, std::string(text.substr(start, i - start))});
      if (i < text.size() && text[i] != '.' && text[i] != '[') {
        return bad("field names are letters, digits, '_' and '-', joined by '.'");
      }
    }
  }
  if (segments.size() < 2 || segments[0].bracket || segments[0].text != "spec" ||
      segments[1].bracket || segments[1].text != "template") {
    return bad("must start with spec.template");
  }
  return segments;
}

bool PathCovers(const std::vector<PathSegment>& allowed, const FieldPath& field) {
  const std::vector<PathSegment>& f = field.segments();
  if (allowed.size() > f.size()) return false;
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i].bracket != f[i].bracket) return false;
    if (allowed[i].text != f[i].text && !(allowed[i].bracket && allowed[i].text == "*")) {
      return false;
    }
  }
  return true;
}

bool IsQuantity(std::string_view text) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  std::size_t digits = 0;
  bool dot = false;
  for (; i < text.size(); ++i) {
    if (absl::ascii_isdigit(text[i])) {
      ++digits;
    } else if (text[i] == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits == 0) return false;
  const std::string_view suffix = text.substr(i);
  static constexpr std::string_view kSuffixes[] = {"",  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n",
                                                   "u", "m",  "k",  "M",  "G",  "T",  "P",  "E"};
  if (std::find(std::begin(kSuffixes), std::end(kSuffixes), suffix) != std::end(kSuffixes)) {
    return true;
  }
  if (suffix.front() != 'e' && suffix.front() != 'E') return false;
  std::string_view exponent = suffix.substr(1);
  if (!exponent.empty() && (exponent.front() == '+' || exponent.front() == '-')) {
    exponent.remove_prefix(1);
  }
  return IsDigits(exponent);
}

bool IsGpuResource(std::string_view name) {
  return StartsWith(name, "nvidia.com/") || name == "amd.com/gpu" ||
         StartsWith(name, "gpu.intel.com/");
}

bool IsDns1123Label(std::string_view text) {
  const auto alnum = [](char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z'); };
  if (text.empty() || text.size() > kMaxLabelLength) return false;
  if (!alnum(text.front()) || !alnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(), [&](char c) { return alnum(c) || c == '-'; });
}

bool IsDns1123Subdomain(std::string_view text) {
  if (text.empty() || text.size() > kMaxSubdomainLength) return false;
  for (std::string_view label : Split(text, '.')) {
    if (!IsDns1123Label(label)) return false;
  }
  return true;
}

bool IsLabelValue(std::string_view text) {
  if (text.empty()) return true;
  if (text.size() > kMaxLabelLength) return false;
  if (!absl::ascii_isalnum(text.front()) || !absl::ascii_isalnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

bool IsQualifiedName(std::string_view text) {
  const std::size_t slash = text.find('/');
  const std::string_view name = slash == std::string_view::npos ? text : text.substr(slash + 1);
  if (slash != std::string_view::npos && !IsDns1123Subdomain(text.substr(0, slash))) return false;
  return !name.empty() && IsLabelValue(name);
}

bool IsEnvVarName(std::string_view text) {
  const auto first = [](char c) {
    return absl::ascii_isalpha(c) || c == '-' || c == '.' || c == '_';
  };
  if (text.empty() || !first(text.front())) return false;
  if (!std::all_of(text.begin(), text.end(),
                   [&](char c) { return first(c) || absl::ascii_isdigit(c); })) {
    return false;
  }
  // A name the kubelet could mistake for a directory change.
  return text != "." && !StartsWith(text, "..");
}

bool IsPortName(std::string_view text) {
  constexpr std::size_t kMaxPortNameLength = 15;
  const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  if (text.empty() || text.size() > kMaxPortNameLength) return false;
  if (text.front() == '-' || text.back() == '-' || text.find("--") != std::string_view::npos) {
    return false;
  }
  return std::any_of(text.begin(), text.end(), lower) &&
         std::all_of(text.begin(), text.end(),
                     [&](char c) { return lower(c) || absl::ascii_isdigit(c) || c == '-'; });
}

bool IsCleanAbsolutePath(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  if (path == "/") return true;
  for (std::string_view part : Split(path.substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

bool IsContainedRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  for (std::string_view part : Split(path, '/')) {
    if (part == "..") return false;
  }
  return true;
}

bool PathIsUnder(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return true;
  return path == prefix || (StartsWith(path, prefix) && path[prefix.size()] == '/');
}

}  // namespace internal

absl::Status ValidateTemplatePolicyOptions(const TemplatePolicyOptions& options) {
  for (const std::string& field : options.allowed_fields) {
    absl::StatusOr<std::vector<internal::PathSegment>> path = internal::ParseAllowedPath(field);
    if (!path.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--allow-template-field: ", path.status().message()));
    }
    for (const internal::PathSegment& segment : *path) {
      if (segment.bracket && internal::IsGpuResource(segment.text)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--allow-template-field: field path \"", field, "\": ", segment.text,
                         " cannot be allowed: the controller assigns GPUs itself, by UUID"));
      }
    }
  }
  for (const std::string& account : options.allowed_service_accounts) {
    const std::vector<std::string_view> parts = internal::Split(account, '/');
    const bool ok = parts.size() == 1 ? internal::IsDns1123Subdomain(parts[0])
                                      : parts.size() == 2 && internal::IsDns1123Label(parts[0]) &&
                                            internal::IsDns1123Subdomain(parts[1]);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("--allow-service-account: \"", account,
                       "\" must be a service account name (DNS-1123 subdomain) or "
                       "NAMESPACE/NAME"));
    }
  }
  for (const std::string& prefix : options.allowed_host_path_prefixes) {
    if (!internal::IsCleanAbsolutePath(prefix)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--allow-host-path: \"", prefix,
                       "\" must be an absolute path without empty, \".\" or \"..\" components "
                       "(and no trailing '/')"));
    }
  }
  return absl::OkStatus();
}

}  // namespace wavepool::controller
