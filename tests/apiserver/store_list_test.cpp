// Lists: order, selectors, paging with continue tokens, and resourceVersion semantics.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/store_test_util.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const ListResult& list) {
  std::vector<std::string> names;
  for (const nlohmann::json& item : list.items) {
    names.push_back(item["metadata"].value("namespace", "") + "/" +
                    item["metadata"]["name"].get<std::string>());
  }
  return names;
}

class StoreListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenMemoryStore();
    ASSERT_NE(store_, nullptr);
    pods_ = Resource(*store_, "", "v1", "pods");
    namespaces_ = Resource(*store_, "", "v1", "namespaces");
    events_ = Resource(*store_, "", "v1", "events");
    ASSERT_OK(store_->Create(namespaces_, "", Named("b-team"), {}).status());
    ASSERT_OK(store_->Create(namespaces_, "", Named("a-team"), {}).status());
    Pod("b-team", "z", "web", "n1", "Running");
    Pod("a-team", "y", "db", "n2", "Pending");
    Pod("a-team", "x", "web", "n2", "Pending");
  }
  void Pod(const std::string& ns, const std::string& name, const std::string& app,
           const std::string& node, const std::string& phase) {
    nlohmann::json pod = Named(name, {{"spec", {{"nodeName", node}}}});
    pod["metadata"]["labels"] = {{"app", app}};
    ASSERT_OK_AND_ASSIGN(WriteResult made, store_->Create(pods_, ns, pod, {}));
    made.object["status"]["phase"] = phase;
    ASSERT_OK(store_->Update(pods_, ns, name, made.object, "status", {}).status());
  }
  ListResult ListOk(const std::string& ns, const ListQuery& query) {
    absl::StatusOr<ListResult> list = store_->List(pods_, ns, query);
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? *list : ListResult{};
  }

  std::unique_ptr<ObjectStore> store_;
  ResourceInfo pods_, namespaces_, events_;
};

TEST_F(StoreListTest, ItemsAreSortedByNamespaceThenName) {
  const ListResult all = ListOk("", {});
  EXPECT_THAT(Names(all), ElementsAre("a-team/x", "a-team/y", "b-team/z"));
  EXPECT_EQ(all.resource_version, std::to_string(store_->CurrentResourceVersion()));
  EXPECT_TRUE(all.continue_token.empty());
  EXPECT_FALSE(all.remaining_item_count.has_value());
  EXPECT_THAT(Names(ListOk("a-team", {})), ElementsAre("a-team/x", "a-team/y"));
}

TEST_F(StoreListTest, LabelAndFieldSelectorsFilter) {
  ListQuery web;
  web.label_selector = "app=web";
  EXPECT_THAT(Names(ListOk("", web)), ElementsAre("a-team/x", "b-team/z"));
  ListQuery on_n2;
  on_n2.field_selector = "spec.nodeName=n2,status.phase=Pending";
  EXPECT_THAT(Names(ListOk("", on_n2)), ElementsAre("a-team/x", "a-team/y"));
  ListQuery both;
  both.label_selector = "app notin (db)";
  both.field_selector = "metadata.namespace=a-team";
  EXPECT_THAT(Names(ListOk("", both)), ElementsAre("a-team/x"));
}

TEST_F(StoreListTest, BadSelectorsAre400) {
  ListQuery bad_field;
  bad_field.field_selector = "spec.colour=red";
  absl::StatusOr<ListResult> list = store_->List(pods_, "", bad_field);
  EXPECT_THAT(
      list, StatusIs(absl::StatusCode::kInvalidArgument, "field label not supported: spec.colour"));
  EXPECT_EQ(HttpCodeOf(list.status()), 400);
  EXPECT_EQ(StatusBodyOf(list.status())["reason"], "BadRequest");
  ListQuery bad_label;
  bad_label.label_selector = "app in web";
  EXPECT_EQ(HttpCodeOf(store_->List(pods_, "", bad_label).status()), 400);
}

TEST_F(StoreListTest, PagesShareOneSnapshot) {
  ListQuery page;
  page.limit = 2;
  const ListResult first = ListOk("", page);
  EXPECT_THAT(Names(first), ElementsAre("a-team/x", "a-team/y"));
  ASSERT_FALSE(first.continue_token.empty());
  ASSERT_TRUE(first.remaining_item_count.has_value());
  EXPECT_EQ(*first.remaining_item_count, 1);
  // A pod created between pages is not in the snapshot the token holds.
  ASSERT_OK(store_->Create(namespaces_, "", Named("c-team"), {}).status());
  ASSERT_OK(store_->Create(pods_, "c-team", Named("late"), {}).status());
  page.continue_token = first.continue_token;
  const ListResult second = ListOk("", page);
  EXPECT_THAT(Names(second), ElementsAre("b-team/z"));
  EXPECT_EQ(second.resource_version, first.resource_version);
  EXPECT_TRUE(second.continue_token.empty());
}

TEST_F(StoreListTest, ContinueTokenProblems) {
  ListQuery bad;
  bad.continue_token = "not-a-token";
  EXPECT_THAT(store_->List(pods_, "", bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("continue key is not valid")));
  ListQuery page;
  page.limit = 1;
  const ListResult first = ListOk("", page);
  ListQuery with_rv;
  with_rv.continue_token = first.continue_token;
  with_rv.resource_version = "5";
  EXPECT_THAT(store_->List(pods_, "", with_rv),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "specifying resource version is not allowed when using continue"));
  ASSERT_OK(store_->Create(Resource(*store_, "", "v1", "configmaps"), "default", Named("c"), {})
                .status());
  store_->Compact();
  page.continue_token = first.continue_token;
  absl::StatusOr<ListResult> expired = store_->List(pods_, "", page);
  EXPECT_THAT(expired, StatusIs(absl::StatusCode::kOutOfRange,
                                HasSubstr("The provided continue parameter is too old")));
  EXPECT_EQ(HttpCodeOf(expired.status()), 410);
  EXPECT_EQ(StatusBodyOf(expired.status())["reason"], "Expired");
}

TEST_F(StoreListTest, RemainingItemCountOnlyWithoutSelectors) {
  ListQuery page;
  page.limit = 1;
  page.label_selector = "app=web";
  const ListResult first = ListOk("", page);
  EXPECT_FALSE(first.continue_token.empty());
  EXPECT_FALSE(first.remaining_item_count.has_value());
}

TEST_F(StoreListTest, ExactResourceVersionServesThePast) {
  const std::int64_t then = store_->CurrentResourceVersion();
  DeleteRequest now;
  now.grace_period_seconds = 0;  // bound: no graceful termination
  ASSERT_OK(store_->Delete(pods_, "a-team", "x", now).status());
  ListQuery exact = FromVersion(then);
  exact.resource_version_match = "Exact";
  const ListResult past = ListOk("", exact);
  EXPECT_THAT(Names(past), ElementsAre("a-team/x", "a-team/y", "b-team/z"));
  EXPECT_EQ(past.resource_version, std::to_string(then));
  EXPECT_THAT(Names(ListOk("", {})), ElementsAre("a-team/y", "b-team/z"));
  // NotOlderThan (and "0") may answer from the newest state.
  ListQuery not_older = FromVersion(then);
  not_older.resource_version_match = "NotOlderThan";
  EXPECT_EQ(ListOk("", not_older).items.size(), 2u);
  EXPECT_EQ(ListOk("", FromVersion(0)).items.size(), 2u);
}

TEST_F(StoreListTest, ResourceVersionRules) {
  const std::int64_t now = store_->CurrentResourceVersion();
  absl::StatusOr<ListResult> too_large = store_->List(pods_, "", FromVersion(now + 10));
  EXPECT_EQ(HttpCodeOf(too_large.status()), 504);
  EXPECT_THAT(too_large.status().message(), HasSubstr("Too large resource version"));
  ListQuery match_only;
  match_only.resource_version_match = "Exact";
  EXPECT_THAT(store_->List(pods_, "", match_only),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resourceVersionMatch is forbidden unless resourceVersion is "
                                 "provided")));
  ListQuery exact_zero = FromVersion(0);
  exact_zero.resource_version_match = "Exact";
  EXPECT_EQ(HttpCodeOf(store_->List(pods_, "", exact_zero).status()), 422);
  ListQuery unknown = FromVersion(1);
  unknown.resource_version_match = "Newest";
  EXPECT_EQ(HttpCodeOf(store_->List(pods_, "", unknown).status()), 422);
  ListQuery garbage;
  garbage.resource_version = "abc";
  EXPECT_EQ(HttpCodeOf(store_->List(pods_, "", garbage).status()), 400);
  store_->Compact();
  ASSERT_OK(store_->Delete(pods_, "a-team", "x", {}).status());
  ListQuery old = FromVersion(now - 1);
  old.resource_version_match = "Exact";
  absl::StatusOr<ListResult> expired = store_->List(pods_, "", old);
  EXPECT_EQ(HttpCodeOf(expired.status()), 410);
  ListQuery negative;
  negative.limit = -1;
  EXPECT_EQ(HttpCodeOf(store_->List(pods_, "", negative).status()), 422);
}

TEST_F(StoreListTest, EventsSelectByInvolvedObject) {
  nlohmann::json event = Named("p.1");
  event["involvedObject"] = {{"kind", "Pod"}, {"name", "x"}, {"namespace", "a-team"}};
  event["reason"] = "Scheduled";
  ASSERT_OK(store_->Create(events_, "a-team", event, {}).status());
  ListQuery about_x;
  about_x.field_selector = "involvedObject.kind=Pod,involvedObject.name=x";
  ASSERT_OK_AND_ASSIGN(ListResult list, store_->List(events_, "a-team", about_x));
  EXPECT_EQ(list.items.size(), 1u);
  about_x.field_selector = "involvedObject.name=y";
  ASSERT_OK_AND_ASSIGN(ListResult none, store_->List(events_, "a-team", about_x));
  EXPECT_TRUE(none.items.empty());
}

}  // namespace
}  // namespace wavepool::testing::apiserver
