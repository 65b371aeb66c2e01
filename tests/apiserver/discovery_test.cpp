// Discovery and OpenAPI documents, checked against the shapes kube-apiserver 1.32 serves and
// against what kubectl reads from them.
#include "tests/support/apiserver/discovery.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

ResourceInfo Builtin(std::string group, std::string kind, std::string plural, bool namespaced) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = "v1";
  r.kind = kind;
  r.plural = std::move(plural);
  for (char c : kind) r.singular.push_back(static_cast<char>(std::tolower(c)));
  r.list_kind = kind + "List";
  r.namespaced = namespaced;
  r.verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
  return r;
}

ResourceInfo TrainingJobs(const std::string& version, bool storage) {
  ResourceInfo r;
  r.group = "wavepool.dev";
  r.version = version;
  r.kind = "TrainingJob";
  r.plural = "trainingjobs";
  r.singular = "trainingjob";
  r.list_kind = "TrainingJobList";
  r.short_names = {"tj"};
  r.categories = {"wavepool"};
  r.verbs = {"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"};
  r.status_subresource = true;
  r.crd_name = "trainingjobs.wavepool.dev";
  r.crd_version = {{"name", version},
                   {"served", true},
                   {"storage", storage},
                   {"schema",
                    {{"openAPIV3Schema",
                      {{"type", "object"},
                       {"properties",
                        {{"spec",
                          {{"type", "object"},
                           {"properties",
                            {{"gpus", {{"type", "integer"}, {"minimum", 1}}},
                             {"owner", {{"type", "string"}, {"nullable", true}}}}}}}}}}}}}};
  return r;
}

std::vector<ResourceInfo> Resources() {
  ResourceInfo pods = Builtin("", "Pod", "pods", true);
  pods.short_names = {"po"};
  pods.categories = {"all"};
  pods.status_subresource = true;
  return {Builtin("", "Namespace", "namespaces", false),
          pods,
          Builtin("", "ConfigMap", "configmaps", true),
          Builtin("coordination.k8s.io", "Lease", "leases", true),
          TrainingJobs("v1alpha1", false),
          TrainingJobs("v1", true)};
}

const json* FindEntry(const json& list, const std::string& name) {
  for (const json& entry : list.at("resources")) {
    if (entry.at("name") == name) return &entry;
  }
  return nullptr;
}

TEST(Discovery, VersionIsKubernetes132SoKubectl132And133DoNotWarnAboutSkew) {
  const json info = VersionInfo();
  EXPECT_EQ(info.at("major"), "1");
  EXPECT_EQ(info.at("minor"), "32");
  EXPECT_EQ(info.at("gitVersion"), "v1.32.0");
  EXPECT_EQ(info.at("platform"), "linux/amd64");
}

TEST(Discovery, CoreApiVersionsListsV1WithoutApiVersion) {
  const json versions = CoreApiVersions();
  EXPECT_EQ(versions.at("kind"), "APIVersions");
  EXPECT_FALSE(versions.contains("apiVersion"));
  EXPECT_EQ(versions.at("versions"), json::array({"v1"}));
  EXPECT_EQ(versions.at("serverAddressByClientCIDRs").at(0).at("clientCIDR"), "0.0.0.0/0");
}

TEST(Discovery, GroupListHasEveryNamedGroupWithItsPreferredVersion) {
  const json list = ApiGroupList(Resources());
  EXPECT_EQ(list.at("kind"), "APIGroupList");
  EXPECT_EQ(list.at("apiVersion"), "v1");
  ASSERT_EQ(list.at("groups").size(), 2u);  // the core group is served from /api, not /apis
  const json& wavepool = list.at("groups").at(1);
  EXPECT_EQ(wavepool.at("name"), "wavepool.dev");
  // GA before alpha, whatever order the CRD lists them in.
  EXPECT_EQ(wavepool.at("versions"),
            json::parse(R"([{"groupVersion":"wavepool.dev/v1","version":"v1"},
                            {"groupVersion":"wavepool.dev/v1alpha1","version":"v1alpha1"}])"));
  EXPECT_EQ(wavepool.at("preferredVersion"),
            json::parse(R"({"groupVersion":"wavepool.dev/v1","version":"v1"})"));
}

TEST(Discovery, VersionsAreOrderedByKubernetesVersionPriority) {
  std::vector<ResourceInfo> resources;
  for (const char* version : {"v1alpha1", "foo", "v2beta1", "v1", "v10alpha2", "v1beta2", "v2"}) {
    ResourceInfo r = Builtin("example.com", "Thing", "things", true);
    r.version = version;
    resources.push_back(r);
  }
  const std::optional<json> group = ApiGroup(resources, "example.com");
  ASSERT_TRUE(group.has_value());
  std::vector<std::string> order;
  for (const json& v : group->at("versions")) order.push_back(v.at("version"));
  // GA by major descending, then beta, then alpha (higher major first), then the rest.
  EXPECT_THAT(order, ElementsAre("v2", "v1", "v2beta1", "v1beta2", "v10alpha2", "v1alpha1", "foo"));
  EXPECT_EQ(group->at("kind"), "APIGroup");
  EXPECT_EQ(group->at("preferredVersion").at("version"), "v2");
}

TEST(Discovery, UnknownGroupOrVersionIsNotServed) {
  EXPECT_FALSE(ApiGroup(Resources(), "apps").has_value());
  EXPECT_FALSE(ApiGroup(Resources(), "").has_value());
  EXPECT_FALSE(ApiResourceList(Resources(), "wavepool.dev", "v2").has_value());
  EXPECT_FALSE(ApiResourceList(Resources(), "", "v2").has_value());
}

TEST(Discovery, CoreResourceListCarriesNamesVerbsStatusAndStorageHash) {
  const std::optional<json> list = ApiResourceList(Resources(), "", "v1");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->at("kind"), "APIResourceList");
  EXPECT_FALSE(list->contains("apiVersion"));  // as /api/v1 answers
  EXPECT_EQ(list->at("groupVersion"), "v1");
  std::vector<std::string> names;
  for (const json& entry : list->at("resources")) names.push_back(entry.at("name"));
  EXPECT_THAT(names, ElementsAre("configmaps", "namespaces", "pods", "pods/status"));

  const json* pods = FindEntry(*list, "pods");
  EXPECT_EQ(pods->at("singularName"), "pod");
  EXPECT_EQ(pods->at("kind"), "Pod");
  EXPECT_EQ(pods->at("namespaced"), true);
  EXPECT_EQ(pods->at("shortNames"), json::array({"po"}));
  EXPECT_EQ(pods->at("categories"), json::array({"all"}));
  // base64(sha256("/v1/Pod")[0:8]), the value a real cluster serves for pods.
  EXPECT_EQ(pods->at("storageVersionHash"), "xPOwRZ+Yhw8=");

  const json* status = FindEntry(*list, "pods/status");
  EXPECT_EQ(*status, json::parse(R"({"name":"pods/status","singularName":"","namespaced":true,
                                     "kind":"Pod","verbs":["get","patch","update"]})"));
  // omitempty: no empty shortNames or categories.
  const json* configmaps = FindEntry(*list, "configmaps");
  EXPECT_FALSE(configmaps->contains("shortNames"));
  EXPECT_FALSE(configmaps->contains("categories"));
  EXPECT_EQ(FindEntry(*list, "namespaces")->at("namespaced"), false);
}

TEST(Discovery, CustomResourceListHashesTheStorageVersionForEveryServedVersion) {
  const std::optional<json> alpha = ApiResourceList(Resources(), "wavepool.dev", "v1alpha1");
  ASSERT_TRUE(alpha.has_value());
  EXPECT_EQ(alpha->at("apiVersion"), "v1");
  EXPECT_EQ(alpha->at("groupVersion"), "wavepool.dev/v1alpha1");
  const json* jobs = FindEntry(*alpha, "trainingjobs");
  ASSERT_NE(jobs, nullptr);
  EXPECT_EQ(jobs->at("shortNames"), json::array({"tj"}));
  EXPECT_EQ(jobs->at("categories"), json::array({"wavepool"}));
  // v1 is the storage version: base64(sha256("wavepool.dev/v1/TrainingJob")[0:8]).
  EXPECT_EQ(jobs->at("storageVersionHash"), "mukdeu67Rp8=");
  EXPECT_NE(FindEntry(*alpha, "trainingjobs/status"), nullptr);
}

// ---- OpenAPI -----------------------------------------------------------------------------

// Every "$ref" in `node`, so a test can check that each one resolves.
void CollectRefs(const json& node, std::set<std::string>& refs) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "$ref" && value.is_string()) refs.insert(value.get<std::string>());
      CollectRefs(value, refs);
    }
  } else if (node.is_array()) {
    for (const json& value : node) CollectRefs(value, refs);
  }
}

// kubectl's check (cli-runtime queryParamVerifierV3): the PATCH operation of the kind's path
// lists the query parameter.
bool PatchSupportsQueryParam(const json& document, const json& gvk, const std::string& param) {
  for (const auto& [path, item] : document.at("paths").items()) {
    if (!item.contains("patch") || item["patch"]["x-kubernetes-group-version-kind"] != gvk) {
      continue;
    }
    for (const json& parameter : item["patch"]["parameters"]) {
      if (parameter.at("name") == param && parameter.at("in") == "query") return true;
    }
    return false;
  }
  return false;
}

TEST(OpenApi, V3IndexPointsAtOneDocumentPerGroupVersion) {
  const json index = OpenApiV3Index(Resources());
  std::vector<std::string> keys;
  for (const auto& [key, value] : index.at("paths").items()) {
    keys.push_back(key);
    const std::string url = value.at("serverRelativeURL");
    EXPECT_EQ(url.rfind("/openapi/v3/" + key + "?hash=", 0), 0u) << url;
    EXPECT_TRUE(OpenApiV3Document(Resources(), url.substr(12)).has_value()) << url;
  }
  EXPECT_THAT(keys, ElementsAre("api/v1", "apis/coordination.k8s.io/v1", "apis/wavepool.dev/v1",
                                "apis/wavepool.dev/v1alpha1"));
}

TEST(OpenApi, EveryPatchOperationOffersServerSideFieldValidation) {
  for (const char* path : {"api/v1", "apis/coordination.k8s.io/v1", "apis/wavepool.dev/v1alpha1"}) {
    const std::optional<json> document = OpenApiV3Document(Resources(), path);
    ASSERT_TRUE(document.has_value()) << path;
    EXPECT_EQ(document->at("openapi"), "3.0.0");
    for (const ResourceInfo& r : Resources()) {
      const json gvk = {{"group", r.group}, {"kind", r.kind}, {"version", r.version}};
      const bool in_document =
          (r.group.empty() ? "api/v1" : "apis/" + r.group + "/" + r.version) == path;
      EXPECT_EQ(PatchSupportsQueryParam(*document, gvk, "fieldValidation"), in_document)
          << path << " " << gvk;
    }
  }
}

TEST(OpenApi, NamespacedResourcePathsAreTheRealServersPaths) {
  const json document = *OpenApiV3Document(Resources(), "api/v1");
  const json& paths = document.at("paths");
  EXPECT_TRUE(paths.contains("/api/v1/namespaces/{namespace}/pods"));
  EXPECT_TRUE(paths.contains("/api/v1/namespaces/{namespace}/pods/{name}"));
  EXPECT_TRUE(paths.contains("/api/v1/namespaces/{namespace}/pods/{name}/status"));
  EXPECT_TRUE(paths.contains("/api/v1/pods"));
  EXPECT_TRUE(paths.contains("/api/v1/namespaces/{name}"));
  EXPECT_FALSE(paths.contains("/api/v1/namespaces/{namespace}/configmaps/{name}/status"));
  const json& patch = paths.at("/api/v1/namespaces/{namespace}/pods/{name}").at("patch");
  EXPECT_EQ(patch.at("x-kubernetes-action"), "patch");
  EXPECT_TRUE(
      patch.at("requestBody").at("content").contains("application/strategic-merge-patch+json"));
}

TEST(OpenApi, CustomResourceSchemaIsPublishedUnderItsReversedGroupName) {
  const json document = *OpenApiV3Document(Resources(), "/apis/wavepool.dev/v1alpha1?hash=X");
  const json& schemas = document.at("components").at("schemas");
  ASSERT_TRUE(schemas.contains("dev.wavepool.v1alpha1.TrainingJob"));
  const json& job = schemas.at("dev.wavepool.v1alpha1.TrainingJob");
  EXPECT_EQ(job.at("x-kubernetes-group-version-kind"),
            json::parse(R"([{"group":"wavepool.dev","kind":"TrainingJob","version":"v1alpha1"}])"));
  EXPECT_EQ(job.at("properties").at("spec").at("properties").at("gpus").at("minimum"), 1);
  EXPECT_EQ(job.at("properties").at("metadata").at("allOf").at(0).at("$ref"),
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  EXPECT_TRUE(schemas.contains("dev.wavepool.v1alpha1.TrainingJobList"));
  // Custom resources take JSON merge patches, not strategic ones.
  const json& patch =
      document.at("paths")
          .at("/apis/wavepool.dev/v1alpha1/namespaces/{namespace}/trainingjobs/{name}")
          .at("patch");
  EXPECT_FALSE(
      patch.at("requestBody").at("content").contains("application/strategic-merge-patch+json"));
  EXPECT_TRUE(patch.at("requestBody").at("content").contains("application/merge-patch+json"));
}

TEST(OpenApi, BuiltinKindsCarryNoKindExtensionSoKubectlUsesItsCompiledInPatchMetadata) {
  const json document = *OpenApiV3Document(Resources(), "api/v1");
  const json& pod = document.at("components").at("schemas").at("io.k8s.api.core.v1.Pod");
  EXPECT_FALSE(pod.contains("x-kubernetes-group-version-kind"));
  EXPECT_EQ(pod.at("x-kubernetes-preserve-unknown-fields"), true);
  // Leases live in their own group version's document.
  EXPECT_FALSE(
      document.at("components").at("schemas").contains("io.k8s.api.coordination.v1.Lease"));
}

TEST(OpenApi, EveryReferenceResolvesInBothVersions) {
  for (const char* path : {"api/v1", "apis/coordination.k8s.io/v1", "apis/wavepool.dev/v1"}) {
    const json document = *OpenApiV3Document(Resources(), path);
    std::set<std::string> refs;
    CollectRefs(document, refs);
    EXPECT_FALSE(refs.empty());
    for (const std::string& ref : refs) {
      const std::string prefix = "#/components/schemas/";
      ASSERT_EQ(ref.rfind(prefix, 0), 0u) << ref;
      EXPECT_TRUE(document.at("components").at("schemas").contains(ref.substr(prefix.size())))
          << path << ": " << ref;
    }
  }
  const json v2 = OpenApiV2Document(Resources());
  EXPECT_EQ(v2.at("swagger"), "2.0");
  std::set<std::string> refs;
  CollectRefs(v2, refs);
  for (const std::string& ref : refs) {
    ASSERT_EQ(ref.rfind("#/definitions/", 0), 0u) << ref;
    EXPECT_TRUE(v2.at("definitions").contains(ref.substr(14))) << ref;
  }
}

TEST(OpenApi, V2DocumentDropsWhatSwagger2CannotSay) {
  const json v2 = OpenApiV2Document(Resources());
  const json& owner = v2.at("definitions")
                          .at("dev.wavepool.v1alpha1.TrainingJob")
                          .at("properties")
                          .at("spec")
                          .at("properties")
                          .at("owner");
  EXPECT_FALSE(owner.contains("nullable"));
  const json& patch = v2.at("paths")
                          .at("/apis/wavepool.dev/v1/namespaces/{namespace}/trainingjobs/{name}")
                          .at("patch");
  bool field_validation = false;
  for (const json& p : patch.at("parameters")) {
    field_validation |= p.at("name") == "fieldValidation" && p.at("type") == "string";
  }
  EXPECT_TRUE(field_validation);
  EXPECT_THAT(patch.at("consumes"), ::testing::Contains("application/merge-patch+json"));
}

TEST(OpenApi, UnknownGroupVersionHasNoDocument) {
  EXPECT_FALSE(OpenApiV3Document(Resources(), "apis/apps/v1").has_value());
  EXPECT_FALSE(OpenApiV3Document(Resources(), "api/v2").has_value());
  EXPECT_FALSE(OpenApiV3Document(Resources(), "").has_value());
}

}  // namespace
}  // namespace wavepool::testing::apiserver
