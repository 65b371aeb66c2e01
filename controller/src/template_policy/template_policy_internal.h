// The pieces of the template policy (template_policy.h) that need no JSON: field paths and the
// operator's allowed paths, quantities, names and host paths. Pure functions and values, safe
// from any thread.
#ifndef WAVEPOOL_CONTROLLER_SRC_TEMPLATE_POLICY_TEMPLATE_POLICY_INTERNAL_H_
#define WAVEPOOL_CONTROLLER_SRC_TEMPLATE_POLICY_TEMPLATE_POLICY_INTERNAL_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::controller::internal {

// `text` cut at every `separator` (empty pieces kept): absl::StrSplit for std::string_view,
// which Debian's abseil does not take.
std::vector<std::string_view> Split(std::string_view text, char separator);

// One step of a field path: a field name, or a bracketed list index or map key ("*" in an
// allowed path matches any).
struct PathSegment {
  bool bracket = false;
  std::string text;
};

// A JSON path into a TrainingJob, as the policy's messages name fields:
// "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]".
class FieldPath {
 public:
  // "spec.template".
  static FieldPath Template();
  FieldPath Child(std::string_view name) const;
  FieldPath Index(std::size_t index) const;
  FieldPath Key(std::string_view key) const;
  // Dotted names and bracketed indices and keys.
  std::string ToString() const;
  // ToString with every index as "[*]": the path to hand to --allow-template-field.
  std::string Generalized() const;
  const std::vector<PathSegment>& segments() const { return segments_; }

 private:
  std::vector<PathSegment> segments_;
};

// Parses an allowed path ("spec.template.spec.containers[*].securityContext"): names of
// letters, digits, '_' and '-', joined by '.', and bracketed indices or keys without '[' or ']'.
// InvalidArgument naming the path for anything else or a path not under "spec.template".
absl::StatusOr<std::vector<PathSegment>> ParseAllowedPath(std::string_view text);

// Whether `allowed` is `field` or a prefix of it ("[*]" matching any index or key).
bool PathCovers(const std::vector<PathSegment>& allowed, const FieldPath& field);

// A resource quantity as the API server accepts one: a decimal number (optional sign, digits,
// one optional '.') followed by nothing, a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix
// (n u m k M G T P E) or an exponent (e3, E-2).
bool IsQuantity(std::string_view text);

// A resource that names GPUs: nvidia.com/*, amd.com/gpu or gpu.intel.com/*.
bool IsGpuResource(std::string_view name);

bool IsDns1123Label(std::string_view text);      // [a-z0-9]([-a-z0-9]*[a-z0-9])?, <= 63
bool IsDns1123Subdomain(std::string_view text);  // labels joined by '.', <= 253
// A label or annotation key: an optional DNS-1123 subdomain prefix and '/', then a name of at
// most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit.
bool IsQualifiedName(std::string_view text);
// A label value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending with
// a letter or digit.
bool IsLabelValue(std::string_view text);

// An environment variable name as kube-apiserver's IsEnvVarName accepts it:
// [-._a-zA-Z][-._a-zA-Z0-9]*, and neither "." nor ".." nor starting with "..". (Kubernetes 1.30
// and later also accept any printable ASCII but '='; older servers refuse that, and a name valid
// here is valid on every server.)
bool IsEnvVarName(std::string_view text);
// A container port name (IANA_SVC_NAME, kube-apiserver's IsValidPortName): at most 15 lowercase
// letters, digits and '-', at least one letter, no leading, trailing or consecutive '-'.
bool IsPortName(std::string_view text);

// An absolute path without empty, "." or ".." components ("/data" or "/data/sets"; "/" too).
bool IsCleanAbsolutePath(std::string_view path);
// A relative path without ".." components (a subPath, an item's path): it cannot leave its
// volume.
bool IsContainedRelativePath(std::string_view path);
// Whether the clean absolute `path` is `prefix` or under it. REQUIRES: both clean and absolute.
bool PathIsUnder(std::string_view path, std::string_view prefix);

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_TEMPLATE_POLICY_TEMPLATE_POLICY_INTERNAL_H_
