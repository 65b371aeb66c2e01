// kube-apiserver's HTTP API over an ObjectStore: routes a request to discovery, OpenAPI, health,
// the fault-injection endpoints or a resource verb, and encodes the answer as the real server
// does (docs/kube.md, "The test API server"):
//   GET     /version /api /api/v1 /apis /apis/<g> /apis/<g>/<v> /openapi/v2 /openapi/v3[/<path>]
//   GET     /healthz /readyz /livez                                    -> "ok"
//   POST    /wavepool-test/{drop-watches,compact,restart}              -> fault injection
//   GET     <collection>           list (watch with ?watch=true)      POST   <collection> create
//   DELETE  <collection>           deletecollection                   GET    <object>     get
//   PUT     <object>[/status]      update                             PATCH  <object>[/status]
//   DELETE  <object>               delete
//   POST    /api/v1/namespaces/<ns>/serviceaccounts/<name>/token   TokenRequest (a bearer token)
//   POST    /apis/authorization.k8s.io/v1/selfsubjectaccessreviews (`kubectl auth can-i`)
//
// Every request is first authenticated (a bearer token of Options::tokens; none: anonymous, which
// RBAC mode refuses with 401) and authorized (Options::authorization_mode: AlwaysAllow, or RBAC
// over the stored rbac.authorization.k8s.io objects, 403 when nothing allows it).
//
// An ApiHandler is safe for concurrent use (one call per connection thread); the store outlives
// it.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_API_HANDLER_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_API_HANDLER_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/http_server.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/apiserver/rbac.h"
#include "tests/support/apiserver/request_decoding.h"
#include "tests/support/apiserver/tokens.h"

namespace wavepool::testing::apiserver {

class ApiHandler {
 public:
  struct Options {
    std::chrono::seconds default_watch_timeout{1800};
    std::chrono::milliseconds bookmark_interval{1000};
    AuthorizationMode authorization_mode = AuthorizationMode::kAlwaysAllow;
    // The bearer tokens requests may carry and the TokenRequest API issues; it outlives the
    // handler. nullptr: no authentication (every request is anonymous; RBAC mode then refuses
    // all) and no TokenRequest API.
    TokenRegistry* tokens = nullptr;
    // Called with the message of every 401 and 403 answer (from any connection thread): who was
    // refused what. Empty: not reported.
    std::function<void(const std::string&)> on_refused;
  };
  // The fault-injection endpoints' actions (an empty function answers 404). `restart` must not
  // wait for the HTTP server to stop: it runs on a connection thread the stop would join.
  struct Control {
    std::function<void()> drop_watches;
    std::function<void()> compact;
    std::function<void()> restart;
  };

  ApiHandler(ObjectStore& store, Options options, Control control);

  void Handle(const HttpRequest& request, HttpResponder& responder);

 private:
  // A resource request, resolved: the path, the served resource and the namespace.
  struct Target {
    ResourcePath path;
    ResourceInfo resource;
    std::string ns;  // the path's namespace; "" for cluster-wide and cluster-scoped requests
  };

  bool HandleNonResource(const HttpRequest& request, HttpResponder& responder);
  bool HandleControl(const HttpRequest& request, HttpResponder& responder);
  absl::StatusOr<Target> Resolve(const ResourcePath& path) const;
  void HandleResource(const HttpRequest& request, const Target& target, HttpResponder& responder);

  // request_objects.cpp
  HttpResponse Get(const HttpRequest& request, const Target& target);
  HttpResponse List(const HttpRequest& request, const Target& target);
  HttpResponse Create(const HttpRequest& request, const Target& target);
  HttpResponse Update(const HttpRequest& request, const Target& target);
  HttpResponse Patch(const HttpRequest& request, const Target& target);
  HttpResponse Delete(const HttpRequest& request, const Target& target);
  HttpResponse DeleteCollection(const HttpRequest& request, const Target& target);

  // request_auth.cpp
  absl::StatusOr<UserInfo> Authenticate(const HttpRequest& request) const;
  absl::Status Authorize(const UserInfo& user, const RequestAttributes& attributes) const;
  RbacObjects LoadRbac() const;
  // Reports `what` to Options::on_refused and returns `status`.
  absl::Status Refused(absl::Status status, const std::string& what) const;
  HttpResponse CreateToken(const HttpRequest& request, const Target& target);
  HttpResponse AccessReview(const HttpRequest& request, const UserInfo& user) const;

  // request_watch.cpp
  void Watch(const HttpRequest& request, const Target& target, HttpResponder& responder);

  ObjectStore& store_;
  const Options options_;
  const Control control_;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_API_HANDLER_H_
