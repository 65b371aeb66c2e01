// The RBAC authorizer's rule and subject matching (k8s.io/kubernetes pkg/apis/rbac/v1
// evaluation_helpers.go, plugin/pkg/auth/authorizer/rbac/rbac.go) and the forbidden wording of
// k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go.
#include "tests/support/apiserver/rbac.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/api_status.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr char kServiceAccountPrefix[] = "system:serviceaccount:";

// The strings of `object[key]` (empty when absent or not a list of strings).
std::vector<std::string> Strings(const nlohmann::json& object, const char* key) {
  std::vector<std::string> values;
  if (!object.is_object() || !object.contains(key) || !object[key].is_array()) return values;
  for (const nlohmann::json& value : object[key]) {
    if (value.is_string()) values.push_back(value.get<std::string>());
  }
  return values;
}

std::string StringField(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

std::string NamespaceOf(const nlohmann::json& object) {
  return object.is_object() ? StringField(object.value("metadata", nlohmann::json()), "namespace")
                            : "";
}

std::string NameOf(const nlohmann::json& object) {
  return object.is_object() ? StringField(object.value("metadata", nlohmann::json()), "name") : "";
}

bool HasOrStar(const std::vector<std::string>& values, const std::string& wanted) {
  return std::any_of(values.begin(), values.end(),
                     [&](const std::string& v) { return v == "*" || v == wanted; });
}

// ResourceMatches: "*", "<resource>[/<subresource>]" exactly, or "*/<subresource>".
bool ResourceMatches(const std::vector<std::string>& resources, const RequestAttributes& request) {
  const std::string combined = request.subresource.empty()
                                   ? request.resource
                                   : absl::StrCat(request.resource, "/", request.subresource);
  for (const std::string& r : resources) {
    if (r == "*" || r == combined) return true;
    if (!request.subresource.empty() && r == absl::StrCat("*/", request.subresource)) return true;
  }
  return false;
}

// NonResourceURLMatches: exact, "*", or a prefix ending in "*".
bool PathMatches(const std::vector<std::string>& urls, const std::string& path) {
  for (const std::string& url : urls) {
    if (url == "*" || url == path) return true;
    if (absl::EndsWith(url, "*") && absl::StartsWith(path, url.substr(0, url.size() - 1))) {
      return true;
    }
  }
  return false;
}

// The rules of the role a binding refers to (none when the role does not exist: the real
// authorizer then denies too, with a reason naming the missing role).
std::vector<nlohmann::json> RulesOf(const RbacObjects& objects, const nlohmann::json& binding,
                                    const std::string& binding_namespace) {
  const nlohmann::json ref = binding.value("roleRef", nlohmann::json::object());
  const std::string kind = StringField(ref, "kind");
  const std::string name = StringField(ref, "name");
  const std::vector<nlohmann::json>* roles = nullptr;
  if (kind == "ClusterRole") roles = &objects.cluster_roles;
  if (kind == "Role" && !binding_namespace.empty()) roles = &objects.roles;
  if (roles == nullptr) return {};
  for (const nlohmann::json& role : *roles) {
    if (NameOf(role) != name) continue;
    if (kind == "Role" && NamespaceOf(role) != binding_namespace) continue;
    const nlohmann::json rules = role.value("rules", nlohmann::json::array());
    if (!rules.is_array()) return {};
    return std::vector<nlohmann::json>(rules.begin(), rules.end());
  }
  return {};
}

bool BindingAllows(const RbacObjects& objects, const nlohmann::json& binding,
                   const std::string& binding_namespace, const UserInfo& user,
                   const RequestAttributes& request) {
  const nlohmann::json subjects = binding.value("subjects", nlohmann::json::array());
  if (!subjects.is_array()) return false;
  const bool applies =
      std::any_of(subjects.begin(), subjects.end(), [&](const nlohmann::json& subject) {
        return SubjectMatches(subject, binding_namespace, user);
      });
  if (!applies) return false;
  for (const nlohmann::json& rule : RulesOf(objects, binding, binding_namespace)) {
    if (RuleAllows(rule, request)) return true;
  }
  return false;
}

}  // namespace

bool UserInfo::InGroup(const std::string& group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

bool RuleAllows(const nlohmann::json& rule, const RequestAttributes& request) {
  if (!rule.is_object() || !HasOrStar(Strings(rule, "verbs"), request.verb)) return false;
  if (!request.resource_request) return PathMatches(Strings(rule, "nonResourceURLs"), request.path);
  if (!HasOrStar(Strings(rule, "apiGroups"), request.api_group)) return false;
  if (!ResourceMatches(Strings(rule, "resources"), request)) return false;
  const std::vector<std::string> names = Strings(rule, "resourceNames");
  if (names.empty()) return true;
  return std::find(names.begin(), names.end(), request.name) != names.end();
}

bool SubjectMatches(const nlohmann::json& subject, const std::string& binding_namespace,
                    const UserInfo& user) {
  const std::string kind = StringField(subject, "kind");
  const std::string name = StringField(subject, "name");
  if (kind == "User") return !name.empty() && name == user.name;
  if (kind == "Group") return !name.empty() && user.InGroup(name);
  if (kind != "ServiceAccount") return false;
  std::string ns = StringField(subject, "namespace");
  if (ns.empty()) ns = binding_namespace;
  if (ns.empty() || name.empty()) return false;
  return user.name == absl::StrCat(kServiceAccountPrefix, ns, ":", name);
}

bool RbacAllows(const RbacObjects& objects, const UserInfo& user,
                const RequestAttributes& request) {
  if (user.InGroup(kMastersGroup)) return true;
  for (const nlohmann::json& binding : objects.cluster_role_bindings) {
    // A ClusterRoleBinding refers to a ClusterRole only.
    if (StringField(binding.value("roleRef", nlohmann::json::object()), "kind") != "ClusterRole") {
      continue;
    }
    if (BindingAllows(objects, binding, "", user, request)) return true;
  }
  // RoleBindings grant only within their namespace; cluster-wide requests have none.
  if (!request.resource_request || request.ns.empty()) return false;
  for (const nlohmann::json& binding : objects.role_bindings) {
    const std::string ns = NamespaceOf(binding);
    if (ns != request.ns) continue;
    if (BindingAllows(objects, binding, ns, user, request)) return true;
  }
  return false;
}

absl::Status ForbiddenFailure(const UserInfo& user, const RequestAttributes& request) {
  if (!request.resource_request) {
    return ApiFailure(403, "Forbidden",
                      absl::StrCat("forbidden: User \"", user.name, "\" cannot ", request.verb,
                                   " path \"", request.path, "\""));
  }
  const std::string resource = request.subresource.empty()
                                   ? request.resource
                                   : absl::StrCat(request.resource, "/", request.subresource);
  std::string why = absl::StrCat("User \"", user.name, "\" cannot ", request.verb, " resource \"",
                                 resource, "\" in API group \"", request.api_group, "\"");
  absl::StrAppend(&why, request.ns.empty()
                            ? std::string(" at the cluster scope")
                            : absl::StrCat(" in the namespace \"", request.ns, "\""));
  const std::string qualified = request.api_group.empty()
                                    ? request.resource
                                    : absl::StrCat(request.resource, ".", request.api_group);
  const std::string subject =
      request.name.empty() ? qualified : absl::StrCat(qualified, " \"", request.name, "\"");
  nlohmann::json details = nlohmann::json::object();
  if (!request.name.empty()) details["name"] = request.name;
  if (!request.api_group.empty()) details["group"] = request.api_group;
  details["kind"] = request.resource;
  return ApiFailure(403, "Forbidden", absl::StrCat(subject, " is forbidden: ", why), details);
}

}  // namespace wavepool::testing::apiserver
