#include "wavepool/api/object_key.h"

#include <functional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/hash/hash_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::api {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

TEST(ObjectKey, ParsesANamespacedKeyAndWritesItBack) {
  ASSERT_OK_AND_ASSIGN(const ObjectKey key, ObjectKey::Parse("default/vgg"));
  EXPECT_EQ(key.namespace_, "default");
  EXPECT_EQ(key.name, "vgg");
  EXPECT_EQ(key.ToString(), "default/vgg");
}

TEST(ObjectKey, ParsesAClusterScopedKeyAsAnEmptyNamespace) {
  ASSERT_OK_AND_ASSIGN(const ObjectKey key, ObjectKey::Parse("node-a"));
  EXPECT_EQ(key.namespace_, "");
  EXPECT_EQ(key.name, "node-a");
  EXPECT_EQ(key.ToString(), "node-a");
}

TEST(ObjectKey, ReadsTheSameKeyAsNamespacedNameWrites) {
  ObjectMeta metadata;
  metadata.name = "vgg";
  metadata.namespace_ = "team-a";
  EXPECT_EQ(ObjectKey::Of(metadata), (ObjectKey{"team-a", "vgg"}));
  EXPECT_EQ(ObjectKey::Of(metadata).ToString(), NamespacedName(metadata));
  metadata.namespace_.clear();
  EXPECT_EQ(ObjectKey::Of(metadata).ToString(), NamespacedName(metadata));
  ASSERT_OK_AND_ASSIGN(const ObjectKey back, ObjectKey::Parse(NamespacedName(metadata)));
  EXPECT_EQ(back, ObjectKey::Of(metadata));
}

TEST(ObjectKey, RejectsMalformedKeysNamingTheKeyAndTheProblem) {
  EXPECT_THAT(ObjectKey::Parse(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty key")));
  EXPECT_THAT(ObjectKey::Parse("/vgg"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("object key \"/vgg\": want \"namespace/name\"")));
  EXPECT_THAT(ObjectKey::Parse("/vgg"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty namespace")));
  EXPECT_THAT(ObjectKey::Parse("default/"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty name")));
  EXPECT_THAT(ObjectKey::Parse("a/b/c"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("object key \"a/b/c\": want \"namespace/name\" or \"name\" "
                                 "(cluster-scoped), got 2 '/'")));
}

TEST(ObjectKey, OrdersByNamespaceThenName) {
  const std::set<ObjectKey> keys = {{"b", "a"}, {"a", "z"}, {"a", "b"}, {"", "node"}};
  std::vector<std::string> order;
  for (const ObjectKey& key : keys) order.push_back(key.ToString());
  EXPECT_THAT(order, ::testing::ElementsAre("node", "a/b", "a/z", "b/a"));
  EXPECT_NE((ObjectKey{"a", "b"}), (ObjectKey{"a", "c"}));
  EXPECT_NE((ObjectKey{"a", "b"}), (ObjectKey{"", "b"}));
}

TEST(ObjectKey, HashesConsistentlyWithEquality) {
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly({
      ObjectKey{"", ""},
      ObjectKey{"", "a"},
      ObjectKey{"a", ""},
      ObjectKey{"a", "b"},
      ObjectKey{"ab", ""},
      ObjectKey{"", "ab"},
  }));
  // The parts are kept apart: a namespaced key and a cluster-scoped name that reads the same
  // are different keys.
  const std::unordered_set<ObjectKey> keys = {{"a", "b"}, {"a", "b"}, {"b", "a"}, {"", "a/b"}};
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_EQ(std::hash<ObjectKey>{}(ObjectKey{"a", "b"}),
            std::hash<ObjectKey>{}(ObjectKey{"a", "b"}));
}

}  // namespace
}  // namespace wavepool::api
