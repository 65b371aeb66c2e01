// The test API server through HTTP, as a client sees it: status codes and Status bodies, patch
// types, dry run, paging, Table answers, discovery, control endpoints and Restart.
#include <stdlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/http_test_client.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

nlohmann::json ConfigMap(const std::string& name, const std::string& value = "1") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"app", "web"}}}}},
          {"data", {{"key", value}}}};
}

std::string ConfigMapPath(const std::string& name) { return std::string(kConfigMaps) + "/" + name; }

class HttpApi : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = TestApiServer::Start({});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = std::make_unique<HttpTestClient>(server_->url());
  }

  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<HttpTestClient> client_;
};

TEST_F(HttpApi, CreatesReadsUpdatesAndDeletes) {
  const ClientResponse created = client_->Post(kConfigMaps, ConfigMap("settings"));
  ASSERT_EQ(created.status, 201) << created.body;
  const nlohmann::json object = created.Json();
  EXPECT_EQ(object["metadata"]["namespace"], "default");
  EXPECT_FALSE(object["metadata"].value("uid", "").empty());
  EXPECT_EQ(created.Header("content-type"), "application/json");

  const ClientResponse got = client_->Get(ConfigMapPath("settings"));
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.Json()["data"]["key"], "1");

  nlohmann::json changed = object;
  changed["data"]["key"] = "2";
  const ClientResponse updated = client_->Put(ConfigMapPath("settings"), changed);
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(updated.Json()["data"]["key"], "2");

  const ClientResponse deleted = client_->Delete(ConfigMapPath("settings"));
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  // ConfigMaps answer a delete with a Success Status (pods would answer with the pod).
  EXPECT_EQ(deleted.Json()["kind"], "Status");
  EXPECT_EQ(deleted.Json()["status"], "Success");
  EXPECT_EQ(deleted.Json()["details"]["name"], "settings");

  const ClientResponse gone = client_->Get(ConfigMapPath("settings"));
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.Json()["kind"], "Status");
  EXPECT_EQ(gone.Json()["reason"], "NotFound");
  EXPECT_EQ(gone.Json()["message"], "configmaps \"settings\" not found");
}

TEST_F(HttpApi, AnswersConflictsAndDuplicatesWith409) {
  const ClientResponse created = client_->Post(kConfigMaps, ConfigMap("c"));
  ASSERT_EQ(created.status, 201);
  const ClientResponse again = client_->Post(kConfigMaps, ConfigMap("c"));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.Json()["reason"], "AlreadyExists");

  nlohmann::json first = created.Json();
  first["data"]["key"] = "2";
  ASSERT_EQ(client_->Put(ConfigMapPath("c"), first).status, 200);
  first["data"]["key"] = "3";  // still carries the old resourceVersion
  const ClientResponse stale = client_->Put(ConfigMapPath("c"), first);
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.Json()["reason"], "Conflict");
  EXPECT_THAT(stale.Json()["message"].get<std::string>(),
              HasSubstr("Operation cannot be fulfilled on configmaps \"c\""));
}

TEST_F(HttpApi, AppliesEachPatchType) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("p")).status, 201);
  const ClientResponse merged = client_->Patch(ConfigMapPath("p"), "application/merge-patch+json",
                                               {{"data", {{"merged", "yes"}}}});
  ASSERT_EQ(merged.status, 200) << merged.body;
  EXPECT_EQ(merged.Json()["data"]["merged"], "yes");
  EXPECT_EQ(merged.Json()["data"]["key"], "1");

  const ClientResponse json_patched = client_->Patch(
      ConfigMapPath("p"), "application/json-patch+json",
      nlohmann::json::array({{{"op", "replace"}, {"path", "/data/key"}, {"value", "9"}}}));
  ASSERT_EQ(json_patched.status, 200) << json_patched.body;
  EXPECT_EQ(json_patched.Json()["data"]["key"], "9");

  const ClientResponse strategic =
      client_->Patch(ConfigMapPath("p"), "application/strategic-merge-patch+json",
                     {{"metadata", {{"labels", {{"tier", "gold"}}}}}});
  ASSERT_EQ(strategic.status, 200) << strategic.body;
  EXPECT_EQ(strategic.Json()["metadata"]["labels"]["tier"], "gold");
  EXPECT_EQ(strategic.Json()["metadata"]["labels"]["app"], "web");
}

TEST_F(HttpApi, RejectsPatchesThatCannotApply) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("p")).status, 201);
  const ClientResponse failed_test = client_->Patch(
      ConfigMapPath("p"), "application/json-patch+json",
      nlohmann::json::array({{{"op", "test"}, {"path", "/data/key"}, {"value", "other"}}}));
  EXPECT_EQ(failed_test.status, 422);
  const ClientResponse not_a_list =
      client_->Patch(ConfigMapPath("p"), "application/json-patch+json", {{"op", "replace"}});
  EXPECT_EQ(not_a_list.status, 400);
  const ClientResponse apply =
      client_->Request("PATCH", ConfigMapPath("p"), "data: {}", "application/apply-patch+yaml");
  EXPECT_EQ(apply.status, 415);
  EXPECT_EQ(apply.Json()["reason"], "UnsupportedMediaType");
  const ClientResponse missing =
      client_->Patch(ConfigMapPath("absent"), "application/merge-patch+json", {{"data", {}}});
  EXPECT_EQ(missing.status, 404);
}

TEST_F(HttpApi, DryRunAnswersButStoresNothing) {
  const ClientResponse dry =
      client_->Post(std::string(kConfigMaps) + "?dryRun=All", ConfigMap("dry"));
  ASSERT_EQ(dry.status, 201) << dry.body;
  EXPECT_EQ(dry.Json()["metadata"]["name"], "dry");
  EXPECT_EQ(client_->Get(ConfigMapPath("dry")).status, 404);
  EXPECT_EQ(client_->Post(std::string(kConfigMaps) + "?dryRun=Yes", ConfigMap("dry")).status, 400);
}

TEST_F(HttpApi, ListsInPagesWithContinueTokens) {
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap(name)).status, 201);
  }
  const ClientResponse first = client_->Get(std::string(kConfigMaps) + "?limit=2");
  ASSERT_EQ(first.status, 200) << first.body;
  const nlohmann::json page = first.Json();
  EXPECT_EQ(page["kind"], "ConfigMapList");
  EXPECT_EQ(page["apiVersion"], "v1");
  EXPECT_THAT(page["items"], SizeIs(2));
  EXPECT_EQ(page["metadata"]["remainingItemCount"], 1);
  const std::string token = page["metadata"].value("continue", "");
  ASSERT_FALSE(token.empty());
  const ClientResponse second =
      client_->Get(std::string(kConfigMaps) + "?limit=2&continue=" + token);
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_THAT(second.Json()["items"], SizeIs(1));
  EXPECT_FALSE(second.Json()["metadata"].contains("continue"));

  const ClientResponse selected =
      client_->Get(std::string(kConfigMaps) + "?labelSelector=app%3Dother");
  EXPECT_THAT(selected.Json()["items"], SizeIs(0));
}

TEST_F(HttpApi, DeletesCollectionsBySelector) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("a")).status, 201);
  nlohmann::json other = ConfigMap("b");
  other["metadata"]["labels"]["app"] = "db";
  ASSERT_EQ(client_->Post(kConfigMaps, other).status, 201);
  const ClientResponse deleted =
      client_->Delete(std::string(kConfigMaps) + "?labelSelector=app%3Dweb");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.Json()["kind"], "ConfigMapList");
  EXPECT_THAT(deleted.Json()["items"], SizeIs(1));
  EXPECT_EQ(client_->Get(ConfigMapPath("a")).status, 404);
  EXPECT_EQ(client_->Get(ConfigMapPath("b")).status, 200);
}

TEST_F(HttpApi, AnswersTablesWhenAsked) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("t")).status, 201);
  const std::vector<std::pair<std::string, std::string>> accept = {
      {"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}};
  const ClientResponse list =
      client_->Request("GET", std::string(kConfigMaps) + "?includeObject=Object", "", "", accept);
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.Json()["kind"], "Table");
  EXPECT_THAT(list.Json()["rows"], SizeIs(1));
  const ClientResponse one = client_->Request("GET", ConfigMapPath("t"), "", "", accept);
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.Json()["kind"], "Table");
}

TEST_F(HttpApi, ServesDiscoveryAndHealth) {
  EXPECT_EQ(client_->Get("/version").status, 200);
  EXPECT_EQ(client_->Get("/api").Json()["kind"], "APIVersions");
  EXPECT_EQ(client_->Get("/apis").Json()["kind"], "APIGroupList");
  const ClientResponse core = client_->Get("/api/v1");
  ASSERT_EQ(core.status, 200);
  EXPECT_EQ(core.Json()["kind"], "APIResourceList");
  EXPECT_EQ(client_->Get("/apis/coordination.k8s.io/v1").status, 200);
  EXPECT_EQ(client_->Get("/apis/no.such.group").status, 404);
  EXPECT_EQ(client_->Get("/openapi/v3").status, 200);
  const ClientResponse health = client_->Get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  EXPECT_EQ(client_->Get("/readyz").status, 200);
  EXPECT_EQ(client_->Get("/livez").status, 200);
}

TEST_F(HttpApi, RejectsBadRequestsLikeTheRealServer) {
  const ClientResponse unknown = client_->Get("/no/such/path");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.Json()["message"], "the server could not find the requested resource");
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/widgets").status, 404);
  // A namespaced resource's object needs its namespace; a cluster-scoped one has none.
  EXPECT_EQ(client_->Get("/api/v1/configmaps/x").status, 404);
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/namespaces").status, 404);

  const ClientResponse wrong_method = client_->Post(ConfigMapPath("x"), ConfigMap("x"));
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.Json()["reason"], "MethodNotAllowed");
  EXPECT_EQ(client_->Post("/api/v1/configmaps", ConfigMap("x")).status, 405);
  EXPECT_EQ(client_->Request("PUT", "/version", "{}").status, 405);

  const ClientResponse bad_json = client_->Request("POST", kConfigMaps, "{\"kind\":");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(bad_json.Json()["reason"], "BadRequest");
  EXPECT_THAT(bad_json.Json()["message"].get<std::string>(),
              HasSubstr("couldn't get version/kind; json parse error"));

  nlohmann::json elsewhere = ConfigMap("x");
  elsewhere["metadata"]["namespace"] = "kube-system";
  const ClientResponse mismatch = client_->Post(kConfigMaps, elsewhere);
  EXPECT_EQ(mismatch.status, 400);
  EXPECT_THAT(mismatch.Json()["message"].get<std::string>(), HasSubstr("namespace"));
  EXPECT_EQ(client_->Get(std::string(kConfigMaps) + "?limit=lots").status, 400);
  EXPECT_EQ(client_->Put(ConfigMapPath("y"), ConfigMap("z")).status, 400);  // name mismatch
}

TEST_F(HttpApi, AcceptsYamlBodies) {
  const ClientResponse created = client_->Request(
      "POST", kConfigMaps,
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  key: \"7\"\n",
      "application/yaml");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Json()["data"]["key"], "7");
}

nlohmann::json WidgetDefinition() {
  const nlohmann::json schema = {
      {"type", "object"},
      {"properties",
       {{"spec", {{"type", "object"}, {"properties", {{"size", {{"type", "integer"}}}}}}},
        {"status", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", "widgets.example.com"}}},
          {"spec",
           {{"group", "example.com"},
            {"scope", "Namespaced"},
            {"names",
             {{"plural", "widgets"},
              {"singular", "widget"},
              {"kind", "Widget"},
              {"listKind", "WidgetList"}}},
            {"versions", nlohmann::json::array(
                             {{{"name", "v1"},
                               {"served", true},
                               {"storage", true},
                               {"schema", {{"openAPIV3Schema", schema}}},
                               {"subresources", {{"status", nlohmann::json::object()}}}}})}}}};
}

TEST_F(HttpApi, ServesCustomResourcesWithWarningsAndNoStrategicMerge) {
  const ClientResponse crd =
      client_->Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WidgetDefinition());
  ASSERT_EQ(crd.status, 201) << crd.body;
  EXPECT_EQ(client_->Get("/apis/example.com/v1").status, 200);

  const std::string widgets = "/apis/example.com/v1/namespaces/default/widgets";
  const nlohmann::json widget = {{"apiVersion", "example.com/v1"},
                                 {"kind", "Widget"},
                                 {"metadata", {{"name", "w"}}},
                                 {"spec", {{"size", 1}, {"extra", "x"}}}};
  const ClientResponse created = client_->Post(widgets, widget);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_THAT(created.AllHeaders("warning"),
              ::testing::ElementsAre(R"(299 - "unknown field \"spec.extra\"")"));
  EXPECT_FALSE(created.Json()["spec"].contains("extra"));

  const ClientResponse strict =
      client_->Post(widgets + "?fieldValidation=Strict",
                    {{"metadata", {{"name", "s"}}}, {"spec", {{"extra", "x"}}}});
  EXPECT_EQ(strict.status, 400) << strict.body;

  const ClientResponse strategic = client_->Patch(
      widgets + "/w", "application/strategic-merge-patch+json", {{"spec", {{"size", 2}}}});
  EXPECT_EQ(strategic.status, 415);
  const ClientResponse merged =
      client_->Patch(widgets + "/w", "application/merge-patch+json", {{"spec", {{"size", 2}}}});
  ASSERT_EQ(merged.status, 200) << merged.body;
  EXPECT_EQ(merged.Json()["spec"]["size"], 2);

  const ClientResponse status = client_->Patch(
      widgets + "/w/status", "application/merge-patch+json", {{"status", {{"phase", "Ready"}}}});
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(status.Json()["status"]["phase"], "Ready");
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/configmaps/x/status").status, 404);
}

TEST_F(HttpApi, WritesAKubeconfigForItsUrl) {
  const std::string kubeconfig = server_->Kubeconfig();
  EXPECT_THAT(kubeconfig, HasSubstr("server: " + server_->url()));
  EXPECT_THAT(kubeconfig, HasSubstr("current-context: wavepool-test"));
  EXPECT_THAT(kubeconfig, HasSubstr("namespace: default"));
}

TEST(HttpRestart, KeepsObjectsAndTheCounterWithADataDir) {
  TestApiServer::Options options;
  ASSERT_OK_AND_ASSIGN(const TempDir data_dir, TempDir::Create("http-restart"));
  options.store.data_dir = data_dir.path();
  ASSERT_OK_AND_ASSIGN(auto server, TestApiServer::Start(options));
  const std::string url = server->url();
  HttpTestClient client(url);
  const ClientResponse created = client.Post(kConfigMaps, ConfigMap("kept"));
  ASSERT_EQ(created.status, 201) << created.body;
  const std::int64_t before =
      std::stoll(created.Json()["metadata"]["resourceVersion"].get<std::string>());

  ASSERT_OK(server->Restart());
  EXPECT_EQ(server->url(), url);  // the same port
  const ClientResponse kept = client.Get(ConfigMapPath("kept"));
  ASSERT_EQ(kept.status, 200) << kept.body;
  EXPECT_EQ(kept.Json()["metadata"]["uid"], created.Json()["metadata"]["uid"]);
  const ClientResponse next = client.Post(kConfigMaps, ConfigMap("next"));
  ASSERT_EQ(next.status, 201);
  EXPECT_GT(std::stoll(next.Json()["metadata"]["resourceVersion"].get<std::string>()), before);
}

TEST(HttpRestart, StartsEmptyWithoutADataDir) {
  ASSERT_OK_AND_ASSIGN(auto server, TestApiServer::Start({}));
  HttpTestClient client(server->url());
  ASSERT_EQ(client.Post(kConfigMaps, ConfigMap("lost")).status, 201);
  ASSERT_OK(server->Restart());
  EXPECT_EQ(client.Get(ConfigMapPath("lost")).status, 404);
}

}  // namespace
}  // namespace wavepool::testing::apiserver
