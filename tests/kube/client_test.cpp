// Request building and answer mapping of the REST client, against a scripted transport.
#include "wavepool/kube/client.h"

#include <memory>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/scripted_transport.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::kube {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::wavepool::kube::testing::ScriptedTransport;
using ::wavepool::testing::StatusIs;

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() {
    auto transport = std::make_unique<ScriptedTransport>();
    script_ = transport.get();
    client_ = std::make_unique<Client>(ClientConfig{}, std::move(transport));
  }

  ScriptedTransport* script_;  // owned by client_
  std::unique_ptr<Client> client_;
};

ListOptions Limit(std::int64_t limit) {
  ListOptions options;
  options.limit = limit;
  return options;
}

const json kConfigMap = {
    {"apiVersion", "v1"},
    {"kind", "ConfigMap"},
    {"metadata", {{"name", "plan"}, {"namespace", "team-a"}, {"resourceVersion", "7"}}},
    {"data", {{"k", "v"}}}};

TEST_F(ClientTest, GetBuildsTheObjectPathAndDecodesTheAnswer) {
  script_->Answer(200, kConfigMap.dump());
  ASSERT_OK_AND_ASSIGN(json object, client_->Get(kConfigMaps, "team-a", "plan"));
  EXPECT_EQ(object["data"]["k"], "v");
  const HttpRequest request = script_->last_request();
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/api/v1/namespaces/team-a/configmaps/plan");
  EXPECT_EQ(request.accept, "application/json");
}

TEST_F(ClientTest, GetMapsNotFound) {
  script_->Answer(404, R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":404,
      "reason":"NotFound","message":"configmaps \"plan\" not found"})");
  const auto got = client_->Get(kConfigMaps, "team-a", "plan");
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kNotFound,
                            HasSubstr("GET /api/v1/namespaces/team-a/configmaps/plan")));
  EXPECT_TRUE(kube::IsNotFound(got.status()));
}

TEST_F(ClientTest, GetRejectsMissingNameOrNamespace) {
  EXPECT_THAT(client_->Get(kPods, "default", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name")));
  EXPECT_THAT(client_->Get(kPods, "", "w-0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("namespace")));
  EXPECT_TRUE(script_->requests().empty());
  // A cluster-scoped type needs no namespace.
  script_->Answer(200, R"({"kind":"Node","metadata":{"name":"gpu-1"}})");
  EXPECT_OK(client_->Get(kNodes, "", "gpu-1"));
}

TEST_F(ClientTest, BadJsonAnswerIsInternalAndNamesTheRequest) {
  script_->Answer(200, "<html>");
  EXPECT_THAT(client_->Get(kNodes, "", "gpu-1"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("GET /api/v1/nodes/gpu-1")));
}

TEST_F(ClientTest, NoAnswerKeepsTheTransportCodeAndNamesTheRequest) {
  script_->Fail(absl::UnavailableError("connection refused"));
  EXPECT_THAT(client_->Get(kNodes, "", "gpu-1"),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("GET /api/v1/nodes/gpu-1: connection refused")));
  script_->Fail(absl::DeadlineExceededError("timed out"));
  EXPECT_THAT(client_->Get(kNodes, "", "gpu-1"),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("timed out")));
}

TEST_F(ClientTest, ListEncodesEveryOptionAndFillsItemTypes) {
  script_->Answer(200, R"({"kind":"PodList","apiVersion":"v1",
      "metadata":{"resourceVersion":"42","continue":"tok"},
      "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  ListOptions options;
  options.label_selector = "app=x,tier!=db";
  options.field_selector = "spec.nodeName=gpu 1";
  options.resource_version = "0";
  options.limit = 2;
  options.continue_token = "a+b/c=";
  ASSERT_OK_AND_ASSIGN(ObjectList list, client_->List(kPods, "default", options));
  EXPECT_EQ(script_->last_request().target,
            "/api/v1/namespaces/default/pods?labelSelector=app%3Dx%2Ctier%21%3Ddb"
            "&fieldSelector=spec.nodeName%3Dgpu%201&resourceVersion=0&limit=2"
            "&continue=a%2Bb%2Fc%3D");
  EXPECT_EQ(list.resource_version, "42");
  EXPECT_EQ(list.continue_token, "tok");
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(list.items[1]["metadata"]["name"], "b");
  EXPECT_EQ(list.items[0]["kind"], "Pod");
  EXPECT_EQ(list.items[0]["apiVersion"], "v1");
}

TEST_F(ClientTest, ListWithoutOptionsHasNoQueryAndAcceptsNullItems) {
  script_->Answer(200, R"({"kind":"NodeList","metadata":{"resourceVersion":"3"},"items":null})");
  ASSERT_OK_AND_ASSIGN(ObjectList list, client_->List(kNodes, ""));
  EXPECT_EQ(script_->last_request().target, "/api/v1/nodes");
  EXPECT_TRUE(list.items.empty());
  EXPECT_EQ(list.resource_version, "3");
}

TEST_F(ClientTest, ListRejectsAnAnswerThatIsNoList) {
  script_->Answer(200, R"({"items":{"a":1}})");
  EXPECT_THAT(client_->List(kNodes, ""),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("GET /api/v1/nodes")));
  EXPECT_THAT(client_->List(kNodes, "", Limit(-1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
}

TEST_F(ClientTest, ListAllFollowsContinueTokensWithoutResourceVersion) {
  script_->Answer(200, R"({"metadata":{"resourceVersion":"10","continue":"p2"},
                           "items":[{"metadata":{"name":"a"}}]})");
  script_->Answer(200, R"({"metadata":{"resourceVersion":"10","continue":"p3"},
                           "items":[{"metadata":{"name":"b"}}]})");
  script_->Answer(200,
                  R"({"metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"c"}}]})");
  ListOptions options;
  options.limit = 1;
  options.resource_version = "0";
  ASSERT_OK_AND_ASSIGN(ObjectList list, client_->ListAll(kConfigMaps, "team-a", options));
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[2]["metadata"]["name"], "c");
  EXPECT_EQ(list.resource_version, "10");
  EXPECT_TRUE(list.continue_token.empty());
  const auto requests = script_->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces/team-a/configmaps?resourceVersion=0&limit=1");
  EXPECT_EQ(requests[1].target, "/api/v1/namespaces/team-a/configmaps?limit=1&continue=p2");
  EXPECT_EQ(requests[2].target, "/api/v1/namespaces/team-a/configmaps?limit=1&continue=p3");
}

TEST_F(ClientTest, ListAllFallsBackToAFullListWhenTheTokenExpires) {
  script_->Answer(200, R"({"metadata":{"resourceVersion":"10","continue":"p2"},"items":[{}]})");
  script_->Answer(410, R"({"kind":"Status","code":410,"reason":"Expired","message":"expired"})");
  script_->Answer(200, R"({"metadata":{"resourceVersion":"12"},"items":[{},{},{}]})");
  ASSERT_OK_AND_ASSIGN(ObjectList list, client_->ListAll(kNodes, "", Limit(1)));
  EXPECT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.resource_version, "12");
  EXPECT_EQ(script_->last_request().target, "/api/v1/nodes");
}

TEST_F(ClientTest, ListAllStopsOnARepeatedToken) {
  script_->Answer(200, R"({"metadata":{"continue":"same"},"items":[]})");
  script_->Answer(200, R"({"metadata":{"continue":"same"},"items":[]})");
  EXPECT_THAT(client_->ListAll(kNodes, "", Limit(1)),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("repeated continue token")));
}

TEST_F(ClientTest, CreatePostsToTheObjectsNamespaceWithTypeMeta) {
  script_->Answer(201, kConfigMap.dump());
  json object = {{"metadata", {{"generateName", "plan-"}, {"namespace", "team-a"}}}};
  ASSERT_OK(client_->Create(kConfigMaps, object));
  const HttpRequest request = script_->last_request();
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.target, "/api/v1/namespaces/team-a/configmaps");
  EXPECT_EQ(request.content_type, "application/json");
  const json body = json::parse(request.body);
  EXPECT_EQ(body["kind"], "ConfigMap");
  EXPECT_EQ(body["apiVersion"], "v1");
  EXPECT_EQ(body["metadata"]["generateName"], "plan-");
}

TEST_F(ClientTest, CreateNeedsANamespaceForNamespacedTypes) {
  EXPECT_THAT(client_->Create(kConfigMaps, json{{"metadata", {{"name", "plan"}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.namespace")));
  EXPECT_THAT(client_->Create(kConfigMaps, json::array()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON object")));
  EXPECT_THAT(
      client_->Create(kConfigMaps, json{{"kind", "Pod"}, {"metadata", {{"namespace", "a"}}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kind")));
  EXPECT_TRUE(script_->requests().empty());
  script_->Answer(201, R"({"kind":"GPUNode"})");
  ASSERT_OK(client_->Create(api::kGpuNodes, json{{"metadata", {{"name", "gpu-1"}}}}));
  EXPECT_EQ(script_->last_request().target, "/apis/wavepool.dev/v1alpha1/gpunodes");
}

TEST_F(ClientTest, CreateMapsAlreadyExists) {
  script_->Answer(409,
                  R"({"kind":"Status","code":409,"reason":"AlreadyExists","message":"exists"})");
  const auto created = client_->Create(kConfigMaps, kConfigMap);
  EXPECT_THAT(created, StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("POST")));
  EXPECT_TRUE(kube::IsAlreadyExists(created.status()));
}

TEST_F(ClientTest, UpdateAndUpdateStatusPutToTheirPaths) {
  script_->Answer(200, kConfigMap.dump());
  script_->Answer(409, R"({"kind":"Status","code":409,"reason":"Conflict","message":"modified"})");
  ASSERT_OK(client_->Update(kConfigMaps, kConfigMap));
  EXPECT_EQ(script_->last_request().method, "PUT");
  EXPECT_EQ(script_->last_request().target, "/api/v1/namespaces/team-a/configmaps/plan");
  EXPECT_EQ(json::parse(script_->last_request().body)["metadata"]["resourceVersion"], "7");
  const auto status = client_->UpdateStatus(kConfigMaps, kConfigMap);
  EXPECT_EQ(script_->last_request().target, "/api/v1/namespaces/team-a/configmaps/plan/status");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kAborted, HasSubstr("modified")));
  EXPECT_TRUE(IsConflict(status.status()));
  EXPECT_THAT(client_->Update(kConfigMaps, json{{"metadata", {{"namespace", "a"}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.name")));
}

TEST_F(ClientTest, PatchSendsTheContentTypeOfItsKind) {
  struct Row {
    PatchType type;
    json patch;
    const char* content_type;
  };
  const Row rows[] = {
      {PatchType::kMerge, json{{"data", {{"k", nullptr}}}}, "application/merge-patch+json"},
      {PatchType::kStrategicMerge, json{{"spec", json::object()}},
       "application/strategic-merge-patch+json"},
      {PatchType::kJson, json::array({{{"op", "remove"}, {"path", "/data/k"}}}),
       "application/json-patch+json"},
  };
  for (const Row& row : rows) {
    script_->Answer(200, kConfigMap.dump());
    ASSERT_OK(client_->Patch(kConfigMaps, "team-a", "plan", row.type, row.patch));
    const HttpRequest request = script_->last_request();
    EXPECT_EQ(request.method, "PATCH");
    EXPECT_EQ(request.content_type, row.content_type);
    EXPECT_EQ(json::parse(request.body), row.patch);
  }
  script_->Answer(200, "{}");
  ASSERT_OK(client_->Patch(api::kTrainingJobs, "team-a", "vgg", PatchType::kMerge,
                           json{{"status", {{"phase", "Running"}}}}, "status"));
  EXPECT_EQ(script_->last_request().target,
            "/apis/wavepool.dev/v1alpha1/namespaces/team-a/trainingjobs/vgg/status");
}

TEST_F(ClientTest, PatchRejectsAPatchOfTheWrongShapeOrSubresource) {
  EXPECT_THAT(client_->Patch(kConfigMaps, "a", "b", PatchType::kJson, json::object()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("array")));
  EXPECT_THAT(client_->Patch(kConfigMaps, "a", "b", PatchType::kMerge, json::array()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("object")));
  EXPECT_THAT(client_->Patch(kConfigMaps, "a", "b", PatchType::kMerge, json::object(), "scale"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("subresource")));
  EXPECT_TRUE(script_->requests().empty());
}

TEST_F(ClientTest, DeleteSendsDeleteOptions) {
  script_->Answer(200, R"({"kind":"Status","status":"Success"})");
  DeleteOptions options;
  options.precondition_uid = "u-1";
  options.precondition_resource_version = "7";
  options.grace_period_seconds = 0;
  options.propagation_policy = "Foreground";
  ASSERT_OK(client_->Delete(kPods, "team-a", "w-0", options));
  const HttpRequest request = script_->last_request();
  EXPECT_EQ(request.method, "DELETE");
  EXPECT_EQ(request.target, "/api/v1/namespaces/team-a/pods/w-0");
  EXPECT_EQ(request.content_type, "application/json");
  EXPECT_EQ(json::parse(request.body),
            (json{{"kind", "DeleteOptions"},
                  {"apiVersion", "v1"},
                  {"preconditions", {{"uid", "u-1"}, {"resourceVersion", "7"}}},
                  {"gracePeriodSeconds", 0},
                  {"propagationPolicy", "Foreground"}}));
}

TEST_F(ClientTest, DeleteWithoutOptionsAndItsErrors) {
  script_->Answer(202, R"({"kind":"Pod"})");
  ASSERT_OK(client_->Delete(kPods, "team-a", "w-0"));
  EXPECT_EQ(json::parse(script_->last_request().body),
            (json{{"kind", "DeleteOptions"}, {"apiVersion", "v1"}}));
  script_->Answer(409, R"({"kind":"Status","code":409,"reason":"Conflict",
      "message":"Precondition failed: UID in precondition: u-1, UID in object meta: u-2"})");
  const absl::Status status = client_->Delete(kPods, "team-a", "w-0");
  EXPECT_TRUE(IsConflict(status)) << status;
}

TEST_F(ClientTest, WatchBuildsTheWatchQueryAndStreams) {
  script_->StreamLines({R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"});
  ListOptions options;
  options.resource_version = "42";
  options.label_selector = "app=x";
  options.timeout = std::chrono::seconds(60);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WatchStream> stream,
                       client_->Watch(kPods, "default", options));
  const HttpRequest request = script_->last_request();
  EXPECT_EQ(request.target,
            "/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dx&resourceVersion=42"
            "&timeoutSeconds=60&allowWatchBookmarks=true");
  EXPECT_EQ(request.timeout, std::chrono::milliseconds(90'000));  // 60 s + 30 s margin
  ASSERT_OK_AND_ASSIGN(std::optional<WatchEvent> event, stream->Next());
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->object["metadata"]["name"], "a");
}

TEST_F(ClientTest, WatchWithoutBookmarksAndItsErrors) {
  script_->StreamLines({});
  ListOptions options;
  options.allow_watch_bookmarks = false;
  ASSERT_OK(client_->Watch(kNodes, "", options));
  EXPECT_EQ(script_->last_request().target, "/api/v1/nodes?watch=1");
  script_->Answer(410, R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})");
  const auto expired = client_->Watch(kNodes, "", options);
  EXPECT_TRUE(IsGone(expired.status())) << expired.status();
  script_->Fail(absl::UnavailableError("connection refused"));
  EXPECT_THAT(client_->Watch(kNodes, "", options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("GET /api/v1/nodes?watch=1")));
  options.timeout = std::chrono::seconds(0);
  EXPECT_THAT(client_->Watch(kNodes, "", options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("timeout")));
}

}  // namespace
}  // namespace wavepool::kube
