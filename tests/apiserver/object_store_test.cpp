// The object store's create, get and update semantics, as a client of kube-apiserver sees them.
#include "tests/support/apiserver/object_store.h"

#include <regex>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/store_test_util.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenMemoryStore();
    ASSERT_NE(store_, nullptr);
    pods_ = Resource(*store_, "", "v1", "pods");
    configmaps_ = Resource(*store_, "", "v1", "configmaps");
    namespaces_ = Resource(*store_, "", "v1", "namespaces");
    deployments_ = Resource(*store_, "apps", "v1", "deployments");
  }

  nlohmann::json CreateOk(const ResourceInfo& r, const std::string& ns, nlohmann::json object) {
    absl::StatusOr<WriteResult> made = store_->Create(r, ns, std::move(object), {});
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? made->object : nlohmann::json();
  }

  std::unique_ptr<ObjectStore> store_;
  ResourceInfo pods_, configmaps_, namespaces_, deployments_;
};

TEST_F(ObjectStoreTest, InitialNamespacesExist) {
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    ASSERT_OK_AND_ASSIGN(nlohmann::json ns, store_->Get(namespaces_, "", name));
    EXPECT_EQ(ns["status"]["phase"], "Active");
    EXPECT_EQ(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], name);
  }
}

TEST_F(ObjectStoreTest, CreateSetsServerFields) {
  const nlohmann::json cm = CreateOk(configmaps_, "default", Named("c", {{"data", {{"k", "v"}}}}));
  EXPECT_EQ(cm["apiVersion"], "v1");
  EXPECT_EQ(cm["kind"], "ConfigMap");
  EXPECT_EQ(cm["metadata"]["namespace"], "default");
  EXPECT_TRUE(std::regex_match(cm["metadata"]["uid"].get<std::string>(),
                               std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                          "[0-9a-f]{12}")))
      << cm["metadata"]["uid"];
  EXPECT_TRUE(std::regex_match(cm["metadata"]["creationTimestamp"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_EQ(RvNumber(cm), store_->CurrentResourceVersion());
  EXPECT_FALSE(cm["metadata"].contains("generation"));  // ConfigMaps keep no generation
  ASSERT_OK_AND_ASSIGN(nlohmann::json got, store_->Get(configmaps_, "default", "c"));
  EXPECT_EQ(got, cm);
}

TEST_F(ObjectStoreTest, EveryWriteTakesTheNextGlobalResourceVersion) {
  const std::int64_t before = store_->CurrentResourceVersion();
  const nlohmann::json a = CreateOk(configmaps_, "default", Named("a"));
  const nlohmann::json b = CreateOk(pods_, "default", Named("b"));
  EXPECT_EQ(RvNumber(a), before + 1);
  EXPECT_EQ(RvNumber(b), before + 2);
}

TEST_F(ObjectStoreTest, GenerateNameAddsFiveCharacters) {
  nlohmann::json object;
  object["metadata"]["generateName"] = "job-";
  const nlohmann::json made = CreateOk(configmaps_, "default", object);
  EXPECT_TRUE(std::regex_match(made["metadata"]["name"].get<std::string>(),
                               std::regex("job-[bcdfghjklmnpqrstvwxz2456789]{5}")));
}

TEST_F(ObjectStoreTest, CreateTwiceIsAlreadyExists) {
  CreateOk(configmaps_, "default", Named("c"));
  absl::StatusOr<WriteResult> again = store_->Create(configmaps_, "default", Named("c"), {});
  EXPECT_THAT(again, StatusIs(absl::StatusCode::kAlreadyExists, "configmaps \"c\" already exists"));
  EXPECT_EQ(HttpCodeOf(again.status()), 409);
}

TEST_F(ObjectStoreTest, InvalidNameIs422WithTheRealWording) {
  absl::StatusOr<WriteResult> bad = store_->Create(configmaps_, "default", Named("Bad_Name"), {});
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kInvalidArgument,
                            StartsWith("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid "
                                       "value: \"Bad_Name\": a lowercase RFC 1123 subdomain")));
  EXPECT_EQ(HttpCodeOf(bad.status()), 422);
  EXPECT_EQ(StatusBodyOf(bad.status())["details"]["causes"][0]["field"], "metadata.name");
  absl::StatusOr<WriteResult> dotted_ns = store_->Create(namespaces_, "", Named("a.b"), {});
  EXPECT_THAT(dotted_ns, StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("a lowercase RFC 1123 label")));
  absl::StatusOr<WriteResult> unnamed =
      store_->Create(configmaps_, "default", nlohmann::json::object(), {});
  EXPECT_THAT(unnamed, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("metadata.name: Required value: name or generateName is "
                                          "required")));
  nlohmann::json bad_label = Named("c");
  bad_label["metadata"]["labels"]["app"] = "has space";
  EXPECT_THAT(store_->Create(configmaps_, "default", bad_label, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.labels")));
}

TEST_F(ObjectStoreTest, KindOrApiVersionMismatchIs400) {
  nlohmann::json wrong_kind = Named("c", {{"kind", "Secret"}});
  absl::StatusOr<WriteResult> made = store_->Create(configmaps_, "default", wrong_kind, {});
  EXPECT_THAT(made, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kind")));
  EXPECT_EQ(HttpCodeOf(made.status()), 400);
  nlohmann::json wrong_version = Named("c", {{"apiVersion", "apps/v1"}});
  made = store_->Create(configmaps_, "default", wrong_version, {});
  EXPECT_THAT(made, StatusIs(absl::StatusCode::kInvalidArgument,
                             "the API version in the data (apps/v1) does not match the expected "
                             "API version (v1)"));
  EXPECT_THAT(store_->Create(configmaps_, "default", nlohmann::json::array(), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON object")));
  nlohmann::json other_ns = Named("c");
  other_ns["metadata"]["namespace"] = "kube-system";
  EXPECT_THAT(store_->Create(configmaps_, "default", other_ns, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not match the "
                                                                     "namespace")));
}

TEST_F(ObjectStoreTest, ResourceVersionOnCreateIsRefused) {
  nlohmann::json object = Named("c");
  object["metadata"]["resourceVersion"] = "5";
  absl::StatusOr<WriteResult> made = store_->Create(configmaps_, "default", object, {});
  EXPECT_EQ(HttpCodeOf(made.status()), 500);
  EXPECT_THAT(made.status().message(), HasSubstr("resourceVersion should not be set"));
}

TEST_F(ObjectStoreTest, NamespaceMustExist) {
  absl::StatusOr<WriteResult> made = store_->Create(configmaps_, "nowhere", Named("c"), {});
  EXPECT_THAT(made, StatusIs(absl::StatusCode::kNotFound, "namespaces \"nowhere\" not found"));
}

TEST_F(ObjectStoreTest, TerminatingNamespaceForbidsNewContent) {
  CreateOk(namespaces_, "", Named("team"));
  nlohmann::json held = Named("held");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  CreateOk(configmaps_, "team", held);
  ASSERT_OK(store_->Delete(namespaces_, "", "team", {}).status());
  absl::StatusOr<WriteResult> made = store_->Create(configmaps_, "team", Named("new"), {});
  EXPECT_THAT(made, StatusIs(absl::StatusCode::kPermissionDenied,
                             "configmaps \"new\" is forbidden: unable to create new content in "
                             "namespace team because it is being terminated"));
  EXPECT_EQ(HttpCodeOf(made.status()), 403);
  EXPECT_EQ(StatusBodyOf(made.status())["reason"], "Forbidden");
}

TEST_F(ObjectStoreTest, ClusterScopedObjectsHaveNoNamespace) {
  nlohmann::json node = Named("n1");
  node["metadata"]["namespace"] = "default";
  const nlohmann::json made = CreateOk(Resource(*store_, "", "v1", "nodes"), "default", node);
  EXPECT_FALSE(made["metadata"].contains("namespace"));
}

TEST_F(ObjectStoreTest, NodeKeepsTheStatusItIsRegisteredWith) {
  // A kubelet registers its Node together with its first status.
  nlohmann::json node = Named("n1");
  node["status"] = {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
  const nlohmann::json made = CreateOk(Resource(*store_, "", "v1", "nodes"), "", node);
  EXPECT_EQ(made["status"]["conditions"][0]["type"], "Ready");
}

TEST_F(ObjectStoreTest, DryRunValidatesAndDefaultsButStoresNothing) {
  const std::int64_t before = store_->CurrentResourceVersion();
  WriteOptions dry;
  dry.dry_run = true;
  ASSERT_OK_AND_ASSIGN(WriteResult result,
                       store_->Create(pods_, "default", Named("p", {{"spec", {}}}), dry));
  EXPECT_EQ(result.object["spec"]["restartPolicy"], "Always");
  EXPECT_EQ(result.object["status"]["phase"], "Pending");
  EXPECT_EQ(store_->CurrentResourceVersion(), before);
  EXPECT_THAT(store_->Get(pods_, "default", "p"),
              StatusIs(absl::StatusCode::kNotFound, "pods \"p\" not found"));
  EXPECT_THAT(store_->Create(pods_, "default", Named("BAD"), dry),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.name")));
}

TEST_F(ObjectStoreTest, StaleResourceVersionOnUpdateIsConflict) {
  nlohmann::json cm = CreateOk(configmaps_, "default", Named("c"));
  nlohmann::json stale = cm;
  cm["data"] = {{"k", "1"}};
  ASSERT_OK(store_->Update(configmaps_, "default", "c", cm, "", {}).status());
  stale["data"] = {{"k", "2"}};
  absl::StatusOr<WriteResult> lost = store_->Update(configmaps_, "default", "c", stale, "", {});
  EXPECT_THAT(lost, StatusIs(absl::StatusCode::kAborted,
                             "Operation cannot be fulfilled on configmaps \"c\": the object has "
                             "been modified; please apply your changes to the latest version and "
                             "try again"));
  EXPECT_EQ(StatusBodyOf(lost.status())["reason"], "Conflict");
}

TEST_F(ObjectStoreTest, UpdateWithoutResourceVersionIsUnconditionalForBuiltins) {
  CreateOk(configmaps_, "default", Named("c"));
  ASSERT_OK_AND_ASSIGN(
      WriteResult updated,
      store_->Update(configmaps_, "default", "c", Named("c", {{"data", {{"k", "v"}}}}), "", {}));
  EXPECT_EQ(updated.object["data"]["k"], "v");
}

TEST_F(ObjectStoreTest, UpdateKeepsServerOwnedMetadata) {
  const nlohmann::json cm = CreateOk(configmaps_, "default", Named("c"));
  nlohmann::json changed = cm;
  changed["metadata"]["creationTimestamp"] = "1999-01-01T00:00:00Z";
  changed["data"] = {{"a", "b"}};
  ASSERT_OK_AND_ASSIGN(WriteResult updated,
                       store_->Update(configmaps_, "default", "c", changed, "", {}));
  EXPECT_EQ(updated.object["metadata"]["creationTimestamp"], cm["metadata"]["creationTimestamp"]);
  EXPECT_EQ(updated.object["metadata"]["uid"], cm["metadata"]["uid"]);
  EXPECT_GT(RvNumber(updated.object), RvNumber(cm));
}

TEST_F(ObjectStoreTest, UpdateErrors) {
  const nlohmann::json cm = CreateOk(configmaps_, "default", Named("c"));
  EXPECT_THAT(store_->Update(configmaps_, "default", "missing", Named("missing"), "", {}),
              StatusIs(absl::StatusCode::kNotFound, "configmaps \"missing\" not found"));
  EXPECT_THAT(store_->Update(configmaps_, "default", "c", Named("d"), "", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the name of the object (d) does not match the name on the URL (c)"));
  nlohmann::json other_uid = cm;
  other_uid["metadata"]["uid"] = "00000000-0000-4000-8000-000000000000";
  EXPECT_THAT(store_->Update(configmaps_, "default", "c", other_uid, "", {}),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("Precondition failed: UID")));
  EXPECT_THAT(store_->Update(configmaps_, "default", "c", cm, "status", {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("could not find")));
}

TEST_F(ObjectStoreTest, NoOpUpdateWritesNothing) {
  const nlohmann::json cm = CreateOk(configmaps_, "default", Named("c", {{"data", {{"k", "v"}}}}));
  const std::int64_t before = store_->CurrentResourceVersion();
  ASSERT_OK_AND_ASSIGN(WriteResult same, store_->Update(configmaps_, "default", "c", cm, "", {}));
  EXPECT_EQ(same.object, cm);
  EXPECT_EQ(store_->CurrentResourceVersion(), before);
}

TEST_F(ObjectStoreTest, GenerationCountsSpecChangesOnly) {
  nlohmann::json d = CreateOk(deployments_, "default",
                              Named("d", {{"spec", {{"replicas", 1}}}, {"status", {{"x", 1}}}}));
  EXPECT_EQ(d["metadata"]["generation"], 1);
  EXPECT_FALSE(d.contains("status"));      // status cannot be set at creation
  d["metadata"]["labels"] = {{"a", "b"}};  // metadata: no new generation
  ASSERT_OK_AND_ASSIGN(WriteResult labelled,
                       store_->Update(deployments_, "default", "d", d, "", {}));
  EXPECT_EQ(labelled.object["metadata"]["generation"], 1);
  nlohmann::json scaled = labelled.object;
  scaled["spec"]["replicas"] = 3;
  ASSERT_OK_AND_ASSIGN(WriteResult bumped,
                       store_->Update(deployments_, "default", "d", scaled, "", {}));
  EXPECT_EQ(bumped.object["metadata"]["generation"], 2);
  nlohmann::json with_status = bumped.object;
  with_status["status"] = {{"observedGeneration", 2}};
  ASSERT_OK_AND_ASSIGN(WriteResult status,
                       store_->Update(deployments_, "default", "d", with_status, "status", {}));
  EXPECT_EQ(status.object["metadata"]["generation"], 2);
  EXPECT_EQ(status.object["status"]["observedGeneration"], 2);
}

TEST_F(ObjectStoreTest, StatusSubresourceSplitsSpecFromStatus) {
  nlohmann::json pod = CreateOk(pods_, "default", Named("p", {{"spec", {{"nodeName", ""}}}}));
  nlohmann::json both = pod;
  both["spec"]["nodeName"] = "n1";
  both["status"]["phase"] = "Running";
  ASSERT_OK_AND_ASSIGN(WriteResult main, store_->Update(pods_, "default", "p", both, "", {}));
  EXPECT_EQ(main.object["spec"]["nodeName"], "n1");
  EXPECT_EQ(main.object["status"]["phase"], "Pending");  // the main resource ignores status
  both = main.object;
  both["spec"]["nodeName"] = "n2";
  both["status"]["phase"] = "Running";
  ASSERT_OK_AND_ASSIGN(WriteResult status,
                       store_->Update(pods_, "default", "p", both, "status", {}));
  EXPECT_EQ(status.object["spec"]["nodeName"], "n1");  // /status ignores the rest
  EXPECT_EQ(status.object["status"]["phase"], "Running");
}

TEST_F(ObjectStoreTest, ModifyAppliesAgainstTheCurrentObject) {
  CreateOk(configmaps_, "default", Named("c", {{"data", {{"n", "0"}}}}));
  ASSERT_OK_AND_ASSIGN(
      WriteResult result,
      store_->Modify(configmaps_, "default", "c", "",
                     [](const nlohmann::json& current) -> absl::StatusOr<nlohmann::json> {
                       nlohmann::json next = current;
                       next["data"]["n"] = "1";
                       return next;
                     },
                     {}));
  EXPECT_EQ(result.object["data"]["n"], "1");
  EXPECT_THAT(store_->Modify(configmaps_, "default", "c", "",
                             [](const nlohmann::json&) -> absl::StatusOr<nlohmann::json> {
                               return BadRequestFailure("bad patch");
                             },
                             {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "bad patch"));
  EXPECT_THAT(store_->Modify(configmaps_, "default", "c", "",
                             [](const nlohmann::json& current) -> absl::StatusOr<nlohmann::json> {
                               nlohmann::json next = current;
                               next["metadata"]["resourceVersion"] = "1";
                               return next;
                             },
                             {}),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("has been modified")));
  EXPECT_THAT(store_->Modify(
                  configmaps_, "default", "gone", "",
                  [](const nlohmann::json& c) -> absl::StatusOr<nlohmann::json> { return c; }, {}),
              StatusIs(absl::StatusCode::kNotFound, "configmaps \"gone\" not found"));
}

TEST_F(ObjectStoreTest, ConcurrentModifiesLoseNoIncrement) {
  CreateOk(configmaps_, "default", Named("counter", {{"data", {{"n", "0"}}}}));
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        absl::StatusOr<WriteResult> r = store_->Modify(
            configmaps_, "default", "counter", "",
            [](const nlohmann::json& current) -> absl::StatusOr<nlohmann::json> {
              nlohmann::json next = current;
              next["data"]["n"] =
                  std::to_string(std::stoi(current["data"]["n"].get<std::string>()) + 1);
              return next;
            },
            {});
        EXPECT_TRUE(r.ok()) << r.status();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_OK_AND_ASSIGN(nlohmann::json counter, store_->Get(configmaps_, "default", "counter"));
  EXPECT_EQ(counter["data"]["n"], std::to_string(kThreads * kEach));  // 4 threads x 50 = 200
}

TEST_F(ObjectStoreTest, BuiltinResourcesCarryKubectlNames) {
  const std::vector<ResourceInfo> all = store_->Resources();
  auto find = [&](const std::string& group, const std::string& plural) {
    for (const ResourceInfo& r : all) {
      if (r.group == group && r.plural == plural) return r;
    }
    ADD_FAILURE() << plural;
    return ResourceInfo{};
  };
  EXPECT_THAT(find("", "pods").short_names, ElementsAre("po"));
  EXPECT_THAT(find("", "pods").categories, ElementsAre("all"));
  EXPECT_TRUE(find("", "pods").status_subresource);
  EXPECT_FALSE(find("", "configmaps").status_subresource);
  EXPECT_FALSE(find("", "nodes").namespaced);
  EXPECT_THAT(find("apps", "deployments").short_names, ElementsAre("deploy"));
  EXPECT_THAT(find("apiextensions.k8s.io", "customresourcedefinitions").short_names,
              ElementsAre("crd", "crds"));
  EXPECT_EQ(find("coordination.k8s.io", "leases").kind, "Lease");
  EXPECT_EQ(find("events.k8s.io", "events").GroupVersion(), "events.k8s.io/v1");
  EXPECT_EQ(find("rbac.authorization.k8s.io", "clusterroles").namespaced, false);
  EXPECT_EQ(find("batch", "jobs").GroupResource(), "jobs.batch");
  EXPECT_THAT(find("", "namespaces").verbs, ::testing::Not(Contains("deletecollection")));
  EXPECT_THAT(find("", "services").verbs, Contains("deletecollection"));
  EXPECT_FALSE(store_->FindResource("", "v1", "widgets").has_value());
}

TEST(ObjectStoreOpen, RejectsBadOptions) {
  ObjectStore::Options options;
  options.history_size = 0;
  EXPECT_THAT(ObjectStore::Open(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("history_size")));
  options.history_size = 1;
  options.clock = nullptr;
  EXPECT_THAT(ObjectStore::Open(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clock")));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
