#include "wavepool/kube/api_error.h"

#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace wavepool::kube {
namespace {

// The payload's type URL; its value is the metav1.Status as JSON.
constexpr char kApiStatusTypeUrl[] = "type.wavepool.dev/wavepool.kube.ApiStatus";

// The reason an answer without a metav1.Status gets, as client-go's NewGenericServerResponse
// picks it (apimachinery pkg/api/errors).
std::string ReasonForCode(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

// The table in api_error.h; 409 splits on the reason (AlreadyExists vs Conflict).
absl::StatusCode CodeFor(int http_code, const std::string& reason) {
  switch (http_code) {
    case 400:
    case 406:
    case 413:
    case 415:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 408:
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 502:
    case 503:
      return absl::StatusCode::kUnavailable;
    default:
      break;
  }
  if (http_code >= 400 && http_code < 500) return absl::StatusCode::kFailedPrecondition;
  return absl::StatusCode::kUnknown;
}

std::string StringField(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

int IntField(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>() : 0;
}

// The body as a metav1.Status failure, or a Status built from the code when it is none (a proxy's
// HTML page, an empty body, plain text).
nlohmann::json StatusJson(int code, std::string_view body) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && StringField(parsed, "kind") == "Status") {
    if (!parsed.contains("code")) parsed["code"] = code;
    return parsed;
  }
  std::string message(body.substr(0, 256));
  if (message.empty()) message = absl::StrCat("the server answered HTTP ", code, " without a body");
  return {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
          {"message", message}, {"code", code},       {"reason", ReasonForCode(code)}};
}

ApiStatus ApiStatusFromJson(const nlohmann::json& json) {
  ApiStatus status;
  status.code = IntField(json, "code");
  status.reason = StringField(json, "reason");
  status.message = StringField(json, "message");
  const nlohmann::json details =
      json.is_object() ? json.value("details", nlohmann::json()) : nullptr;
  status.group = StringField(details, "group");
  status.kind = StringField(details, "kind");
  status.name = StringField(details, "name");
  status.retry_after_seconds = IntField(details, "retryAfterSeconds");
  if (details.is_object() && details.contains("causes") && details["causes"].is_array()) {
    for (const nlohmann::json& cause : details["causes"]) {
      status.causes.push_back(StatusCause{StringField(cause, "reason"),
                                          StringField(cause, "message"),
                                          StringField(cause, "field")});
    }
  }
  return status;
}

bool IsKnownReason(const std::string& reason) {
  static const std::set<std::string> kKnown = {"Unauthorized",
                                               "Forbidden",
                                               "NotFound",
                                               "AlreadyExists",
                                               "Conflict",
                                               "Gone",
                                               "Invalid",
                                               "ServerTimeout",
                                               "StoreReadError",
                                               "Timeout",
                                               "TooManyRequests",
                                               "BadRequest",
                                               "MethodNotAllowed",
                                               "NotAcceptable",
                                               "RequestEntityTooLarge",
                                               "UnsupportedMediaType",
                                               "InternalError",
                                               "Expired",
                                               "ServiceUnavailable"};
  return kKnown.count(reason) > 0;
}

// client-go's rule (apimachinery pkg/api/errors): a known reason decides; with an unknown or empty
// reason the HTTP code decides (`fallback_code` 0: no fallback).
bool Matches(const absl::Status& status, std::initializer_list<std::string_view> reasons,
             int fallback_code) {
  const std::optional<ApiStatus> api = ApiStatusOf(status);
  if (!api) return false;
  for (const std::string_view reason : reasons) {
    if (api->reason == reason) return true;
  }
  return fallback_code != 0 && !IsKnownReason(api->reason) && api->code == fallback_code;
}

}  // namespace

absl::Status ApiErrorFromResponse(int code, std::string_view body, std::string_view request) {
  const nlohmann::json json = StatusJson(code, body);
  const ApiStatus api = ApiStatusFromJson(json);
  std::string message = absl::StrCat(std::string(request), ": HTTP ", code);
  if (!api.reason.empty()) absl::StrAppend(&message, " ", api.reason);
  if (!api.message.empty()) absl::StrAppend(&message, ": ", api.message);
  absl::Status status(CodeFor(code, api.reason), message);
  status.SetPayload(kApiStatusTypeUrl, absl::Cord(json.dump()));
  return status;
}

std::optional<ApiStatus> ApiStatusOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kApiStatusTypeUrl);
  if (!payload) return std::nullopt;
  const nlohmann::json json =
      nlohmann::json::parse(std::string(*payload), nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  return ApiStatusFromJson(json);
}

std::string ReasonOf(const absl::Status& status) {
  const std::optional<ApiStatus> api = ApiStatusOf(status);
  return api ? api->reason : "";
}

bool IsNotFound(const absl::Status& status) { return Matches(status, {"NotFound"}, 404); }
bool IsAlreadyExists(const absl::Status& status) { return Matches(status, {"AlreadyExists"}, 0); }
bool IsConflict(const absl::Status& status) { return Matches(status, {"Conflict"}, 409); }
bool IsGone(const absl::Status& status) { return Matches(status, {"Gone", "Expired"}, 410); }
bool IsInvalid(const absl::Status& status) { return Matches(status, {"Invalid"}, 422); }
bool IsForbidden(const absl::Status& status) { return Matches(status, {"Forbidden"}, 403); }
bool IsTooManyRequests(const absl::Status& status) {
  return Matches(status, {"TooManyRequests"}, 429);
}

}  // namespace wavepool::kube
