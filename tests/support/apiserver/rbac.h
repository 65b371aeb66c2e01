// Kubernetes RBAC (rbac.authorization.k8s.io/v1) as kube-apiserver's RBAC authorizer evaluates
// it (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac): which requests the stored Roles,
// ClusterRoles, RoleBindings and ClusterRoleBindings allow a user. Pure functions over the objects
// as JSON; the HTTP layer (request_auth.cpp) gathers them from the store and answers 403 with
// ForbiddenFailure when nothing allows a request.
//
// What is evaluated:
//  - a ClusterRoleBinding grants its ClusterRole's rules everywhere: cluster-scoped requests,
//    requests across all namespaces and requests in any one namespace;
//  - a RoleBinding grants its Role's (same namespace) or ClusterRole's rules only to requests in
//    its own namespace;
//  - subjects: User (name), Group (one of the user's groups), ServiceAccount (the user
//    "system:serviceaccount:<namespace>:<name>"; a missing namespace is the binding's);
//  - rules: verbs, apiGroups, resources ("pods", "pods/status", "*", "*/status"), resourceNames
//    (only requests that name an object), nonResourceURLs ("/healthz", "/api/*", "*");
//  - the group "system:masters" may do everything, whatever is stored.
// Aggregated ClusterRoles (aggregationRule) are not expanded: their stored rules count as they are.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_RBAC_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_RBAC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

// How requests are authorized: every one (the default, as before authentication existed here), or
// by RBAC.
enum class AuthorizationMode { kAlwaysAllow, kRbac };

inline constexpr char kMastersGroup[] = "system:masters";
inline constexpr char kAuthenticatedGroup[] = "system:authenticated";

// Who sends a request (authentication.k8s.io/v1 UserInfo).
struct UserInfo {
  std::string name;  // "system:serviceaccount:wavepool-system:wp-wavepool-controller"
  std::vector<std::string> groups;

  bool InGroup(const std::string& group) const;
};

// What a request does, as the authorizer sees it (k8s.io/apiserver authorizer.Attributes).
struct RequestAttributes {
  bool resource_request = true;
  std::string verb;  // get list watch create update patch delete deletecollection (resources);
                     // get post put patch delete head (non-resource paths: the method)
  // Resource requests.
  std::string api_group;    // "" for the core group
  std::string resource;     // "pods"
  std::string subresource;  // "status", "token", ""
  std::string ns;           // "" for cluster-scoped requests and requests across all namespaces
  std::string name;         // "" for collections
  // Non-resource requests.
  std::string path;  // "/healthz"
};

// The stored RBAC objects, every namespace.
struct RbacObjects {
  std::vector<nlohmann::json> roles;
  std::vector<nlohmann::json> cluster_roles;
  std::vector<nlohmann::json> role_bindings;
  std::vector<nlohmann::json> cluster_role_bindings;
};

// Whether one PolicyRule (a JSON object of a Role's or ClusterRole's `rules`) covers `request`.
bool RuleAllows(const nlohmann::json& rule, const RequestAttributes& request);

// Whether a binding's subject (a JSON object of `subjects`) is `user`. `binding_namespace` is the
// RoleBinding's namespace ("" for a ClusterRoleBinding).
bool SubjectMatches(const nlohmann::json& subject, const std::string& binding_namespace,
                    const UserInfo& user);

// Whether any binding of `user` grants a rule that covers `request` (system:masters: always).
bool RbacAllows(const RbacObjects& objects, const UserInfo& user, const RequestAttributes& request);

// kube-apiserver's 403 for a denied request, e.g. for a list of pods in "ns":
//   pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API
//   group "" in the namespace "ns"
// (`pods "x" is forbidden: ...` when the request names an object; `... at the cluster scope`
// without a namespace; `forbidden: User "u" cannot get path "/metrics"` for a non-resource path).
absl::Status ForbiddenFailure(const UserInfo& user, const RequestAttributes& request);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_RBAC_H_
