// The client over HTTP against the test API server: CRUD, optimistic concurrency, errors, watches,
// expired resourceVersions and paging, with kube-apiserver's semantics.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/status_matchers.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/kubeconfig.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::kube {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::apiserver::TestApiServer;

class ClientIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start({}));
    // The server's own kubeconfig, read the way the controller reads one.
    ASSERT_OK_AND_ASSIGN(ClientConfig config,
                         ParseKubeconfig(server_->Kubeconfig(), "test kubeconfig", "/"));
    ASSERT_OK_AND_ASSIGN(client_, Client::Connect(config));
  }

  static json ConfigMapJson(const std::string& name, const std::string& value) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"data", {{"k", value}}}};
  }

  // The next event that is not a bookmark.
  static absl::StatusOr<std::optional<WatchEvent>> NextChange(WatchStream& stream) {
    while (true) {
      absl::StatusOr<std::optional<WatchEvent>> event = stream.Next();
      if (!event.ok() || !event->has_value() || (*event)->type != WatchEventType::kBookmark) {
        return event;
      }
    }
  }

  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientIntegrationTest, ConfigMapCreateGetUpdatePatchDelete) {
  ASSERT_OK_AND_ASSIGN(json created, client_->Create(kConfigMaps, ConfigMapJson("plan", "1")));
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  ASSERT_OK_AND_ASSIGN(json got, client_->Get(kConfigMaps, "default", "plan"));
  EXPECT_EQ(got["data"]["k"], "1");
  got["data"]["k"] = "2";
  ASSERT_OK_AND_ASSIGN(json updated, client_->Update(kConfigMaps, got));
  EXPECT_EQ(updated["data"]["k"], "2");
  EXPECT_NE(updated["metadata"]["resourceVersion"], got["metadata"]["resourceVersion"]);
  ASSERT_OK_AND_ASSIGN(json patched, client_->Patch(kConfigMaps, "default", "plan",
                                                    PatchType::kMerge, {{"data", {{"j", "3"}}}}));
  EXPECT_EQ(patched["data"], (json{{"k", "2"}, {"j", "3"}}));
  ASSERT_OK_AND_ASSIGN(json json_patched,
                       client_->Patch(kConfigMaps, "default", "plan", PatchType::kJson,
                                      json::array({{{"op", "remove"}, {"path", "/data/j"}}})));
  EXPECT_EQ(json_patched["data"], (json{{"k", "2"}}));
  ASSERT_OK(client_->Delete(kConfigMaps, "default", "plan"));
  EXPECT_TRUE(kube::IsNotFound(client_->Get(kConfigMaps, "default", "plan").status()));
}

TEST_F(ClientIntegrationTest, TypedPodRoundTripKeepsUnknownFields) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "w-0"}, {"namespace", "default"}, {"labels", {{"a", "b"}}}}},
              {"spec",
               {{"containers",
                 {{{"name", "worker"},
                   {"image", "wavepool/runtime:1"},
                   {"ports", {{{"containerPort", 29500}}}},
                   {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}},
                {"restartPolicy", "Never"}}}};
  ASSERT_OK(client_->Create(kPods, pod));
  TypedClient<Pod> pods(client_.get());
  ASSERT_OK_AND_ASSIGN(Pod typed, pods.Get("default", "w-0"));
  ASSERT_EQ(typed.spec.containers.size(), 1u);
  EXPECT_EQ(typed.spec.containers[0].resources.limits.at("nvidia.com/gpu"), "1");
  EXPECT_EQ(typed.spec.restart_policy, "Never");
  typed.metadata.labels["wavepool.dev/wave"] = "2";
  ASSERT_OK_AND_ASSIGN(Pod updated, pods.Update(typed));
  EXPECT_EQ(updated.metadata.labels.at("wavepool.dev/wave"), "2");
  // The container port was never modelled, and survived the update.
  EXPECT_EQ(updated.raw["spec"]["containers"][0]["ports"][0]["containerPort"], 29500);
  ASSERT_OK_AND_ASSIGN(TypedList<Pod> list, pods.List("default"));
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_EQ(list.items[0].metadata.name, "w-0");
}

TEST_F(ClientIntegrationTest, StaleUpdateIsAConflict) {
  ASSERT_OK_AND_ASSIGN(json first, client_->Create(kConfigMaps, ConfigMapJson("c", "1")));
  json second = first;
  first["data"]["k"] = "from first";
  ASSERT_OK(client_->Update(kConfigMaps, first));
  second["data"]["k"] = "from second";  // still at the old resourceVersion
  const auto stale = client_->Update(kConfigMaps, second);
  EXPECT_THAT(stale, StatusIs(absl::StatusCode::kAborted, HasSubstr("PUT")));
  EXPECT_TRUE(IsConflict(stale.status()));
}

TEST_F(ClientIntegrationTest, MissingObjectsAreNotFoundAndDuplicatesAlreadyExist) {
  const auto missing = client_->Get(kConfigMaps, "default", "ghost");
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kNotFound, HasSubstr("ghost")));
  EXPECT_EQ(ApiStatusOf(missing.status())->code, 404);
  EXPECT_TRUE(kube::IsNotFound(client_->Delete(kConfigMaps, "default", "ghost")));
  ASSERT_OK(client_->Create(kConfigMaps, ConfigMapJson("twice", "1")));
  EXPECT_TRUE(
      kube::IsAlreadyExists(client_->Create(kConfigMaps, ConfigMapJson("twice", "1")).status()));
}

TEST_F(ClientIntegrationTest, DeletePreconditionOnAStaleUidConflicts) {
  ASSERT_OK(client_->Create(kConfigMaps, ConfigMapJson("d", "1")));
  DeleteOptions options;
  options.precondition_uid = "not-the-uid";
  EXPECT_TRUE(IsConflict(client_->Delete(kConfigMaps, "default", "d", options)));
  EXPECT_OK(client_->Get(kConfigMaps, "default", "d"));
}

TEST_F(ClientIntegrationTest, WatchSeesAddedModifiedDeleted) {
  ASSERT_OK_AND_ASSIGN(ObjectList list, client_->List(kConfigMaps, "default"));
  ListOptions options;
  options.resource_version = list.resource_version;
  options.timeout = std::chrono::seconds(60);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WatchStream> stream,
                       client_->Watch(kConfigMaps, "default", options));
  ASSERT_OK_AND_ASSIGN(json created, client_->Create(kConfigMaps, ConfigMapJson("w", "1")));
  ASSERT_OK(
      client_->Patch(kConfigMaps, "default", "w", PatchType::kMerge, {{"data", {{"k", "2"}}}}));
  ASSERT_OK(client_->Delete(kConfigMaps, "default", "w"));
  const WatchEventType expected[] = {WatchEventType::kAdded, WatchEventType::kModified,
                                     WatchEventType::kDeleted};
  for (const WatchEventType type : expected) {
    ASSERT_OK_AND_ASSIGN(std::optional<WatchEvent> event, NextChange(*stream));
    ASSERT_TRUE(event.has_value());
    EXPECT_EQ(event->type, type);
    EXPECT_EQ(event->object["metadata"]["name"], "w");
  }
  stream->Stop();
  EXPECT_THAT(stream->Next(), StatusIs(absl::StatusCode::kCancelled, ::testing::An<std::string>()));
}

TEST_F(ClientIntegrationTest, WatchFromACompactedVersionIsGone) {
  ASSERT_OK_AND_ASSIGN(json created, client_->Create(kConfigMaps, ConfigMapJson("old", "1")));
  const std::string old_version = created["metadata"]["resourceVersion"];
  ASSERT_OK(
      client_->Patch(kConfigMaps, "default", "old", PatchType::kMerge, {{"data", {{"k", "2"}}}}));
  server_->Compact();
  ListOptions options;
  options.resource_version = old_version;
  absl::StatusOr<std::unique_ptr<WatchStream>> stream =
      client_->Watch(kConfigMaps, "default", options);
  // kube-apiserver answers 200 and then an ERROR event; either way the caller sees IsGone.
  absl::Status status = stream.status();
  if (stream.ok()) status = (*stream)->Next().status();
  EXPECT_TRUE(IsGone(status)) << status;
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
}

TEST_F(ClientIntegrationTest, ListAllFollowsContinueTokens) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(client_->Create(kConfigMaps, ConfigMapJson("page-" + std::to_string(i), "x")));
  }
  ListOptions options;
  options.limit = 2;
  ASSERT_OK_AND_ASSIGN(ObjectList first, client_->List(kConfigMaps, "default", options));
  EXPECT_EQ(first.items.size(), 2u);
  EXPECT_FALSE(first.continue_token.empty());
  ASSERT_OK_AND_ASSIGN(ObjectList all, client_->ListAll(kConfigMaps, "default", options));
  std::vector<std::string> names;
  for (const json& item : all.items) names.push_back(item["metadata"]["name"]);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"page-0", "page-1", "page-2", "page-3", "page-4"}));
  EXPECT_EQ(all.items.size(), first.items.size() + 3);
  EXPECT_TRUE(all.continue_token.empty());
  EXPECT_FALSE(all.resource_version.empty());
}

TEST_F(ClientIntegrationTest, DroppedWatchEndsTheStream) {
  ListOptions options;
  options.allow_watch_bookmarks = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WatchStream> stream,
                       client_->Watch(kConfigMaps, "default", options));
  ASSERT_OK(client_->Create(kConfigMaps, ConfigMapJson("before-drop", "1")));
  ASSERT_OK_AND_ASSIGN(std::optional<WatchEvent> event, NextChange(*stream));
  ASSERT_TRUE(event.has_value());
  server_->DropWatches();
  // A cut connection, not a clean end: the caller watches again from its last resourceVersion.
  EXPECT_THAT(stream->Next(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("chunk")));
}

}  // namespace
}  // namespace wavepool::kube
