#include "identity/worker_strings.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent::internal {
namespace {

constexpr std::size_t kMaxLabelLength = 63;
constexpr std::size_t kMaxSubdomainLength = 253;
constexpr std::size_t kMaxQuotedBytes = 80;  // of a bad value in an error message

// A bad value for a message: escaped (never raw bytes into a log or a reply) and shortened.
std::string Quoted(std::string_view value_view) {
  const absl::string_view value(value_view.data(), value_view.size());
  std::string shown = absl::CHexEscape(value.substr(0, kMaxQuotedBytes));
  if (value.size() > kMaxQuotedBytes) shown += "...";
  return absl::StrCat("\"", shown, "\"");
}

absl::Status CheckField(const char* prefix, const char* field, std::string_view value,
                        bool subdomain) {
  const std::string name = absl::StrCat(prefix, field);
  if (!IsValidUtf8(value)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": not valid UTF-8: ", Quoted(value)));
  }
  const bool ok = subdomain ? IsDns1123Subdomain(value) : IsDns1123Label(value);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      name, ": must be a Kubernetes ",
      subdomain ? "name (DNS-1123 subdomain: lower-case alphanumerics, '-' and '.', 1..253 bytes)"
                : "namespace (DNS-1123 label: lower-case alphanumerics and '-', 1..63 bytes, "
                  "starting and ending alphanumeric)",
      ", got ", Quoted(value), " (", value.size(), " bytes)"));
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char lead = *p;
    std::size_t length;
    std::uint32_t code;
    if (lead < 0x80) {
      ++p;
      continue;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, code = lead & 0x1Fu;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, code = lead & 0x0Fu;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, code = lead & 0x07u;
    } else {
      return false;  // a continuation byte or 0xF8..0xFF as a lead
    }
    if (static_cast<std::size_t>(end - p) < length) return false;
    for (std::size_t i = 1; i < length; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      code = (code << 6) | (p[i] & 0x3Fu);
    }
    static constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    p += length;
  }
  return true;
}

bool IsDns1123Label(std::string_view text) {
  if (text.empty() || text.size() > kMaxLabelLength) return false;
  for (char c : text) {
    if (!(absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z') || c == '-')) return false;
  }
  return text.front() != '-' && text.back() != '-';
}

bool IsDns1123Subdomain(std::string_view text) {
  if (text.empty() || text.size() > kMaxSubdomainLength) return false;
  for (absl::string_view label : absl::StrSplit(absl::string_view(text.data(), text.size()), '.')) {
    if (!IsDns1123Label(std::string_view(label.data(), label.size()))) return false;
  }
  return true;
}

absl::Status ValidateTaskNames(std::string_view namespace_name, std::string_view job,
                               std::string_view pod) {
  WAVEPOOL_RETURN_IF_ERROR(CheckField("task.", "namespace", namespace_name, false));
  WAVEPOOL_RETURN_IF_ERROR(CheckField("task.", "job", job, true));
  return CheckField("task.", "pod", pod, true);
}

absl::Status ValidateRegisterStrings(const RegisterRequest& request) {
  WAVEPOOL_RETURN_IF_ERROR(CheckField("Register.", "namespace", request.namespace_name, false));
  WAVEPOOL_RETURN_IF_ERROR(CheckField("Register.", "job", request.job, true));
  return CheckField("Register.", "pod", request.pod, true);
}

}  // namespace wavepool::agent::internal
