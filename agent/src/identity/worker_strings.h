// Checks on the strings a worker sends (Register's namespace, job and pod), before the agent uses
// them anywhere: metrics labels, logs and the GPUNode, whose CRD pattern the API server enforces
// (a value it refuses with 422 would stop every publish of the node). Pure functions.
#ifndef WAVEPOOL_AGENT_SRC_IDENTITY_WORKER_STRINGS_H_
#define WAVEPOOL_AGENT_SRC_IDENTITY_WORKER_STRINGS_H_

#include <string_view>

#include "absl/status/status.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent::internal {

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Kubernetes name rules (k8s.io/apimachinery validation): a DNS-1123 label is 1..63 of
// [a-z0-9-], starting and ending alphanumeric; a DNS-1123 subdomain is 1..253 of such labels
// joined by '.'.
bool IsDns1123Label(std::string_view text);
bool IsDns1123Subdomain(std::string_view text);

// InvalidArgument naming the field ("Register.namespace: ...") and what would be valid, for a
// namespace that is no DNS-1123 label, a job or pod that is no DNS-1123 subdomain, or any of them
// that is not UTF-8 (the message then shows the bytes escaped, never raw).
absl::Status ValidateRegisterStrings(const RegisterRequest& request);

// The same rules for a task's namespace, job and pod as the GPUNode publishes them.
absl::Status ValidateTaskNames(std::string_view namespace_name, std::string_view job,
                               std::string_view pod);

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_SRC_IDENTITY_WORKER_STRINGS_H_
