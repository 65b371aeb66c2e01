// Authentication (bearer tokens), authorization (AlwaysAllow or RBAC), the TokenRequest API and
// SelfSubjectAccessReview, as kube-apiserver answers them (k8s.io/apiserver pkg/endpoints/filters
// authentication.go and authorization.go; pkg/registry/core/serviceaccount/storage/token.go).
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/api_handler.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/request_protobuf.h"
#include "tests/support/apiserver/store_core.h"

namespace wavepool::testing::apiserver {
namespace {

using store_internal::TimestampFromNow;

constexpr char kRbacGroup[] = "rbac.authorization.k8s.io";
// The audience tokens are issued for when a TokenRequest names none (kube-apiserver's default
// --api-audiences on most clusters).
constexpr char kDefaultAudience[] = "https://kubernetes.default.svc.cluster.local";
constexpr std::int64_t kDefaultExpirationSeconds = 3600;
constexpr std::int64_t kMinExpirationSeconds = 600;
constexpr std::int64_t kMaxExpirationSeconds = std::int64_t{1} << 32;

// The real server's 401 body (a Status with reason Unauthorized and no details).
absl::Status Unauthorized() { return ApiFailure(401, "Unauthorized", "Unauthorized"); }

UserInfo Anonymous() { return UserInfo{"system:anonymous", {"system:unauthenticated"}}; }

std::string Rfc3339(std::chrono::system_clock::time_point when) {
  const std::int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(when - std::chrono::system_clock::now())
          .count();
  return TimestampFromNow(seconds);
}

// Discovery, OpenAPI, version and health: system:discovery and system:public-info-viewer grant
// them to every authenticated user on a real cluster.
bool IsPublicPath(const std::string& path) {
  for (const char* prefix :
       {"/api", "/apis", "/openapi", "/version", "/healthz", "/readyz", "/livez"}) {
    if (path == prefix || absl::StartsWith(path, absl::StrCat(prefix, "/"))) return true;
  }
  return path == "/";
}

std::string StringAt(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

// A TokenRequest's or SelfSubjectAccessReview's body: JSON, or protobuf as kubectl sends them.
absl::StatusOr<nlohmann::json> DecodeReviewBody(const HttpRequest& request, const char* kind) {
  if (MediaTypeOf(request.Header("content-type")) != "application/vnd.kubernetes.protobuf") {
    return DecodeJsonBody(request);
  }
  absl::StatusOr<nlohmann::json> decoded = DecodeProtobufObject(request.body);
  if (decoded.ok()) return decoded;
  return BadRequestFailure(absl::StrCat("the object provided is unrecognized (must be of type ",
                                        kind, "): ", decoded.status().message()));
}

}  // namespace

absl::StatusOr<UserInfo> ApiHandler::Authenticate(const HttpRequest& request) const {
  const std::string header = request.Header("authorization");
  if (options_.tokens == nullptr) return Anonymous();
  if (header.empty()) {
    // kube-apiserver with --anonymous-auth=false: no credentials, no access.
    if (options_.authorization_mode == AuthorizationMode::kRbac) {
      return Refused(Unauthorized(), absl::StrCat("no token: ", request.method, " ", request.path));
    }
    return Anonymous();
  }
  constexpr absl::string_view kBearer = "bearer ";
  const std::string what = absl::StrCat(request.method, " ", request.path);
  if (!absl::StartsWithIgnoreCase(header, kBearer)) {
    return Refused(Unauthorized(), absl::StrCat("not a bearer token: ", what));
  }
  const std::string token(absl::StripAsciiWhitespace(header.substr(kBearer.size())));
  std::optional<TokenOwner> owner = options_.tokens->Lookup(token);
  if (!owner.has_value()) return Refused(Unauthorized(), absl::StrCat("unknown token: ", what));
  if (!owner->service_account_name.empty()) {
    const std::string account =
        absl::StrCat(owner->service_account_namespace, "/", owner->service_account_name);
    if (std::chrono::system_clock::now() >= owner->expires) {
      return Refused(Unauthorized(), absl::StrCat("expired token of ", account, ": ", what));
    }
    // A bound token is valid only while its ServiceAccount (that very one: same uid) exists.
    const std::optional<ResourceInfo> accounts = store_.FindResource("", "v1", "serviceaccounts");
    absl::StatusOr<nlohmann::json> stored =
        accounts.has_value()
            ? store_.Get(*accounts, owner->service_account_namespace, owner->service_account_name)
            : absl::NotFoundError("no serviceaccounts");
    if (!stored.ok() || StringAt((*stored)["metadata"], "uid") != owner->service_account_uid) {
      return Refused(Unauthorized(),
                     absl::StrCat("token of a deleted ServiceAccount ", account, ": ", what));
    }
  }
  return owner->user;
}

RbacObjects ApiHandler::LoadRbac() const {
  RbacObjects objects;
  const std::pair<const char*, std::vector<nlohmann::json>*> kinds[] = {
      {"roles", &objects.roles},
      {"clusterroles", &objects.cluster_roles},
      {"rolebindings", &objects.role_bindings},
      {"clusterrolebindings", &objects.cluster_role_bindings}};
  for (const auto& [plural, out] : kinds) {
    const std::optional<ResourceInfo> resource = store_.FindResource(kRbacGroup, "v1", plural);
    if (!resource.has_value()) continue;
    absl::StatusOr<ListResult> list = store_.List(*resource, "", ListQuery{});
    if (list.ok()) *out = std::move(list->items);
  }
  return objects;
}

absl::Status ApiHandler::Authorize(const UserInfo& user,
                                   const RequestAttributes& attributes) const {
  if (options_.authorization_mode == AuthorizationMode::kAlwaysAllow) return absl::OkStatus();
  if (!attributes.resource_request && user.InGroup(kAuthenticatedGroup) &&
      IsPublicPath(attributes.path)) {
    return absl::OkStatus();
  }
  if (RbacAllows(LoadRbac(), user, attributes)) return absl::OkStatus();
  absl::Status forbidden = ForbiddenFailure(user, attributes);
  return Refused(forbidden, std::string(forbidden.message()));
}

absl::Status ApiHandler::Refused(absl::Status status, const std::string& what) const {
  if (options_.on_refused) options_.on_refused(what);
  return status;
}

HttpResponse ApiHandler::CreateToken(const HttpRequest& request, const Target& target) {
  const std::string& name = target.path.name;
  absl::StatusOr<nlohmann::json> account = store_.Get(target.resource, target.ns, name);
  if (!account.ok()) return FailureResponse(account.status());
  nlohmann::json body = nlohmann::json::object();
  if (!request.body.empty()) {
    absl::StatusOr<nlohmann::json> decoded = DecodeReviewBody(request, "TokenRequest");
    if (!decoded.ok()) return FailureResponse(decoded.status());
    if (!decoded->is_object()) {
      return FailureResponse(BadRequestFailure(
          "the object provided is unrecognized (must be of type TokenRequest): json: cannot "
          "unmarshal into Go value of type struct"));
    }
    body = *std::move(decoded);
  }
  nlohmann::json spec = body.value("spec", nlohmann::json::object());
  if (!spec.is_object()) spec = nlohmann::json::object();
  std::int64_t seconds = kDefaultExpirationSeconds;
  if (spec.contains("expirationSeconds") && !spec["expirationSeconds"].is_null()) {
    if (!spec["expirationSeconds"].is_number_integer()) {
      return FailureResponse(BadRequestFailure(
          "json: cannot unmarshal spec.expirationSeconds into Go value of type int64"));
    }
    seconds = spec["expirationSeconds"].get<std::int64_t>();
  }
  // validation.ValidateTokenRequest.
  std::string too;
  if (seconds < kMinExpirationSeconds) too = "may not specify a duration less than 10 minutes";
  if (seconds > kMaxExpirationSeconds) too = "may not specify a duration larger than 2^32 seconds";
  if (!too.empty()) {
    return FailureResponse(InvalidFailure("TokenRequest", "authentication.k8s.io", name,
                                          {{"FieldValueInvalid", "spec.expirationSeconds",
                                            absl::StrCat("Invalid value: ", seconds, ": ", too)}}));
  }
  nlohmann::json audiences = spec.value("audiences", nlohmann::json::array());
  if (!audiences.is_array() || audiences.empty()) audiences = {kDefaultAudience};
  const auto expires = std::chrono::system_clock::now() + std::chrono::seconds(seconds);
  const std::string token = options_.tokens->IssueServiceAccountToken(
      target.ns, name, StringAt((*account)["metadata"], "uid"), expires);
  nlohmann::json answer = {
      {"kind", "TokenRequest"},
      {"apiVersion", "authentication.k8s.io/v1"},
      {"metadata",
       {{"name", name}, {"namespace", target.ns}, {"creationTimestamp", TimestampFromNow()}}},
      {"spec",
       {{"audiences", audiences}, {"expirationSeconds", seconds}, {"boundObjectRef", nullptr}}},
      {"status", {{"token", token}, {"expirationTimestamp", Rfc3339(expires)}}}};
  return JsonResponse(201, answer);
}

HttpResponse ApiHandler::AccessReview(const HttpRequest& request, const UserInfo& user) const {
  absl::StatusOr<nlohmann::json> body = DecodeReviewBody(request, "SelfSubjectAccessReview");
  if (!body.ok()) return FailureResponse(body.status());
  if (!body->is_object()) {
    return FailureResponse(
        BadRequestFailure("the object provided is unrecognized (must be of "
                          "type SelfSubjectAccessReview)"));
  }
  const nlohmann::json spec = body->value("spec", nlohmann::json::object());
  RequestAttributes attributes;
  if (spec.is_object() && spec.contains("resourceAttributes") &&
      spec["resourceAttributes"].is_object()) {
    const nlohmann::json& r = spec["resourceAttributes"];
    attributes.verb = StringAt(r, "verb");
    attributes.api_group = StringAt(r, "group");
    attributes.resource = StringAt(r, "resource");
    attributes.subresource = StringAt(r, "subresource");
    attributes.ns = StringAt(r, "namespace");
    attributes.name = StringAt(r, "name");
  } else if (spec.is_object() && spec.contains("nonResourceAttributes") &&
             spec["nonResourceAttributes"].is_object()) {
    attributes.resource_request = false;
    attributes.verb = StringAt(spec["nonResourceAttributes"], "verb");
    attributes.path = StringAt(spec["nonResourceAttributes"], "path");
  } else {
    return FailureResponse(InvalidFailure(
        "SelfSubjectAccessReview", "authorization.k8s.io", "",
        {{"FieldValueRequired", "spec.resourceAttributes",
          "Required value: exactly one of nonResourceAttributes or resourceAttributes must be "
          "specified"}}));
  }
  const absl::Status allowed = Authorize(user, attributes);
  nlohmann::json answer = *std::move(body);
  answer["apiVersion"] = "authorization.k8s.io/v1";
  answer["kind"] = "SelfSubjectAccessReview";
  if (!answer.contains("metadata") || !answer["metadata"].is_object()) {
    answer["metadata"] = nlohmann::json::object();
  }
  answer["metadata"]["creationTimestamp"] = nullptr;
  answer["status"] = {{"allowed", allowed.ok()}};
  return JsonResponse(201, answer);
}

}  // namespace wavepool::testing::apiserver
