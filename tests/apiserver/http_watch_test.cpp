// Watches read as a stream: events in order, bookmarks, the 410 ERROR event, the end at
// timeoutSeconds, broken connections on DropWatches (direct and through the control endpoint),
// and Table watches as kubectl reads them.
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/http_test_client.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

nlohmann::json ConfigMap(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"key", "1"}}}};
}

class HttpWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    TestApiServer::Options options;
    options.bookmark_interval = std::chrono::milliseconds(100);
    auto server = TestApiServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = std::make_unique<HttpTestClient>(server_->url());
  }

  // The collection's current resourceVersion, where a watch starts after a list.
  std::string ListVersion() {
    return client_->Get(kConfigMaps).Json()["metadata"]["resourceVersion"].get<std::string>();
  }

  std::string WatchPath(const std::string& extra = "") {
    return std::string(kConfigMaps) + "?watch=true&resourceVersion=" + ListVersion() + extra;
  }

  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<HttpTestClient> client_;
};

TEST_F(HttpWatch, StreamsAddedModifiedDeleted) {
  WatchReader watch(server_->url(), WatchPath());
  ASSERT_EQ(watch.head().status, 200);
  EXPECT_EQ(watch.head().Header("transfer-encoding"), "chunked");

  const ClientResponse created = client_->Post(kConfigMaps, ConfigMap("w"));
  ASSERT_EQ(created.status, 201);
  nlohmann::json changed = created.Json();
  changed["data"]["key"] = "2";
  ASSERT_EQ(client_->Put(std::string(kConfigMaps) + "/w", changed).status, 200);
  ASSERT_EQ(client_->Delete(std::string(kConfigMaps) + "/w").status, 200);

  for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
    const auto event = watch.Next();
    ASSERT_TRUE(event.has_value()) << "waiting for " << type;
    EXPECT_EQ((*event)["type"], type);
    EXPECT_EQ((*event)["object"]["metadata"]["name"], "w");
  }
}

TEST_F(HttpWatch, SendsBookmarksWhenAllowed) {
  WatchReader watch(server_->url(), WatchPath("&allowWatchBookmarks=true"));
  const auto bookmark = watch.NextOfType("BOOKMARK");
  ASSERT_TRUE(bookmark.has_value());
  EXPECT_EQ((*bookmark)["object"]["kind"], "ConfigMap");
  EXPECT_EQ((*bookmark)["object"]["apiVersion"], "v1");
  EXPECT_FALSE((*bookmark)["object"]["metadata"].value("resourceVersion", "").empty());
}

TEST_F(HttpWatch, EndsWithA410ErrorEventForACompactedStart) {
  const std::string old_version = ListVersion();
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("a")).status, 201);
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("b")).status, 201);
  server_->Compact();
  WatchReader watch(server_->url(),
                    std::string(kConfigMaps) + "?watch=1&resourceVersion=" + old_version);
  EXPECT_EQ(watch.head().status, 200);  // the failure travels inside the stream
  const auto error = watch.Next();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ((*error)["type"], "ERROR");
  EXPECT_EQ((*error)["object"]["kind"], "Status");
  EXPECT_EQ((*error)["object"]["code"], 410);
  EXPECT_EQ((*error)["object"]["reason"], "Expired");
  EXPECT_FALSE(watch.Next().has_value());
  EXPECT_EQ(watch.end(), WatchReader::End::kComplete);
}

TEST_F(HttpWatch, EndsCleanlyAtTimeoutSeconds) {
  WatchReader watch(server_->url(), WatchPath("&timeoutSeconds=1"));
  while (watch.Next().has_value()) {
  }
  EXPECT_EQ(watch.end(), WatchReader::End::kComplete);
}

TEST_F(HttpWatch, BreaksOnDropWatches) {
  WatchReader watch(server_->url(), WatchPath());
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("first")).status, 201);
  ASSERT_TRUE(watch.NextOfType("ADDED").has_value());
  server_->DropWatches();
  while (watch.Next().has_value()) {
  }
  EXPECT_EQ(watch.end(), WatchReader::End::kBroken);
}

TEST_F(HttpWatch, ControlEndpointDropsWatches) {
  WatchReader watch(server_->url(), WatchPath());
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("first")).status, 201);
  ASSERT_TRUE(watch.NextOfType("ADDED").has_value());
  EXPECT_EQ(client_->Get("/wavepool-test/drop-watches").status, 405);
  const ClientResponse dropped = client_->Request("POST", "/wavepool-test/drop-watches");
  EXPECT_EQ(dropped.status, 200);
  while (watch.Next().has_value()) {
  }
  EXPECT_EQ(watch.end(), WatchReader::End::kBroken);
  EXPECT_EQ(client_->Request("POST", "/wavepool-test/explode").status, 404);
}

TEST_F(HttpWatch, ControlEndpointRestartsOnTheSamePort) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("before")).status, 201);
  ASSERT_EQ(client_->Request("POST", "/wavepool-test/restart").status, 200);
  // Without a data dir the restarted server is empty; wait for it to answer again.
  int status = 0;
  for (int i = 0; i < 200 && status != 404; ++i) {
    status = client_->Get(std::string(kConfigMaps) + "/before").status;
    if (status != 404) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 404);
}

TEST_F(HttpWatch, WatchesOneObjectByName) {
  WatchReader watch(server_->url(),
                    std::string(kConfigMaps) + "/only?watch=true&resourceVersion=" + ListVersion());
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("other")).status, 201);
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("only")).status, 201);
  const auto event = watch.Next();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ((*event)["object"]["metadata"]["name"], "only");
}

TEST_F(HttpWatch, SendsOneRowTablesWithHeadersOnlyFirst) {
  WatchReader watch(server_->url(), WatchPath("&includeObject=Object"),
                    {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("t1")).status, 201);
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("t2")).status, 201);
  const auto first = watch.Next();
  const auto second = watch.Next();
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ((*first)["type"], "ADDED");
  EXPECT_EQ((*first)["object"]["kind"], "Table");
  EXPECT_THAT((*first)["object"]["rows"], ::testing::SizeIs(1));
  EXPECT_FALSE((*first)["object"]["columnDefinitions"].empty());
  EXPECT_TRUE((*second)["object"]["columnDefinitions"].is_null());
  EXPECT_THAT((*second)["object"]["rows"], ::testing::SizeIs(1));
}

TEST_F(HttpWatch, ServerStopClosesOpenWatches) {
  WatchReader watch(server_->url(), WatchPath());
  ASSERT_EQ(watch.head().status, 200);
  server_.reset();
  while (watch.Next().has_value()) {
  }
  EXPECT_EQ(watch.end(), WatchReader::End::kBroken);
}

}  // namespace
}  // namespace wavepool::testing::apiserver
