// A failed API request as an absl::Status that keeps what the API server said: the absl code
// follows from the HTTP status, and the server's metav1.Status (reason, message, field causes)
// rides along as a payload, so that callers can branch on the reason as client-go's
// apierrors.IsNotFound and friends do.
//
//   HTTP  reason                         absl code
//   400   BadRequest                     InvalidArgument
//   401   Unauthorized                   Unauthenticated
//   403   Forbidden                      PermissionDenied
//   404   NotFound                       NotFound
//   405   MethodNotAllowed               Unimplemented
//   409   AlreadyExists                  AlreadyExists
//   409   Conflict                       Aborted         (optimistic concurrency: read again, retry)
//   410   Gone / Expired                 OutOfRange      (resourceVersion too old: list again)
//   415   UnsupportedMediaType           InvalidArgument
//   422   Invalid                        InvalidArgument (causes name the fields)
//   429   TooManyRequests                ResourceExhausted
//   500   InternalError                  Internal
//   503   ServiceUnavailable             Unavailable
//   504   Timeout                        DeadlineExceeded
//   no response (refused, reset, TLS)    Unavailable     (no payload)
#ifndef WAVEPOOL_KUBE_API_ERROR_H_
#define WAVEPOOL_KUBE_API_ERROR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace wavepool::kube {

// metav1.StatusCause: one field's problem in an Invalid answer.
struct StatusCause {
  std::string type;     // "FieldValueRequired", "FieldValueInvalid", ...
  std::string message;  // "Invalid value: 0: spec.gpus in body should be greater than or equal to 1"
  std::string field;    // "spec.gpus"
};

// metav1.Status of a failure, the fields callers act on.
struct ApiStatus {
  int code = 0;         // HTTP status
  std::string reason;   // "NotFound", "Conflict", ... ; empty when the server gave none
  std::string message;  // the server's message
  std::string group, kind, name;  // details: what the error is about
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;
};

// The status for an answer with HTTP status `code` and body `body` (a metav1.Status when the
// server sent one; otherwise the reason follows from the code). `request` ("GET /api/v1/...")
// starts the message.
absl::Status ApiErrorFromResponse(int code, std::string_view body, std::string_view request);

// The payload of a status made by ApiErrorFromResponse; nullopt for any other status.
std::optional<ApiStatus> ApiStatusOf(const absl::Status& status);

// The reason of the API's answer ("" when the status carries none).
std::string ReasonOf(const absl::Status& status);

bool IsNotFound(const absl::Status& status);
bool IsAlreadyExists(const absl::Status& status);
bool IsConflict(const absl::Status& status);
bool IsGone(const absl::Status& status);  // 410: Gone or Expired
bool IsInvalid(const absl::Status& status);
bool IsForbidden(const absl::Status& status);
bool IsTooManyRequests(const absl::Status& status);

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_API_ERROR_H_
