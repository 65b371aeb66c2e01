// Routing: non-resource paths (discovery, OpenAPI, health, fault injection), then resource paths
// resolved against the served resources and dispatched by method.
#include "tests/support/apiserver/api_handler.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/discovery.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr char kControlPrefix[] = "/wavepool-test/";

absl::Status MethodNotAllowed() {
  return MethodNotAllowedFailure("the server does not allow this method on the requested resource");
}

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> segments = absl::StrSplit(path, '/', absl::SkipEmpty());
  return segments;
}

bool IsHealthPath(const std::vector<std::string>& segments) {
  return !segments.empty() &&
         (segments[0] == "healthz" || segments[0] == "readyz" || segments[0] == "livez");
}

// Discovery, OpenAPI, version and health: the paths every authenticated user may read.
bool IsDiscoveryPath(const std::vector<std::string>& segments) {
  return segments.empty() || segments[0] == "version" || segments[0] == "openapi" ||
         IsHealthPath(segments) || (segments[0] == "api" && segments.size() <= 2) ||
         (segments[0] == "apis" && segments.size() <= 3);
}

bool IsAccessReview(const ResourcePath& path) {
  return path.group == "authorization.k8s.io" && path.version == "v1" &&
         path.plural == "selfsubjectaccessreviews" && !path.namespaced_form && path.name.empty();
}

HttpResponse OptionalDocument(const std::optional<nlohmann::json>& document) {
  if (!document.has_value()) return FailureResponse(UnknownPathFailure());
  return JsonResponse(200, *document);
}

bool Allows(const ResourceInfo& resource, const std::string& verb) {
  return std::find(resource.verbs.begin(), resource.verbs.end(), verb) != resource.verbs.end();
}

// The verb of a resource request, as discovery and RBAC name it ("" when none applies).
std::string VerbOf(const std::string& method, const ResourcePath& path, bool watch) {
  const bool collection = path.name.empty();
  if (method == "GET") return watch ? "watch" : (collection ? "list" : "get");
  if (method == "POST") return collection ? "create" : "";
  if (method == "PUT") return collection ? "" : "update";
  if (method == "PATCH") return collection ? "" : "patch";
  if (method == "DELETE") return collection ? "deletecollection" : "delete";
  return "";
}

// What the authorizer sees of a resource request (k8s.io/apiserver request.RequestInfo): a
// method the route does not serve still gets the method's verb, so that it is authorized (and
// then refused with 405) as on the real server; a list or watch of one name by fieldSelector
// names it, so that a rule with resourceNames can allow it.
absl::StatusOr<RequestAttributes> ResourceAttributes(const HttpRequest& request,
                                                     const ResourcePath& path) {
  absl::StatusOr<bool> watch = ParseBoolQuery(request, "watch");
  if (!watch.ok()) return watch.status();
  RequestAttributes attributes;
  attributes.verb =
      VerbOf(request.method, path, (*watch || path.watch_segment) && path.subresource.empty());
  if (attributes.verb.empty()) {
    static const std::map<std::string, std::string> kByMethod = {{"GET", "get"},
                                                                 {"POST", "create"},
                                                                 {"PUT", "update"},
                                                                 {"PATCH", "patch"},
                                                                 {"DELETE", "delete"}};
    const auto it = kByMethod.find(request.method);
    attributes.verb = it == kByMethod.end() ? absl::AsciiStrToLower(request.method) : it->second;
  }
  attributes.api_group = path.group;
  attributes.resource = path.plural;
  attributes.subresource = path.subresource;
  attributes.ns = path.namespace_name;
  attributes.name = path.name;
  constexpr absl::string_view kNameSelector = "metadata.name=";
  const std::string selector = request.Query("fieldSelector");
  if (attributes.name.empty() && (attributes.verb == "list" || attributes.verb == "watch") &&
      absl::StartsWith(selector, kNameSelector) && !absl::StrContains(selector, ",")) {
    attributes.name = selector.substr(kNameSelector.size());
  }
  return attributes;
}

}  // namespace

ApiHandler::ApiHandler(ObjectStore& store, Options options, Control control)
    : store_(store), options_(options), control_(std::move(control)) {}

void ApiHandler::Handle(const HttpRequest& request, HttpResponder& responder) {
  absl::StatusOr<UserInfo> user = Authenticate(request);
  if (!user.ok()) {
    responder.Send(FailureResponse(user.status()));
    return;
  }
  const bool non_resource =
      absl::StartsWith(request.path, kControlPrefix) || IsDiscoveryPath(Segments(request.path));
  const std::optional<ResourcePath> path =
      non_resource ? std::nullopt : ParseResourcePath(request.path);
  if (path.has_value() && IsAccessReview(*path)) {
    responder.Send(request.method == "POST" ? AccessReview(request, *user)
                                            : FailureResponse(MethodNotAllowed()));
    return;
  }
  RequestAttributes attributes;
  if (path.has_value()) {
    absl::StatusOr<RequestAttributes> resource_attributes = ResourceAttributes(request, *path);
    if (!resource_attributes.ok()) {
      responder.Send(FailureResponse(resource_attributes.status()));
      return;
    }
    attributes = *std::move(resource_attributes);
  } else {
    attributes.resource_request = false;
    attributes.verb = absl::AsciiStrToLower(request.method);
    attributes.path = request.path;
  }
  if (absl::Status allowed = Authorize(*user, attributes); !allowed.ok()) {
    responder.Send(FailureResponse(allowed));
    return;
  }
  if (non_resource && HandleNonResource(request, responder)) return;
  if (!path.has_value()) {
    responder.Send(FailureResponse(UnknownPathFailure()));
    return;
  }
  absl::StatusOr<Target> target = Resolve(*path);
  if (!target.ok()) {
    responder.Send(FailureResponse(target.status()));
    return;
  }
  HandleResource(request, *target, responder);
}

bool ApiHandler::HandleNonResource(const HttpRequest& request, HttpResponder& responder) {
  if (absl::StartsWith(request.path, kControlPrefix)) return HandleControl(request, responder);
  const std::vector<std::string> segments = Segments(request.path);
  if (!IsDiscoveryPath(segments)) return false;
  if (request.method != "GET" && request.method != "HEAD") {
    responder.Send(FailureResponse(MethodNotAllowed()));
    return true;
  }
  if (IsHealthPath(segments)) {
    responder.Send(HttpResponse{200, "text/plain; charset=utf-8", {}, "ok"});
    return true;
  }
  const std::vector<ResourceInfo> resources = store_.Resources();
  const std::size_t n = segments.size();
  HttpResponse response = FailureResponse(UnknownPathFailure());
  if (n == 1 && segments[0] == "version") {
    response = JsonResponse(200, VersionInfo());
  } else if (n == 1 && segments[0] == "api") {
    response = JsonResponse(200, CoreApiVersions());
  } else if (n == 2 && segments[0] == "api") {
    response = OptionalDocument(ApiResourceList(resources, "", segments[1]));
  } else if (n == 1 && segments[0] == "apis") {
    response = JsonResponse(200, ApiGroupList(resources));
  } else if (n == 2 && segments[0] == "apis") {
    response = OptionalDocument(ApiGroup(resources, segments[1]));
  } else if (n == 3 && segments[0] == "apis") {
    response = OptionalDocument(ApiResourceList(resources, segments[1], segments[2]));
  } else if (n == 2 && segments[0] == "openapi" && segments[1] == "v2") {
    // kubectl asks for v2 only as protobuf, and only when the v3 documents cannot answer (a CRD
    // and its objects in one apply). An empty document makes it report "no matches for kind",
    // as against a real server; JSON would fail its protobuf parser instead.
    response = absl::StrContains(request.Header("accept"), "protobuf")
                   ? HttpResponse{200, "application/octet-stream", {}, ""}
                   : JsonResponse(200, OpenApiV2Document(resources));
  } else if (n == 2 && segments[0] == "openapi" && segments[1] == "v3") {
    response = JsonResponse(200, OpenApiV3Index(resources));
  } else if (n > 2 && segments[0] == "openapi" && segments[1] == "v3") {
    const std::string rest = request.path.substr(request.path.find("/v3/") + 4);
    response = OptionalDocument(OpenApiV3Document(resources, rest));
  }
  responder.Send(response);
  return true;
}

bool ApiHandler::HandleControl(const HttpRequest& request, HttpResponder& responder) {
  const std::string action = request.path.substr(sizeof(kControlPrefix) - 1);
  const std::function<void()>* hook = nullptr;
  if (action == "drop-watches") hook = &control_.drop_watches;
  if (action == "compact") hook = &control_.compact;
  if (action == "restart") hook = &control_.restart;
  if (hook == nullptr || !*hook) {
    responder.Send(FailureResponse(UnknownPathFailure()));
    return true;
  }
  if (request.method != "POST") {
    responder.Send(FailureResponse(MethodNotAllowed()));
    return true;
  }
  // Answer first: a restart closes this very connection.
  responder.Send(JsonResponse(200, {{"kind", "Status"},
                                    {"apiVersion", "v1"},
                                    {"metadata", nlohmann::json::object()},
                                    {"status", "Success"},
                                    {"message", action}}));
  (*hook)();
  return true;
}

absl::StatusOr<ApiHandler::Target> ApiHandler::Resolve(const ResourcePath& path) const {
  std::optional<ResourceInfo> resource = store_.FindResource(path.group, path.version, path.plural);
  if (!resource.has_value()) return UnknownPathFailure();
  // A namespaced resource's objects are addressed only within a namespace, and a cluster-scoped
  // resource has no namespaced form.
  if (resource->namespaced && !path.namespaced_form && !path.name.empty()) {
    return UnknownPathFailure();
  }
  if (!resource->namespaced && path.namespaced_form) return UnknownPathFailure();
  const bool token = path.subresource == "token" && resource->group.empty() &&
                     resource->plural == "serviceaccounts" && options_.tokens != nullptr;
  if (!path.subresource.empty() && !token &&
      (path.subresource != "status" || !resource->status_subresource)) {
    return UnknownPathFailure();
  }
  Target target{path, *std::move(resource), ""};
  if (target.resource.namespaced) target.ns = path.namespace_name;
  return target;
}

void ApiHandler::HandleResource(const HttpRequest& request, const Target& target,
                                HttpResponder& responder) {
  absl::StatusOr<bool> watch = ParseBoolQuery(request, "watch");
  if (!watch.ok()) {
    responder.Send(FailureResponse(watch.status()));
    return;
  }
  if (target.path.subresource == "token") {
    responder.Send(request.method == "POST" ? CreateToken(request, target)
                                            : FailureResponse(MethodNotAllowed()));
    return;
  }
  const bool watching = (*watch || target.path.watch_segment) && target.path.subresource.empty();
  const std::string verb = VerbOf(request.method, target.path, watching);
  const bool status_verb = verb == "get" || verb == "update" || verb == "patch";
  // Creating or deleting a namespaced collection needs the namespace in the path: the real
  // server has no such route without it.
  const bool needs_namespace = verb == "create" || verb == "deletecollection";
  if (verb.empty() || !Allows(target.resource, verb) ||
      (!target.path.subresource.empty() && !status_verb) ||
      (needs_namespace && target.resource.namespaced && !target.path.namespaced_form)) {
    responder.Send(FailureResponse(MethodNotAllowed()));
    return;
  }
  if (verb == "watch") {
    Watch(request, target, responder);
    return;
  }
  HttpResponse response;
  if (verb == "get") response = Get(request, target);
  if (verb == "list") response = List(request, target);
  if (verb == "create") response = Create(request, target);
  if (verb == "update") response = Update(request, target);
  if (verb == "patch") response = Patch(request, target);
  if (verb == "delete") response = Delete(request, target);
  if (verb == "deletecollection") response = DeleteCollection(request, target);
  responder.Send(response);
}

}  // namespace wavepool::testing::apiserver
