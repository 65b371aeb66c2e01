// The RBAC rule evaluation alone (tests/support/apiserver/rbac.h): rules, subjects, bindings and
// the forbidden wording, against what kube-apiserver's RBAC authorizer decides.
#include "tests/support/apiserver/rbac.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/tokens.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;

RequestAttributes Resource(std::string verb, std::string group, std::string resource,
                           std::string ns = "", std::string name = "",
                           std::string subresource = "") {
  RequestAttributes a;
  a.verb = std::move(verb);
  a.api_group = std::move(group);
  a.resource = std::move(resource);
  a.ns = std::move(ns);
  a.name = std::move(name);
  a.subresource = std::move(subresource);
  return a;
}

RequestAttributes Path(std::string verb, std::string path) {
  RequestAttributes a;
  a.resource_request = false;
  a.verb = std::move(verb);
  a.path = std::move(path);
  return a;
}

json Rule(json groups, json resources, json verbs) {
  return {{"apiGroups", std::move(groups)},
          {"resources", std::move(resources)},
          {"verbs", std::move(verbs)}};
}

json Role(const std::string& kind, const std::string& name, const std::string& ns, json rules) {
  json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", kind},
          {"metadata", meta},
          {"rules", std::move(rules)}};
}

json Binding(const std::string& kind, const std::string& name, const std::string& ns,
             const std::string& role_kind, const std::string& role, json subjects) {
  json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  return {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", kind},
      {"metadata", meta},
      {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", role_kind}, {"name", role}}},
      {"subjects", std::move(subjects)}};
}

json ServiceAccount(const std::string& ns, const std::string& name) {
  return {{"kind", "ServiceAccount"}, {"name", name}, {"namespace", ns}};
}

TEST(RbacRule, MatchesVerbGroupAndResource) {
  const json rule = Rule({""}, {"pods"}, {"get", "list"});
  EXPECT_TRUE(RuleAllows(rule, Resource("list", "", "pods", "ns")));
  EXPECT_TRUE(RuleAllows(rule, Resource("get", "", "pods", "ns", "p")));
  EXPECT_FALSE(RuleAllows(rule, Resource("create", "", "pods", "ns")));
  EXPECT_FALSE(RuleAllows(rule, Resource("watch", "", "pods", "ns")));
  EXPECT_FALSE(RuleAllows(rule, Resource("list", "apps", "pods", "ns")));
  EXPECT_FALSE(RuleAllows(rule, Resource("list", "", "configmaps", "ns")));
}

TEST(RbacRule, SubresourcesAreTheirOwnResource) {
  const json jobs = Rule({"wavepool.dev"}, {"trainingjobs"}, {"*"});
  EXPECT_TRUE(RuleAllows(jobs, Resource("update", "wavepool.dev", "trainingjobs", "ns", "j")));
  EXPECT_FALSE(
      RuleAllows(jobs, Resource("update", "wavepool.dev", "trainingjobs", "ns", "j", "status")));
  const json status = Rule({"wavepool.dev"}, {"trainingjobs/status"}, {"update"});
  EXPECT_TRUE(
      RuleAllows(status, Resource("update", "wavepool.dev", "trainingjobs", "ns", "j", "status")));
  EXPECT_FALSE(RuleAllows(status, Resource("update", "wavepool.dev", "trainingjobs", "ns", "j")));
  // "*/status": the status of any resource; "*": every resource and subresource.
  const json any_status = Rule({"*"}, {"*/status"}, {"patch"});
  EXPECT_TRUE(RuleAllows(any_status, Resource("patch", "", "pods", "ns", "p", "status")));
  EXPECT_FALSE(RuleAllows(any_status, Resource("patch", "", "pods", "ns", "p")));
  EXPECT_FALSE(RuleAllows(any_status, Resource("patch", "", "pods", "ns", "p", "log")));
  const json everything = Rule({"*"}, {"*"}, {"*"});
  EXPECT_TRUE(
      RuleAllows(everything, Resource("create", "", "serviceaccounts", "ns", "a", "token")));
}

TEST(RbacRule, ResourceNamesAllowOnlyRequestsNamingThem) {
  json rule = Rule({"coordination.k8s.io"}, {"leases"}, {"get", "update", "create", "list"});
  rule["resourceNames"] = {"wavepool-controller"};
  EXPECT_TRUE(RuleAllows(
      rule, Resource("get", "coordination.k8s.io", "leases", "ns", "wavepool-controller")));
  EXPECT_FALSE(RuleAllows(rule, Resource("get", "coordination.k8s.io", "leases", "ns", "other")));
  // A create or a list names no object, so resourceNames cannot allow it (as in kube).
  EXPECT_FALSE(RuleAllows(rule, Resource("create", "coordination.k8s.io", "leases", "ns")));
  EXPECT_FALSE(RuleAllows(rule, Resource("list", "coordination.k8s.io", "leases", "ns")));
}

TEST(RbacRule, NonResourceUrlsMatchExactlyOrByPrefix) {
  const json rule = {{"nonResourceURLs", {"/metrics", "/debug/*"}}, {"verbs", {"get"}}};
  EXPECT_TRUE(RuleAllows(rule, Path("get", "/metrics")));
  EXPECT_TRUE(RuleAllows(rule, Path("get", "/debug/pprof")));
  EXPECT_FALSE(RuleAllows(rule, Path("post", "/metrics")));
  EXPECT_FALSE(RuleAllows(rule, Path("get", "/metricsz")));
  // A resource rule never allows a path, nor a path rule a resource.
  EXPECT_FALSE(RuleAllows(Rule({"*"}, {"*"}, {"*"}), Path("get", "/metrics")));
  EXPECT_FALSE(RuleAllows(rule, Resource("get", "", "metrics")));
}

TEST(RbacSubject, ServiceAccountsUsersAndGroups) {
  const UserInfo sa = ServiceAccountUser("team", "bot");
  EXPECT_EQ(sa.name, "system:serviceaccount:team:bot");
  EXPECT_THAT(sa.groups,
              ::testing::UnorderedElementsAre(
                  "system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"));
  EXPECT_TRUE(SubjectMatches(ServiceAccount("team", "bot"), "", sa));
  EXPECT_FALSE(SubjectMatches(ServiceAccount("other", "bot"), "", sa));
  // A ServiceAccount subject without a namespace is the RoleBinding's namespace.
  EXPECT_TRUE(SubjectMatches({{"kind", "ServiceAccount"}, {"name", "bot"}}, "team", sa));
  EXPECT_FALSE(SubjectMatches({{"kind", "ServiceAccount"}, {"name", "bot"}}, "", sa));
  EXPECT_TRUE(SubjectMatches({{"kind", "Group"}, {"name", "system:serviceaccounts:team"}}, "", sa));
  EXPECT_FALSE(SubjectMatches({{"kind", "Group"}, {"name", "system:masters"}}, "", sa));
  EXPECT_TRUE(
      SubjectMatches({{"kind", "User"}, {"name", "system:serviceaccount:team:bot"}}, "", sa));
  EXPECT_FALSE(SubjectMatches({{"kind", "User"}, {"name", "bot"}}, "", sa));
}

class RbacBindings : public ::testing::Test {
 protected:
  RbacBindings() {
    objects_.cluster_roles = {
        Role("ClusterRole", "pod-reader", "", {Rule({""}, {"pods"}, {"get", "list", "watch"})}),
        Role("ClusterRole", "node-reader", "", {Rule({""}, {"nodes"}, {"get"})})};
    objects_.roles = {Role("Role", "lease-writer", "system",
                           {Rule({"coordination.k8s.io"}, {"leases"}, {"create", "update"})})};
  }

  RbacObjects objects_;
  const UserInfo user_ = ServiceAccountUser("system", "controller");
};

TEST_F(RbacBindings, NothingBoundAllowsNothing) {
  EXPECT_FALSE(RbacAllows(objects_, user_, Resource("list", "", "pods", "team")));
  EXPECT_FALSE(RbacAllows(objects_, user_, Path("get", "/metrics")));
}

TEST_F(RbacBindings, ClusterRoleBindingGrantsEverywhere) {
  objects_.cluster_role_bindings = {Binding("ClusterRoleBinding", "b", "", "ClusterRole",
                                            "pod-reader",
                                            {ServiceAccount("system", "controller")})};
  EXPECT_TRUE(RbacAllows(objects_, user_, Resource("list", "", "pods", "team")));
  EXPECT_TRUE(RbacAllows(objects_, user_, Resource("watch", "", "pods", "")));  // all namespaces
  EXPECT_FALSE(RbacAllows(objects_, user_, Resource("delete", "", "pods", "team", "p")));
  EXPECT_FALSE(RbacAllows(objects_, ServiceAccountUser("team", "controller"),
                          Resource("list", "", "pods", "team")));
}

TEST_F(RbacBindings, RoleBindingGrantsOnlyInItsNamespace) {
  objects_.role_bindings = {Binding("RoleBinding", "b", "system", "Role", "lease-writer",
                                    {ServiceAccount("system", "controller")}),
                            Binding("RoleBinding", "c", "team", "ClusterRole", "pod-reader",
                                    {ServiceAccount("system", "controller")}),
                            Binding("RoleBinding", "d", "team", "ClusterRole", "node-reader",
                                    {ServiceAccount("system", "controller")})};
  EXPECT_TRUE(
      RbacAllows(objects_, user_, Resource("create", "coordination.k8s.io", "leases", "system")));
  EXPECT_FALSE(
      RbacAllows(objects_, user_, Resource("create", "coordination.k8s.io", "leases", "team")));
  // A ClusterRole bound by a RoleBinding: in that namespace only, never across all of them.
  EXPECT_TRUE(RbacAllows(objects_, user_, Resource("list", "", "pods", "team")));
  EXPECT_FALSE(RbacAllows(objects_, user_, Resource("list", "", "pods", "other")));
  EXPECT_FALSE(RbacAllows(objects_, user_, Resource("list", "", "pods", "")));
  // Nor does it grant cluster-scoped resources.
  EXPECT_FALSE(RbacAllows(objects_, user_, Resource("get", "", "nodes", "", "n")));
}

TEST_F(RbacBindings, RoleOfAnotherNamespaceOrMissingRoleGrantsNothing) {
  objects_.role_bindings = {Binding("RoleBinding", "b", "team", "Role", "lease-writer",
                                    {ServiceAccount("system", "controller")}),
                            Binding("RoleBinding", "c", "system", "ClusterRole", "no-such-role",
                                    {ServiceAccount("system", "controller")})};
  objects_.cluster_role_bindings = {Binding("ClusterRoleBinding", "d", "", "Role", "lease-writer",
                                            {ServiceAccount("system", "controller")})};
  EXPECT_FALSE(
      RbacAllows(objects_, user_, Resource("create", "coordination.k8s.io", "leases", "team")));
  EXPECT_FALSE(
      RbacAllows(objects_, user_, Resource("create", "coordination.k8s.io", "leases", "system")));
}

TEST_F(RbacBindings, MastersMayDoEverything) {
  const UserInfo admin{"admin", {kMastersGroup, kAuthenticatedGroup}};
  EXPECT_TRUE(RbacAllows(RbacObjects{}, admin, Resource("deletecollection", "", "pods", "")));
  EXPECT_TRUE(RbacAllows(RbacObjects{}, admin, Path("post", "/wavepool-test/compact")));
}

TEST(RbacForbidden, MessagesAreKubeApiserversWording) {
  const UserInfo user = ServiceAccountUser("ns", "sa");
  absl::Status status = ForbiddenFailure(user, Resource("list", "", "pods", "ns"));
  EXPECT_EQ(HttpCodeOf(status), 403);
  json body = StatusBodyOf(status);
  EXPECT_EQ(body["message"],
            "pods is forbidden: User \"system:serviceaccount:ns:sa\" cannot list resource "
            "\"pods\" in API group \"\" in the namespace \"ns\"");
  EXPECT_EQ(body["reason"], "Forbidden");
  EXPECT_EQ(body["details"], json({{"kind", "pods"}}));

  body = StatusBodyOf(ForbiddenFailure(
      user, Resource("update", "wavepool.dev", "trainingjobs", "ns", "j", "status")));
  EXPECT_EQ(body["message"],
            "trainingjobs.wavepool.dev \"j\" is forbidden: User \"system:serviceaccount:ns:sa\" "
            "cannot update resource \"trainingjobs/status\" in API group \"wavepool.dev\" in the "
            "namespace \"ns\"");
  EXPECT_EQ(body["details"],
            json({{"name", "j"}, {"group", "wavepool.dev"}, {"kind", "trainingjobs"}}));

  body = StatusBodyOf(ForbiddenFailure(user, Resource("list", "", "nodes")));
  EXPECT_EQ(body["message"],
            "nodes is forbidden: User \"system:serviceaccount:ns:sa\" cannot list resource "
            "\"nodes\" in API group \"\" at the cluster scope");

  body = StatusBodyOf(ForbiddenFailure(user, Path("get", "/metrics")));
  EXPECT_EQ(body["message"],
            "forbidden: User \"system:serviceaccount:ns:sa\" cannot get path \"/metrics\"");
}

}  // namespace
}  // namespace wavepool::testing::apiserver
