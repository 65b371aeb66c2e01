// Image references (image_reference.h): the grammar of github.com/distribution/reference,
// written out as small scanners instead of its regular expressions.
#include "wavepool/controller/image_reference.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "template_policy/template_policy_internal.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::controller {
namespace {

constexpr std::size_t kMaxNameLength = 255;
constexpr std::size_t kMaxTagLength = 128;
constexpr std::size_t kMinDigestHex = 32;

bool IsLowerAlnum(char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z'); }
bool IsWordChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

absl::Status Bad(std::string_view reference, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("image \"", std::string(reference), "\": ", std::string(what)));
}

// path-part := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
bool IsPathComponent(std::string_view part) {
  std::size_t i = 0;
  while (i < part.size()) {
    const std::size_t run = i;
    while (i < part.size() && IsLowerAlnum(part[i])) ++i;
    if (i == run) return false;  // A separator first, last, or two separators in a row.
    if (i == part.size()) return true;
    const std::size_t separator = i;
    if (part[i] == '.') {
      ++i;
    } else if (part[i] == '_') {
      i += part.substr(i, 2) == "__" ? 2 : 1;
    } else if (part[i] == '-') {
      while (i < part.size() && part[i] == '-') ++i;
    } else {
      return false;
    }
    if (i == separator || i == part.size()) return false;
  }
  return !part.empty();
}

// component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
bool IsHostComponent(std::string_view part) {
  if (part.empty() || !absl::ascii_isalnum(part.front()) || !absl::ascii_isalnum(part.back())) {
    return false;
  }
  for (char c : part) {
    if (!absl::ascii_isalnum(c) && c != '-') return false;
  }
  return true;
}

bool IsIpv6Literal(std::string_view host) {
  if (host.size() < 4 || host.front() != '[' || host.back() != ']') return false;
  for (char c : host.substr(1, host.size() - 2)) {
    if (!absl::ascii_isxdigit(c) && c != ':') return false;
  }
  return true;
}

absl::Status CheckDomain(std::string_view reference, std::string_view domain) {
  std::string_view host = domain;
  const std::size_t bracket = domain.rfind(']');
  const std::size_t colon = domain.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    host = domain.substr(0, colon);
    const std::string_view port = domain.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return absl::ascii_isdigit(c); })) {
      return Bad(reference, absl::StrCat("registry port \"", std::string(port),
                                         "\" must be a number of 1 to 5 digits"));
    }
  }
  if (IsIpv6Literal(host)) return absl::OkStatus();
  for (std::string_view part : internal::Split(host, '.')) {
    if (!IsHostComponent(part)) {
      return Bad(reference, absl::StrCat("registry host \"", std::string(host),
                                         "\" must be DNS labels (letters, digits and '-', not "
                                         "at either end) joined by '.', or [IPv6]"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTag(std::string_view reference, std::string_view tag) {
  const bool ok = !tag.empty() && tag.size() <= kMaxTagLength && IsWordChar(tag.front()) &&
                  std::all_of(tag.begin(), tag.end(),
                              [](char c) { return IsWordChar(c) || c == '.' || c == '-'; });
  if (ok) return absl::OkStatus();
  return Bad(reference, absl::StrCat("tag \"", std::string(tag),
                                     "\" must be 1 to 128 letters, digits, '_', '.' and '-', "
                                     "not starting with '.' or '-'"));
}

absl::Status CheckDigest(std::string_view reference, std::string_view digest) {
  const std::size_t colon = digest.find(':');
  const std::string_view algorithm = digest.substr(0, colon);
  const std::string_view hex =
      colon == std::string_view::npos ? std::string_view() : digest.substr(colon + 1);
  bool ok = colon != std::string_view::npos && !algorithm.empty() && hex.size() >= kMinDigestHex &&
            std::all_of(hex.begin(), hex.end(), [](char c) { return absl::ascii_isxdigit(c); });
  // algorithm := [A-Za-z][A-Za-z0-9]* ( [+._-] [A-Za-z][A-Za-z0-9]* )*
  bool component_start = true;
  for (char c : algorithm) {
    if (c == '+' || c == '.' || c == '_' || c == '-') {
      ok = ok && !component_start;
      component_start = true;
    } else {
      ok = ok && (component_start ? absl::ascii_isalpha(c) : absl::ascii_isalnum(c));
      component_start = false;
    }
  }
  if (ok && !component_start) return absl::OkStatus();
  return Bad(reference, absl::StrCat("digest \"", std::string(digest),
                                     "\" must be <algorithm>:<at least 32 hex digits>, e.g. "
                                     "sha256:<64 hex digits>"));
}

// A first component names a registry when it has a '.' or ':', is "localhost", or has an
// upper-case letter (which no repository path may have).
bool IsDomain(std::string_view first) {
  return first == "localhost" || first.find_first_of(".:") != std::string_view::npos ||
         std::any_of(first.begin(), first.end(), [](char c) { return absl::ascii_isupper(c); });
}

}  // namespace

absl::StatusOr<ImageReference> ParseImageReference(std::string_view reference) {
  if (reference.empty()) return Bad(reference, "must not be empty");
  for (char c : reference) {
    if (absl::ascii_isspace(c) || absl::ascii_iscntrl(c)) {
      return Bad(reference, "must not contain white space or control characters");
    }
  }
  ImageReference out;
  std::string_view rest = reference;
  if (const std::size_t at = rest.find('@'); at != std::string_view::npos) {
    WAVEPOOL_RETURN_IF_ERROR(CheckDigest(reference, rest.substr(at + 1)));
    out.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
  }
  // The tag follows the last ':' after the last '/' (a ':' before it is the registry's port).
  const std::size_t slash = rest.rfind('/');
  const std::size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    WAVEPOOL_RETURN_IF_ERROR(CheckTag(reference, rest.substr(colon + 1)));
    out.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return Bad(reference, "has no repository name");
  if (rest.size() > kMaxNameLength) {
    return Bad(reference, absl::StrCat("the name (without tag and digest) must be at most ",
                                       kMaxNameLength, " characters, got ", rest.size()));
  }
  std::vector<std::string_view> parts = internal::Split(rest, '/');
  std::size_t first_path = 0;
  if (parts.size() > 1 && IsDomain(parts.front())) {
    WAVEPOOL_RETURN_IF_ERROR(CheckDomain(reference, parts.front()));
    out.domain = std::string(parts.front());
    first_path = 1;
  }
  for (std::size_t i = first_path; i < parts.size(); ++i) {
    if (!IsPathComponent(parts[i])) {
      return Bad(reference, absl::StrCat("path component \"", std::string(parts[i]),
                                         "\" must be lower-case letters and digits joined by "
                                         "'.', '_', '__' or '-'"));
    }
  }
  out.path = std::string(rest.substr(out.domain.empty() ? 0 : out.domain.size() + 1));
  return out;
}

}  // namespace wavepool::controller
