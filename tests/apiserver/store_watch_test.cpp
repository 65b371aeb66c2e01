// Watches: replay from a resourceVersion, selectors, history limits and fault injection.
#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/store_test_util.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

class StoreWatchTest : public ::testing::Test {
 protected:
  void Open(std::size_t history_size = 10'000) {
    ObjectStore::Options options;
    options.history_size = history_size;
    store_ = OpenMemoryStore(options);
    ASSERT_NE(store_, nullptr);
    configmaps_ = Resource(*store_, "", "v1", "configmaps");
    namespaces_ = Resource(*store_, "", "v1", "namespaces");
    ASSERT_OK(store_->Create(namespaces_, "", Named("other"), {}).status());
  }
  void SetUp() override { Open(); }

  nlohmann::json Put(const std::string& ns, const std::string& name, const std::string& app) {
    nlohmann::json cm = Named(name);
    cm["metadata"]["labels"] = {{"app", app}};
    absl::StatusOr<nlohmann::json> current = store_->Get(configmaps_, ns, name);
    absl::StatusOr<WriteResult> written = current.ok()
                                              ? store_->Update(configmaps_, ns, name, cm, "", {})
                                              : store_->Create(configmaps_, ns, cm, {});
    EXPECT_TRUE(written.ok()) << written.status();
    return written.ok() ? written->object : nlohmann::json();
  }

  // The next event, which must come at once (everything it reports has already happened).
  StoreEvent NextNow(StoreWatch& watch) {
    absl::StatusOr<std::optional<StoreEvent>> event = watch.Next(milliseconds(0));
    EXPECT_TRUE(event.ok()) << event.status();
    EXPECT_TRUE(event.ok() && event->has_value());
    return event.ok() && event->has_value() ? **event : StoreEvent{};
  }
  void ExpectQuiet(StoreWatch& watch) {
    absl::StatusOr<std::optional<StoreEvent>> event = watch.Next(milliseconds(0));
    ASSERT_TRUE(event.ok()) << event.status();
    EXPECT_FALSE(event->has_value()) << (*event)->object.dump();
  }
  static std::string NameOf(const StoreEvent& e) { return e.object["metadata"]["name"]; }

  std::unique_ptr<ObjectStore> store_;
  ResourceInfo configmaps_, namespaces_;
};

TEST_F(StoreWatchTest, FromZeroStartsWithTheCurrentObjects) {
  Put("default", "a", "web");
  Put("other", "b", "web");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> watch,
                       store_->Watch(configmaps_, "", FromVersion(0)));
  StoreEvent first = NextNow(*watch);
  EXPECT_EQ(first.type, EventType::kAdded);
  EXPECT_EQ(NameOf(first), "a");
  EXPECT_EQ(NameOf(NextNow(*watch)), "b");
  ExpectQuiet(*watch);
  Put("default", "c", "web");
  StoreEvent added = NextNow(*watch);
  EXPECT_EQ(added.type, EventType::kAdded);
  EXPECT_EQ(added.resource_version, store_->CurrentResourceVersion());
  EXPECT_EQ(added.object["kind"], "ConfigMap");
}

TEST_F(StoreWatchTest, FromAVersionReplaysWhatCameAfter) {
  const nlohmann::json a = Put("default", "a", "web");
  Put("default", "a", "db");
  ASSERT_OK(store_->Delete(configmaps_, "default", "a", {}).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> watch,
                       store_->Watch(configmaps_, "", FromVersion(RvNumber(a) - 1)));
  EXPECT_EQ(NextNow(*watch).type, EventType::kAdded);
  StoreEvent modified = NextNow(*watch);
  EXPECT_EQ(modified.type, EventType::kModified);
  EXPECT_EQ(modified.object["metadata"]["labels"]["app"], "db");
  StoreEvent deleted = NextNow(*watch);
  EXPECT_EQ(deleted.type, EventType::kDeleted);
  EXPECT_EQ(deleted.resource_version, store_->CurrentResourceVersion());
  ExpectQuiet(*watch);
  EXPECT_EQ(watch->BookmarkVersion(), store_->CurrentResourceVersion());
}

TEST_F(StoreWatchTest, NamespaceAndSelectorsFilterWithLeaveAndEnterEvents) {
  ListQuery web = FromVersion(store_->CurrentResourceVersion());
  web.label_selector = "app=web";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> watch,
                       store_->Watch(configmaps_, "default", web));
  Put("other", "elsewhere", "web");  // another namespace
  Put("default", "a", "db");         // not selected
  Put("default", "a", "web");        // enters the selection
  Put("default", "a", "db");         // leaves it
  StoreEvent entered = NextNow(*watch);
  EXPECT_EQ(entered.type, EventType::kAdded);
  EXPECT_EQ(NameOf(entered), "a");
  StoreEvent left = NextNow(*watch);
  EXPECT_EQ(left.type, EventType::kDeleted);
  EXPECT_EQ(left.object["metadata"]["labels"]["app"], "db");
  ExpectQuiet(*watch);
  EXPECT_EQ(watch->BookmarkVersion(), store_->CurrentResourceVersion());
}

TEST_F(StoreWatchTest, FieldSelectorOnName) {
  ListQuery only_b;
  only_b.field_selector = "metadata.name=b";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> watch, store_->Watch(configmaps_, "", only_b));
  Put("default", "a", "x");
  Put("default", "b", "x");
  EXPECT_EQ(NameOf(NextNow(*watch)), "b");
  ExpectQuiet(*watch);
  ListQuery bad;
  bad.field_selector = "data.x=1";
  EXPECT_EQ(HttpCodeOf(store_->Watch(configmaps_, "", bad).status()), 400);
}

TEST_F(StoreWatchTest, NextWaitsForAWriteFromAnotherThread) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> watch,
      store_->Watch(configmaps_, "", FromVersion(store_->CurrentResourceVersion())));
  std::thread writer([&] { Put("default", "later", "web"); });
  absl::StatusOr<std::optional<StoreEvent>> event = watch->Next(std::chrono::seconds(30));
  writer.join();
  ASSERT_TRUE(event.ok() && event->has_value()) << event.status();
  EXPECT_EQ(NameOf(**event), "later");
}

TEST_F(StoreWatchTest, TooOldVersionIsExpiredWithTheRealWording) {
  Open(/*history_size=*/3);
  const std::int64_t start = store_->CurrentResourceVersion();
  for (int i = 0; i < 5; ++i) Put("default", "c" + std::to_string(i), "x");
  // Five writes after `start`, three kept: the oldest kept is start+3, so a watch may begin at
  // start+2 or later.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> watch,
                       store_->Watch(configmaps_, "", FromVersion(start)));
  absl::StatusOr<std::optional<StoreEvent>> event = watch->Next(milliseconds(0));
  EXPECT_THAT(event,
              StatusIs(absl::StatusCode::kOutOfRange,
                       absl::StrCat("too old resource version: ", start, " (", start + 2, ")")));
  EXPECT_EQ(HttpCodeOf(event.status()), 410);
  EXPECT_EQ(StatusBodyOf(event.status())["reason"], "Expired");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> recent,
                       store_->Watch(configmaps_, "", FromVersion(start + 2)));
  EXPECT_EQ(NameOf(NextNow(*recent)), "c2");
}

TEST_F(StoreWatchTest, CompactExpiresOlderStarts) {
  const std::int64_t start = store_->CurrentResourceVersion();
  Put("default", "a", "x");
  store_->Compact();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> watch,
                       store_->Watch(configmaps_, "", FromVersion(start)));
  EXPECT_THAT(watch->Next(milliseconds(0)),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("too old resource version")));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> current,
      store_->Watch(configmaps_, "", FromVersion(store_->CurrentResourceVersion())));
  Put("default", "b", "x");
  EXPECT_EQ(NameOf(NextNow(*current)), "b");
}

TEST_F(StoreWatchTest, DropWatchesAbortsAndStopCancels) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> dropped,
      store_->Watch(configmaps_, "", FromVersion(store_->CurrentResourceVersion())));
  store_->DropWatches();
  EXPECT_THAT(dropped->Next(milliseconds(0)), StatusIs(absl::StatusCode::kAborted, HasSubstr("")));
  // A watch opened after the drop is unaffected.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> fresh,
      store_->Watch(configmaps_, "", FromVersion(store_->CurrentResourceVersion())));
  ASSERT_OK(fresh->Next(milliseconds(0)).status());
  fresh->Stop();
  EXPECT_THAT(fresh->Next(milliseconds(0)), StatusIs(absl::StatusCode::kCancelled, HasSubstr("")));
  // Stop from another thread ends a waiting Next.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> waiting,
      store_->Watch(configmaps_, "", FromVersion(store_->CurrentResourceVersion())));
  std::thread stopper([&] { waiting->Stop(); });
  absl::StatusOr<std::optional<StoreEvent>> ended = waiting->Next(std::chrono::seconds(30));
  stopper.join();
  // Either Next saw the stop while waiting, or it timed out first (a 30 s stall) and the next
  // call sees it.
  if (ended.ok()) ended = waiting->Next(milliseconds(0));
  EXPECT_THAT(ended, StatusIs(absl::StatusCode::kCancelled, HasSubstr("")));
}

TEST_F(StoreWatchTest, WatchOutlivesTheStore) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> watch,
      store_->Watch(configmaps_, "", FromVersion(store_->CurrentResourceVersion())));
  store_.reset();
  ASSERT_OK(watch->Next(milliseconds(0)).status());
  watch->Stop();
}

TEST_F(StoreWatchTest, BadStartVersionIs400) {
  ListQuery bad;
  bad.resource_version = "yesterday";
  EXPECT_EQ(HttpCodeOf(store_->Watch(configmaps_, "", bad).status()), 400);
}

}  // namespace
}  // namespace wavepool::testing::apiserver
