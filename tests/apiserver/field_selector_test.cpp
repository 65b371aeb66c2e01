#include "tests/support/apiserver/field_selector.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;

const nlohmann::json kPod = {{"metadata", {{"name", "p"}, {"namespace", "team"}}},
                             {"spec", {{"nodeName", "gpu-1"}}},
                             {"status", {{"phase", "Running"}}}};

bool Selects(const std::string& selector, const std::string& resource,
             const nlohmann::json& object) {
  absl::StatusOr<FieldSelector> parsed = FieldSelector::Parse(selector, resource, false);
  EXPECT_TRUE(parsed.ok()) << selector << ": " << parsed.status();
  return parsed.ok() && parsed->Matches(SelectableFields(resource, object));
}

TEST(FieldSelector, PodFields) {
  EXPECT_TRUE(Selects("spec.nodeName=gpu-1", "pods", kPod));
  EXPECT_TRUE(Selects("spec.nodeName==gpu-1,status.phase=Running", "pods", kPod));
  EXPECT_FALSE(Selects("status.phase!=Running", "pods", kPod));
  EXPECT_TRUE(Selects("metadata.name=p,metadata.namespace=team", "pods", kPod));
  EXPECT_FALSE(Selects("spec.nodeName=", "pods", kPod));
  EXPECT_TRUE(Selects("spec.nodeName=", "pods", {{"metadata", {{"name", "q"}}}}));
}

TEST(FieldSelector, EventInvolvedObjectFields) {
  const nlohmann::json event = {{"metadata", {{"name", "e"}, {"namespace", "team"}}},
                                {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"uid", "u1"}}},
                                {"reason", "Started"},
                                {"type", "Normal"}};
  EXPECT_TRUE(Selects("involvedObject.kind=Pod,involvedObject.name=p", "events", event));
  EXPECT_TRUE(Selects("involvedObject.uid=u1,reason=Started,type=Normal", "events", event));
  EXPECT_FALSE(Selects("involvedObject.name=q", "events", event));
}

TEST(FieldSelector, EscapedSeparators) {
  const nlohmann::json odd = {{"metadata", {{"name", "a,b=c"}}}};
  EXPECT_TRUE(Selects(R"(metadata.name=a\,b\=c)", "configmaps", odd));
}

TEST(FieldSelector, UnsupportedFieldsAreRejectedLikeTheRealServer) {
  EXPECT_THAT(FieldSelector::Parse("spec.foo=bar", "pods", false),
              StatusIs(absl::StatusCode::kInvalidArgument, "field label not supported: spec.foo"));
  EXPECT_THAT(
      FieldSelector::Parse("spec.nodeName=x", "configmaps", false),
      StatusIs(absl::StatusCode::kInvalidArgument, "field label not supported: spec.nodeName"));
  EXPECT_THAT(FieldSelector::Parse("spec.gpus=2", "trainingjobs.wavepool.dev", true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"spec.gpus\" is not a known field selector: only \"metadata.name\", "
                       "\"metadata.namespace\""));
  EXPECT_THAT(FieldSelector::Parse("metadata.name", "pods", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid selector")));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
