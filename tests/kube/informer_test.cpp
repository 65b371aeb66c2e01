// The informer's store and selectors alone, and the informer against the test API server.
#include "wavepool/kube/informer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/scripted_transport.h"
#include "tests/support/eventually.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"

#ifdef WAVEPOOL_TEST_APISERVER
#include "tests/kube/partitionable_transport.h"
#include "tests/support/apiserver/test_server.h"
#include "wavepool/kube/http_transport.h"
#endif

namespace wavepool::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

nlohmann::json Pod(const std::string& ns, const std::string& name, nlohmann::json labels = {},
                   const std::string& version = "1") {
  nlohmann::json pod = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", name}, {"resourceVersion", version}}}};
  if (!ns.empty()) pod["metadata"]["namespace"] = ns;
  if (!labels.is_null()) pod["metadata"]["labels"] = labels;
  return pod;
}

std::vector<std::string> Keys(const std::vector<nlohmann::json>& objects) {
  std::vector<std::string> keys;
  for (const auto& object : objects) keys.push_back(ObjectKey(object));
  return keys;
}

TEST(ObjectKey, IsNamespaceSlashNameOrJustTheName) {
  EXPECT_EQ(ObjectKey(Pod("team-a", "p1")), "team-a/p1");
  EXPECT_EQ(ObjectKey(Pod("", "node-1")), "node-1");
}

TEST(LabelSelector, FollowsTheApiGrammar) {
  const nlohmann::json labels = {{"app", "web"}, {"tier", "front"}, {"canary", "yes"}};
  const auto matches = [&](const std::string& text) {
    auto selector = LabelSelector::Parse(text);
    EXPECT_THAT(selector, IsOk()) << text;
    return selector.ok() && selector->Matches(labels);
  };
  EXPECT_TRUE(matches(""));
  EXPECT_TRUE(matches("app=web"));
  EXPECT_TRUE(matches("app==web,tier=front"));
  EXPECT_FALSE(matches("app=db"));
  EXPECT_TRUE(matches("app!=db"));
  EXPECT_TRUE(matches("missing!=x"));  // a missing label is != anything
  EXPECT_TRUE(matches("tier in (front, back)"));
  EXPECT_FALSE(matches("tier notin (front)"));
  EXPECT_TRUE(matches("canary"));
  EXPECT_FALSE(matches("!canary"));
  EXPECT_TRUE(matches("!missing"));
  EXPECT_FALSE(matches("app=web,missing"));
}

TEST(LabelSelector, RejectsMalformedRequirements) {
  EXPECT_THAT(LabelSelector::Parse("app=web,,x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(LabelSelector::Parse("tier in (a,b"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tier in (a,b")));
  EXPECT_THAT(LabelSelector::Parse("tier within (a)"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("notin")));
  EXPECT_THAT(LabelSelector::Parse("=x"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(Store, UpsertAndRemoveReturnWhatWasThere) {
  Store store;
  EXPECT_EQ(store.Upsert(Pod("a", "p", nullptr, "1")), std::nullopt);
  const auto previous = store.Upsert(Pod("a", "p", nullptr, "2"));
  ASSERT_TRUE(previous.has_value());
  EXPECT_EQ((*previous)["metadata"]["resourceVersion"], "1");
  EXPECT_EQ((*store.Get("a/p"))["metadata"]["resourceVersion"], "2");
  EXPECT_EQ(store.size(), 1u);
  const auto removed = store.Remove("a/p");
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ((*removed)["metadata"]["resourceVersion"], "2");
  EXPECT_EQ(store.Remove("a/p"), std::nullopt);
  EXPECT_EQ(store.Get("a/p"), std::nullopt);
  EXPECT_EQ(store.size(), 0u);
}

TEST(Store, IndexesByNamespaceAndLabelFollowUpdates) {
  Store store;
  store.Upsert(Pod("a", "p1", {{"app", "web"}}));
  store.Upsert(Pod("a", "p2", {{"app", "db"}}));
  store.Upsert(Pod("b", "p3", {{"app", "web"}}));
  ASSERT_OK_AND_ASSIGN(auto in_a, store.ByIndex(kNamespaceIndex, "a"));
  EXPECT_THAT(Keys(in_a), ElementsAre("a/p1", "a/p2"));
  EXPECT_THAT(Keys(store.ByLabel("app", "web")), ElementsAre("a/p1", "b/p3"));

  // p1 changes its label: it leaves the old index entry and joins the new one.
  store.Upsert(Pod("a", "p1", {{"app", "db"}}));
  EXPECT_THAT(Keys(store.ByLabel("app", "web")), ElementsAre("b/p3"));
  EXPECT_THAT(Keys(store.ByLabel("app", "db")), ElementsAre("a/p1", "a/p2"));
  store.Remove("a/p2");
  EXPECT_THAT(Keys(store.ByLabel("app", "db")), ElementsAre("a/p1"));
  ASSERT_OK_AND_ASSIGN(auto in_c, store.ByIndex(kNamespaceIndex, "c"));
  EXPECT_THAT(in_c, IsEmpty());
}

TEST(Store, ListsWithALabelSelector) {
  Store store;
  store.Upsert(Pod("a", "p1", {{"app", "web"}, {"tier", "front"}}));
  store.Upsert(Pod("a", "p2", {{"app", "web"}}));
  store.Upsert(Pod("a", "p3"));
  ASSERT_OK_AND_ASSIGN(auto web, store.List("app=web,!tier"));
  EXPECT_THAT(Keys(web), ElementsAre("a/p2"));
  ASSERT_OK_AND_ASSIGN(auto all, store.List(""));
  EXPECT_EQ(all.size(), 3u);
  EXPECT_THAT(store.List("app in (web"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(Store, CustomIndexerCoversObjectsAlreadyStored) {
  Store store;
  store.Upsert(Pod("a", "p1"));
  nlohmann::json bound = Pod("a", "p2");
  bound["spec"]["nodeName"] = "node-1";
  store.Upsert(bound);
  const auto by_node = [](const nlohmann::json& pod) -> std::vector<std::string> {
    const std::string node = pod.value("spec", nlohmann::json::object()).value("nodeName", "");
    if (node.empty()) return {};
    return {node};
  };
  ASSERT_THAT(store.AddIndexer("node", by_node), IsOk());
  ASSERT_OK_AND_ASSIGN(auto on_node, store.ByIndex("node", "node-1"));
  EXPECT_THAT(Keys(on_node), ElementsAre("a/p2"));
  EXPECT_THAT(store.AddIndexer("node", by_node),
              StatusIs(absl::StatusCode::kAlreadyExists, ::testing::_));
  EXPECT_THAT(store.ByIndex("zone", "x"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("zone")));
}

// A server that sends resourceVersion as a number (no API server does) costs the informer its
// version bookkeeping for those objects, not its thread.
TEST(Informer, AResourceVersionThatIsNotAStringIsReadAsNone) {
  auto transport = std::make_unique<testing::ScriptedTransport>();
  testing::ScriptedTransport* script = transport.get();
  script->Answer(200, R"({"kind": "ConfigMapList", "metadata": {"resourceVersion": "5"},
      "items": [{"metadata": {"name": "a", "namespace": "default", "resourceVersion": 7}}]})");
  script->StreamLines({R"({"type": "MODIFIED", "object": {"kind": "ConfigMap",
      "metadata": {"name": "a", "namespace": "default", "resourceVersion": 8}}})"});
  Client client(ClientConfig{}, std::move(transport));
  SharedInformer::Options options;
  options.log = [](std::string_view) {};
  std::atomic<int> updates{0};
  ResourceEventHandlers handlers;
  handlers.on_update = [&](const nlohmann::json&, const nlohmann::json&) { ++updates; };
  SharedInformer informer(client, kConfigMaps, options);
  ASSERT_THAT(informer.AddEventHandler(handlers), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  ASSERT_TRUE(Eventually([&] { return updates.load() == 1; }));
  EXPECT_EQ(informer.LastSyncResourceVersion(), "5");
  EXPECT_THAT(informer.store().ListKeys(), ElementsAre("default/a"));
  informer.Stop();
}

#ifdef WAVEPOOL_TEST_APISERVER

using ::wavepool::testing::apiserver::TestApiServer;

using ::wavepool::kube::testing::PartitionableTransport;

// What the handlers saw, in order: "add ns/name", "update ns/name 4->5", "delete ns/name".
class Recorder {
 public:
  ResourceEventHandlers Handlers() {
    return {[this](const nlohmann::json& o) { Push("add " + ObjectKey(o)); },
            [this](const nlohmann::json& old_o, const nlohmann::json& new_o) {
              Push("update " + ObjectKey(new_o) + " " + Version(old_o) + "->" + Version(new_o));
            },
            [this](const nlohmann::json& o) { Push("delete " + ObjectKey(o)); },
            /*on_synced=*/{}};
  }
  std::vector<std::string> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  bool Saw(const std::string& what) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : seen_) {
      if (s.rfind(what, 0) == 0) return true;
    }
    return false;
  }
  int Count(const std::string& prefix) const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& s : seen_) n += s.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }

 private:
  static std::string Version(const nlohmann::json& o) {
    return o["metadata"].value("resourceVersion", "");
  }
  void Push(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::vector<std::string> seen_;
};

nlohmann::json ConfigMap(const std::string& ns, const std::string& name,
                         nlohmann::json labels = nlohmann::json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
          {"data", {{"k", "v"}}}};
}

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(const TestApiServer::Options& options) {
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start(options));
    ClientConfig config;
    config.server = server_->url();
    ASSERT_OK_AND_ASSIGN(client_, Client::Connect(config));
  }

  void CreateNamespace(const std::string& name) {
    ASSERT_THAT(client_->Create(
                    kNamespaces,
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}}),
                IsOk());
  }

  static SharedInformer::Options FastOptions() {
    SharedInformer::Options options;
    options.initial_backoff = std::chrono::milliseconds(20);
    options.max_backoff = std::chrono::milliseconds(200);
    options.log = [](std::string_view line) {
      if (std::getenv("WAVEPOOL_TEST_VERBOSE")) std::cerr << line << "\n";
    };
    return options;
  }

  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(InformerTest, ListsFirstThenDeliversAddUpdateDeleteInOrder) {
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "one")), IsOk());
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "two")), IsOk());
  Recorder recorder;
  SharedInformer informer(*client_, kConfigMaps, FastOptions());
  ASSERT_THAT(informer.AddEventHandler(recorder.Handlers()), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  // HasSynced means the listed objects were already handed to the handlers.
  EXPECT_THAT(recorder.seen(), ElementsAre("add default/one", "add default/two"));
  EXPECT_EQ(informer.store().size(), 2u);
  EXPECT_EQ((*informer.store().Get("default/one"))["kind"], "ConfigMap");
  EXPECT_FALSE(informer.LastSyncResourceVersion().empty());
  EXPECT_THAT(informer.AddEventHandler(recorder.Handlers()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("before Run")));

  ASSERT_OK_AND_ASSIGN(auto three, client_->Create(kConfigMaps, ConfigMap("default", "three")));
  const std::string created_version = three["metadata"]["resourceVersion"];
  three["data"]["k"] = "changed";
  ASSERT_OK_AND_ASSIGN(auto updated, client_->Update(kConfigMaps, three));
  const std::string updated_version = updated["metadata"]["resourceVersion"];
  ASSERT_THAT(client_->Delete(kConfigMaps, "default", "one"), IsOk());
  ASSERT_TRUE(Eventually([&] { return recorder.Saw("delete default/one"); }));
  EXPECT_THAT(recorder.seen(),
              ElementsAre("add default/one", "add default/two", "add default/three",
                          "update default/three " + created_version + "->" + updated_version,
                          "delete default/one"));
  EXPECT_THAT(informer.store().ListKeys(), ElementsAre("default/three", "default/two"));
  EXPECT_EQ((*informer.store().Get("default/three"))["data"]["k"], "changed");
  informer.Stop();
}

TEST_F(InformerTest, OnSyncedRunsOnceAfterTheFirstListsAddsAndSeesItSynced) {
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "one")), IsOk());
  SharedInformer informer(*client_, kConfigMaps, FastOptions());
  std::mutex mu;
  std::vector<std::string> seen;
  ResourceEventHandlers handlers;
  handlers.on_add = [&](const nlohmann::json& o) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back("add " + ObjectKey(o));
  };
  handlers.on_synced = [&] {
    const bool synced = informer.HasSynced();
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(synced ? "synced" : "called before HasSynced");
  };
  ASSERT_THAT(informer.AddEventHandler(handlers), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "two")), IsOk());
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() >= 3;
  }));
  informer.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(seen, ElementsAre("add default/one", "synced", "add default/two"));
}

TEST_F(InformerTest, IndexesAndSelectorsNarrowTheCache) {
  CreateNamespace("team-a");
  CreateNamespace("team-b");
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("team-a", "p1", {{"app", "web"}})), IsOk());
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("team-a", "p2", {{"app", "db"}})), IsOk());
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("team-b", "p3", {{"app", "web"}})), IsOk());

  SharedInformer all(*client_, kConfigMaps, FastOptions());
  all.Run();
  ASSERT_TRUE(all.WaitForSync(std::chrono::seconds(30)));
  ASSERT_OK_AND_ASSIGN(auto in_a, all.store().ByIndex(kNamespaceIndex, "team-a"));
  EXPECT_THAT(Keys(in_a), ElementsAre("team-a/p1", "team-a/p2"));
  EXPECT_THAT(Keys(all.store().ByLabel("app", "web")), ElementsAre("team-a/p1", "team-b/p3"));

  SharedInformer::Options narrow = FastOptions();
  narrow.ns = "team-a";
  narrow.label_selector = "app=web";
  SharedInformer selected(*client_, kConfigMaps, narrow);
  selected.Run();
  ASSERT_TRUE(selected.WaitForSync(std::chrono::seconds(30)));
  EXPECT_THAT(selected.store().ListKeys(), ElementsAre("team-a/p1"));
  // A label change moves an object into the selection: the watch reports it as added.
  ASSERT_OK_AND_ASSIGN(auto p2, client_->Get(kConfigMaps, "team-a", "p2"));
  p2["metadata"]["labels"]["app"] = "web";
  ASSERT_THAT(client_->Update(kConfigMaps, p2), IsOk());
  ASSERT_TRUE(Eventually([&] { return selected.store().size() == 2; }));
}

TEST_F(InformerTest, SurvivesDroppedWatches) {
  Recorder recorder;
  SharedInformer informer(*client_, kConfigMaps, FastOptions());
  ASSERT_THAT(informer.AddEventHandler(recorder.Handlers()), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  for (int round = 0; round < 3; ++round) {
    server_->DropWatches();
    const std::string name = "after-drop-" + std::to_string(round);
    ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", name)), IsOk());
    ASSERT_TRUE(Eventually([&] { return recorder.Saw("add default/" + name); })) << name;
  }
  EXPECT_EQ(recorder.Count("add "), 3);  // each once: the re-watch resumes, it does not re-list
}

TEST_F(InformerTest, SurvivesAServerRestartWithItsDataDirectory) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wavepool-informer-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TestApiServer::Options options;
  options.store.data_dir = dir.string();
  StartServer(options);
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "before")), IsOk());
  Recorder recorder;
  SharedInformer informer(*client_, kConfigMaps, FastOptions());
  ASSERT_THAT(informer.AddEventHandler(recorder.Handlers()), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  ASSERT_THAT(server_->Restart(), IsOk());
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "after")), IsOk());
  ASSERT_TRUE(Eventually([&] { return recorder.Saw("add default/after"); }));
  EXPECT_EQ(recorder.Count("add default/before"), 1);
  EXPECT_THAT(informer.store().ListKeys(), ElementsAre("default/after", "default/before"));
  informer.Stop();
  server_.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(InformerTest, GoneAfterCompactionListsAgainAndReplacesTheStore) {
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "stays")), IsOk());
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "vanishes")), IsOk());
  // The informer has a client of its own that the test can cut off, and its backoffs run on a
  // simulated clock: once its watch is cut it waits until the test has deleted, created and
  // compacted behind its back.
  ClientConfig config;
  config.server = server_->url();
  ASSERT_OK_AND_ASSIGN(auto http, NewHttpTransport(config));
  auto owned = std::make_unique<PartitionableTransport>(std::move(http));
  PartitionableTransport* transport = owned.get();
  Client informer_client(config, std::move(owned));
  ::wavepool::testing::SimulatedClock clock;
  SharedInformer::Options options = FastOptions();
  options.clock = &clock;
  std::mutex log_mu;
  std::vector<std::string> log;
  options.log = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.emplace_back(line);
  };
  const auto logged = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(log_mu);
    for (const auto& line : log) {
      if (line.find(what) != std::string::npos) return true;
    }
    return false;
  };
  Recorder recorder;
  SharedInformer informer(informer_client, kConfigMaps, options);
  ASSERT_THAT(informer.AddEventHandler(recorder.Handlers()), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  // An object seen through the watch proves the watch is open (and so will be cut below).
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "probe")), IsOk());
  ASSERT_TRUE(Eventually([&] { return recorder.Saw("add default/probe"); }));
  const std::string listed_version = informer.LastSyncResourceVersion();

  transport->set_partitioned(true);
  server_->DropWatches();
  ASSERT_TRUE(Eventually([&] { return logged("watch failed"); }));
  ASSERT_THAT(client_->Delete(kConfigMaps, "default", "vanishes"), IsOk());
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "appears")), IsOk());
  server_->Compact();
  transport->set_partitioned(false);
  clock.Advance(std::chrono::seconds(1));  // past the backoff

  ASSERT_TRUE(Eventually([&] { return recorder.Saw("delete default/vanishes"); }));
  ASSERT_TRUE(Eventually([&] { return recorder.Saw("add default/appears"); }));
  EXPECT_THAT(informer.store().ListKeys(),
              ElementsAre("default/appears", "default/probe", "default/stays"));
  EXPECT_NE(informer.LastSyncResourceVersion(), listed_version);
  EXPECT_TRUE(logged("listing again")) << "the watch from before the compaction must get 410";
  EXPECT_EQ(recorder.Count("update default/stays"), 0);  // unchanged objects are not re-sent
}

TEST_F(InformerTest, AStoreTransformShrinksWhatIsKeptButHandlersGetNewObjectsWhole) {
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "one", {{"app", "a"}})), IsOk());
  SharedInformer::Options options = FastOptions();
  options.store_transform = [](const nlohmann::json& object) {
    // Keeps the labels alone; the informer adds the key and version back.
    return nlohmann::json{{"metadata", {{"labels", object["metadata"]["labels"]}}}};
  };
  std::mutex mu;
  std::vector<std::string> seen;  // "<event> <name> <whether it has data>[ old: ...]"
  const auto data = [](const nlohmann::json& o) {
    return std::string(o.contains("data") ? "data" : "no-data");
  };
  ResourceEventHandlers handlers;
  handlers.on_add = [&](const nlohmann::json& o) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back("add " + ObjectKey(o) + " " + data(o));
  };
  handlers.on_update = [&](const nlohmann::json& old_o, const nlohmann::json& new_o) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back("update " + ObjectKey(new_o) + " " + data(new_o) + " old: " + data(old_o));
  };
  handlers.on_delete = [&](const nlohmann::json& o) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back("delete " + ObjectKey(o) + " " + data(o));
  };
  SharedInformer informer(*client_, kConfigMaps, options);
  ASSERT_THAT(informer.AddEventHandler(handlers), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));

  const nlohmann::json stored = *informer.store().Get("default/one");
  EXPECT_FALSE(stored.contains("data"));
  EXPECT_EQ(stored["kind"], "ConfigMap");
  EXPECT_EQ(stored["apiVersion"], "v1");
  EXPECT_EQ(stored["metadata"]["name"], "one");
  EXPECT_EQ(stored["metadata"]["namespace"], "default");
  EXPECT_FALSE(stored["metadata"].value("resourceVersion", "").empty());
  EXPECT_THAT(Keys(informer.store().ByLabel("app", "a")), ElementsAre("default/one"));

  nlohmann::json changed = ConfigMap("default", "one", {{"app", "a"}});
  changed["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"];
  changed["data"]["k"] = "changed";
  ASSERT_THAT(client_->Update(kConfigMaps, changed), IsOk());
  ASSERT_THAT(client_->Delete(kConfigMaps, "default", "one"), IsOk());
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() >= 3;
  }));
  informer.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(seen, ElementsAre("add default/one data", "update default/one data old: no-data",
                                "delete default/one data"));
}

TEST_F(InformerTest, ResyncRedeliversEveryObjectAsAnUpdate) {
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "one")), IsOk());
  ASSERT_THAT(client_->Create(kConfigMaps, ConfigMap("default", "two")), IsOk());
  ::wavepool::testing::SimulatedClock clock;
  SharedInformer::Options options = FastOptions();
  options.clock = &clock;
  options.resync_period = std::chrono::seconds(30);
  Recorder recorder;
  SharedInformer informer(*client_, kConfigMaps, options);
  ASSERT_THAT(informer.AddEventHandler(recorder.Handlers()), IsOk());
  informer.Run();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  clock.Advance(std::chrono::seconds(29));
  EXPECT_EQ(recorder.Count("update "), 0);
  clock.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(Eventually([&] { return recorder.Count("update ") == 2; }));
  const std::string version = (*informer.store().Get("default/one"))["metadata"]["resourceVersion"];
  EXPECT_TRUE(recorder.Saw("update default/one " + version + "->" + version));
  clock.Advance(std::chrono::seconds(30));
  ASSERT_TRUE(Eventually([&] { return recorder.Count("update ") == 4; }));
}

#endif  // WAVEPOOL_TEST_APISERVER

}  // namespace
}  // namespace wavepool::kube
