#include "tests/support/apiserver/builtin_resources.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace wavepool::testing::apiserver {
namespace {

const std::vector<std::string>& AllVerbs() {
  static const std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get",
                                                 "list",   "patch",  "update",           "watch"};
  return verbs;
}

ResourceInfo Make(std::string group, std::string version, std::string kind, std::string plural,
                  bool namespaced, std::vector<std::string> short_names, bool all_category,
                  bool status) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.singular = kind;
  for (char& c : r.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.list_kind = absl::StrCat(kind, "List");
  r.kind = std::move(kind);
  r.plural = std::move(plural);
  r.namespaced = namespaced;
  r.short_names = std::move(short_names);
  if (all_category) r.categories = {"all"};
  r.verbs = AllVerbs();
  r.status_subresource = status;
  return r;
}

std::vector<ResourceInfo> MakeBuiltins() {
  constexpr bool kNamespaced = true, kCluster = false, kAll = true, kNotAll = false;
  constexpr bool kStatus = true, kNoStatus = false;
  const std::string rbac = "rbac.authorization.k8s.io";
  std::vector<ResourceInfo> r = {
      Make("", "v1", "ConfigMap", "configmaps", kNamespaced, {"cm"}, kNotAll, kNoStatus),
      Make("", "v1", "Endpoints", "endpoints", kNamespaced, {"ep"}, kNotAll, kNoStatus),
      Make("", "v1", "Event", "events", kNamespaced, {"ev"}, kNotAll, kNoStatus),
      Make("", "v1", "Namespace", "namespaces", kCluster, {"ns"}, kNotAll, kStatus),
      Make("", "v1", "Node", "nodes", kCluster, {"no"}, kNotAll, kStatus),
      Make("", "v1", "Pod", "pods", kNamespaced, {"po"}, kAll, kStatus),
      Make("", "v1", "Secret", "secrets", kNamespaced, {}, kNotAll, kNoStatus),
      Make("", "v1", "ServiceAccount", "serviceaccounts", kNamespaced, {"sa"}, kNotAll, kNoStatus),
      Make("", "v1", "Service", "services", kNamespaced, {"svc"}, kAll, kStatus),
      Make("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
           kCluster, {"crd", "crds"}, kNotAll, kStatus),
      Make("apps", "v1", "DaemonSet", "daemonsets", kNamespaced, {"ds"}, kAll, kStatus),
      Make("apps", "v1", "Deployment", "deployments", kNamespaced, {"deploy"}, kAll, kStatus),
      Make("apps", "v1", "ReplicaSet", "replicasets", kNamespaced, {"rs"}, kAll, kStatus),
      Make("apps", "v1", "StatefulSet", "statefulsets", kNamespaced, {"sts"}, kAll, kStatus),
      Make("batch", "v1", "Job", "jobs", kNamespaced, {}, kAll, kStatus),
      Make("coordination.k8s.io", "v1", "Lease", "leases", kNamespaced, {}, kNotAll, kNoStatus),
      Make("events.k8s.io", "v1", "Event", "events", kNamespaced, {"ev"}, kNotAll, kNoStatus),
      Make(rbac, "v1", "ClusterRoleBinding", "clusterrolebindings", kCluster, {}, kNotAll,
           kNoStatus),
      Make(rbac, "v1", "ClusterRole", "clusterroles", kCluster, {}, kNotAll, kNoStatus),
      Make(rbac, "v1", "RoleBinding", "rolebindings", kNamespaced, {}, kNotAll, kNoStatus),
      Make(rbac, "v1", "Role", "roles", kNamespaced, {}, kNotAll, kNoStatus),
  };
  for (ResourceInfo& info : r) {
    // Namespaces cannot be deleted as a collection; CRDs are in the api-extensions category.
    if (info.plural == "namespaces") {
      info.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    }
    if (info.plural == "customresourcedefinitions") info.categories = {"api-extensions"};
  }
  return r;
}

}  // namespace

const std::vector<ResourceInfo>& BuiltinResources() {
  static const std::vector<ResourceInfo> resources = MakeBuiltins();
  return resources;
}

bool TracksGeneration(const ResourceInfo& resource) {
  if (!resource.crd_name.empty()) return true;
  const std::string gr = resource.GroupResource();
  return gr == "pods" || gr == "deployments.apps" || gr == "daemonsets.apps" ||
         gr == "statefulsets.apps" || gr == "replicasets.apps" || gr == "jobs.batch" ||
         gr == kCrdResource;
}

std::string ResourceInfo::GroupVersion() const {
  return group.empty() ? version : absl::StrCat(group, "/", version);
}

std::string ResourceInfo::GroupResource() const {
  return group.empty() ? plural : absl::StrCat(plural, ".", group);
}

}  // namespace wavepool::testing::apiserver
