// metav1.Status failures with the real kube-apiserver's wording (k8s.io/apimachinery
// pkg/api/errors): the absl code follows the HTTP status as the client library maps it
// (wavepool/kube/api_error.h), and the Status body rides along as a payload.
#include "tests/support/apiserver/api_status.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr char kStatusTypeUrl[] = "type.wavepool.dev/k8s.io.apimachinery.pkg.apis.meta.v1.Status";

absl::StatusCode CodeFor(int http_code, std::string_view reason) {
  switch (http_code) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 415:
      return absl::StatusCode::kInvalidArgument;
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return absl::StatusCode::kInternal;
  }
}

// "trainingjobs.wavepool.dev" -> {"trainingjobs", "wavepool.dev"}; "pods" -> {"pods", ""}.
std::pair<std::string, std::string> SplitGroupResource(std::string_view group_resource) {
  const std::size_t dot = group_resource.find('.');
  if (dot == std::string_view::npos) return {std::string(group_resource), ""};
  return {std::string(group_resource.substr(0, dot)), std::string(group_resource.substr(dot + 1))};
}

// metav1.StatusDetails for an error about one object of `group_resource`.
nlohmann::json DetailsFor(std::string_view group_resource, std::string_view name) {
  auto [resource, group] = SplitGroupResource(group_resource);
  nlohmann::json details = nlohmann::json::object();
  if (!name.empty()) details["name"] = std::string(name);
  if (!group.empty()) details["group"] = group;
  details["kind"] = resource;
  return details;
}

std::optional<nlohmann::json> PayloadOf(const absl::Status& status) {
  auto payload = status.GetPayload(kStatusTypeUrl);
  if (!payload.has_value()) return std::nullopt;
  nlohmann::json body = nlohmann::json::parse(std::string(*payload), nullptr,
                                              /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return std::nullopt;
  return body;
}

}  // namespace

absl::Status ApiFailure(int code, std::string_view reason, std::string_view message,
                        const nlohmann::json& details) {
  nlohmann::json body = {{"kind", "Status"},
                         {"apiVersion", "v1"},
                         {"metadata", nlohmann::json::object()},
                         {"status", "Failure"},
                         {"message", std::string(message)}};
  if (!reason.empty()) body["reason"] = std::string(reason);
  if (details.is_object() && !details.empty()) body["details"] = details;
  body["code"] = code;
  absl::Status status(CodeFor(code, reason), std::string(message));
  status.SetPayload(kStatusTypeUrl, absl::Cord(body.dump()));
  return status;
}

absl::Status NotFoundFailure(std::string_view resource, std::string_view name) {
  return ApiFailure(404, "NotFound",
                    absl::StrCat(std::string(resource), " \"", std::string(name), "\" not found"),
                    DetailsFor(resource, name));
}

absl::Status AlreadyExistsFailure(std::string_view resource, std::string_view name) {
  return ApiFailure(
      409, "AlreadyExists",
      absl::StrCat(std::string(resource), " \"", std::string(name), "\" already exists"),
      DetailsFor(resource, name));
}

absl::Status ConflictFailure(std::string_view resource, std::string_view name,
                             std::string_view why) {
  return ApiFailure(409, "Conflict",
                    absl::StrCat("Operation cannot be fulfilled on ", std::string(resource), " \"",
                                 std::string(name), "\": ", std::string(why)),
                    DetailsFor(resource, name));
}

absl::Status InvalidFailure(std::string_view kind, std::string_view group, std::string_view name,
                            const std::vector<FieldCause>& causes) {
  // field.ErrorList.ToAggregate(): one error alone, several (duplicates dropped) in brackets.
  std::vector<std::string> parts;
  nlohmann::json cause_list = nlohmann::json::array();
  for (const FieldCause& cause : causes) {
    std::string text =
        cause.field.empty() ? cause.message : absl::StrCat(cause.field, ": ", cause.message);
    if (std::find(parts.begin(), parts.end(), text) == parts.end()) parts.push_back(text);
    cause_list.push_back(
        {{"reason", cause.reason}, {"message", cause.message}, {"field", cause.field}});
  }
  std::string aggregate = absl::StrJoin(parts, ", ");
  if (parts.size() > 1) aggregate = absl::StrCat("[", aggregate, "]");
  const std::string qualified_kind =
      group.empty() ? std::string(kind) : absl::StrCat(std::string(kind), ".", std::string(group));
  nlohmann::json details = nlohmann::json::object();
  if (!name.empty()) details["name"] = std::string(name);
  if (!group.empty()) details["group"] = std::string(group);
  details["kind"] = std::string(kind);
  if (!cause_list.empty()) details["causes"] = cause_list;
  return ApiFailure(
      422, "Invalid",
      absl::StrCat(qualified_kind, " \"", std::string(name), "\" is invalid: ", aggregate),
      details);
}

absl::Status BadRequestFailure(std::string_view message) {
  return ApiFailure(400, "BadRequest", message);
}

absl::Status ExpiredFailure(std::string_view message) {
  return ApiFailure(410, "Expired", message);
}

absl::Status MethodNotAllowedFailure(std::string_view message) {
  return ApiFailure(405, "MethodNotAllowed", message);
}

absl::Status UnsupportedMediaTypeFailure(std::string_view message) {
  return ApiFailure(415, "UnsupportedMediaType", message);
}

int HttpCodeOf(const absl::Status& status) {
  if (status.ok()) return 200;
  std::optional<nlohmann::json> body = PayloadOf(status);
  if (body.has_value() && body->contains("code") && (*body)["code"].is_number_integer()) {
    return (*body)["code"].get<int>();
  }
  return 500;
}

nlohmann::json StatusBodyOf(const absl::Status& status) {
  std::optional<nlohmann::json> body = PayloadOf(status);
  if (body.has_value()) return *body;
  // apierrors.NewInternalError's wording.
  return {{"kind", "Status"},
          {"apiVersion", "v1"},
          {"metadata", nlohmann::json::object()},
          {"status", "Failure"},
          {"message", absl::StrCat("Internal error occurred: ", status.message())},
          {"reason", "InternalError"},
          {"details", {{"causes", {{{"message", std::string(status.message())}}}}}},
          {"code", 500}};
}

}  // namespace wavepool::testing::apiserver
