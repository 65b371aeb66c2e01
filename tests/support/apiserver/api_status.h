// Failures as the API server reports them: an absl::Status whose code follows the HTTP status and
// whose payload is the metav1.Status body the real kube-apiserver would send, e.g.
//   {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
//    "message":"pods \"x\" not found","reason":"NotFound",
//    "details":{"name":"x","kind":"pods"},"code":404}
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_API_STATUS_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_API_STATUS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

// One field's problem in a 422 Invalid answer (metav1.StatusCause).
struct FieldCause {
  std::string reason;  // "FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported", ...
  std::string field;   // "spec.gpus"
  std::string
      message;  // "Invalid value: 0: spec.gpus in body should be greater than or equal to 1"
};

// A failure with HTTP `code`, `reason` and `message`; `details` is metav1.StatusDetails.
absl::Status ApiFailure(int code, std::string_view reason, std::string_view message,
                        const nlohmann::json& details = nlohmann::json::object());

// The real server's wording for the common failures. `resource` is the group resource as the
// server names it ("pods", "trainingjobs.wavepool.dev"), `kind` the object's kind.
absl::Status NotFoundFailure(std::string_view resource, std::string_view name);
absl::Status AlreadyExistsFailure(std::string_view resource, std::string_view name);
// 409 "Operation cannot be fulfilled on <resource> \"<name>\": <why>".
absl::Status ConflictFailure(std::string_view resource, std::string_view name,
                             std::string_view why);
// 422 "<Kind>.<group> \"<name>\" is invalid: <cause>, <cause>".
absl::Status InvalidFailure(std::string_view kind, std::string_view group, std::string_view name,
                            const std::vector<FieldCause>& causes);
absl::Status BadRequestFailure(std::string_view message);
// 410 reason Expired: "too old resource version: <asked> (<oldest kept>)".
absl::Status ExpiredFailure(std::string_view message);
absl::Status MethodNotAllowedFailure(std::string_view message);
absl::Status UnsupportedMediaTypeFailure(std::string_view message);

// The HTTP status of a failure made above (500 for any other status).
int HttpCodeOf(const absl::Status& status);

// The metav1.Status body of a failure (an InternalError body for any other status).
nlohmann::json StatusBodyOf(const absl::Status& status);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_API_STATUS_H_
