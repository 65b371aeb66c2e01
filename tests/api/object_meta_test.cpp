#include "wavepool/api/object_meta.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/validation.h"

namespace wavepool::api {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

TEST(ObjectMeta, UnmodelledFieldsAreKeptAndModelledOnesWin) {
  const nlohmann::json document = nlohmann::json::parse(R"({
    "name": "vgg", "namespace": "default", "generation": 2,
    "managedFields": [{"manager": "kubectl"}], "deletionGracePeriodSeconds": 30,
    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u",
                         "futureField": {"x": 1}}]
  })");
  ASSERT_OK_AND_ASSIGN(ObjectMeta metadata, ObjectMeta::FromJson(document));
  EXPECT_EQ(
      metadata.unknown_fields,
      nlohmann::json::parse(
          R"({"managedFields": [{"manager": "kubectl"}], "deletionGracePeriodSeconds": 30})"));
  EXPECT_EQ(ToJson(metadata), document);
  // A stale copy of a modelled field in unknown_fields never overrides the field.
  metadata.unknown_fields["name"] = "stale";
  EXPECT_EQ(ToJson(metadata)["name"], "vgg");
}

TEST(ObjectMeta, EmptyFieldsAreOmitted) {
  ObjectMeta metadata;
  metadata.name = "x";
  EXPECT_EQ(ToJson(metadata), nlohmann::json({{"name", "x"}}));
  EXPECT_EQ(NamespacedName(metadata), "x");
  metadata.namespace_ = "ns";
  EXPECT_EQ(NamespacedName(metadata), "ns/x");
}

TEST(Condition, JsonRoundTripAndRequiredStatus) {
  const nlohmann::json document = nlohmann::json::parse(R"({
    "type": "Planned", "status": "Unknown", "observedGeneration": 4,
    "lastTransitionTime": "2026-05-01T10:00:00Z", "reason": "Planning", "message": "..."})");
  ASSERT_OK_AND_ASSIGN(Condition condition, Condition::FromJson(document));
  EXPECT_EQ(condition.status, ConditionStatus::kUnknown);
  EXPECT_EQ(ToJson(condition), document);
  nlohmann::json without_status = document;
  without_status.erase("status");
  EXPECT_THAT(Condition::FromJson(without_status),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("status: required")));
}

TEST(Condition, SetConditionMovesTransitionTimeOnlyWhenStatusChanges) {
  using std::chrono::seconds;
  const std::chrono::system_clock::time_point t0{seconds(1777629600)};  // 2026-05-01T10:00:00Z
  std::vector<Condition> conditions;
  EXPECT_TRUE(
      SetCondition(&conditions, {"Planned", ConditionStatus::kFalse, 1, "", "Planning", ""}, t0));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].last_transition_time, "2026-05-01T10:00:00Z");

  // Same status, new reason: updated, but the transition time stays.
  EXPECT_TRUE(SetCondition(&conditions,
                           {"Planned", ConditionStatus::kFalse, 1, "", "StillPlanning", ""},
                           t0 + seconds(60)));
  EXPECT_EQ(conditions[0].reason, "StillPlanning");
  EXPECT_EQ(conditions[0].last_transition_time, "2026-05-01T10:00:00Z");

  // Nothing new: no change reported.
  EXPECT_FALSE(SetCondition(&conditions,
                            {"Planned", ConditionStatus::kFalse, 1, "", "StillPlanning", ""},
                            t0 + seconds(90)));

  // Status flips: the transition time moves.
  EXPECT_TRUE(SetCondition(&conditions, {"Planned", ConditionStatus::kTrue, 2, "", "PlanFound", ""},
                           t0 + seconds(120)));
  EXPECT_EQ(conditions[0].last_transition_time, "2026-05-01T10:02:00Z");
  EXPECT_EQ(conditions[0].observed_generation, 2);

  ASSERT_NE(FindCondition(conditions, "Planned"), nullptr);
  EXPECT_EQ(FindCondition(conditions, "Placed"), nullptr);
  EXPECT_THAT(ValidateConditions(conditions, FieldPath("status.conditions")), IsOk());
}

TEST(Rfc3339, FormatsUtcSecondsAndParsesOffsets) {
  using std::chrono::seconds;
  const std::chrono::system_clock::time_point t{seconds(1777629600)};
  EXPECT_EQ(FormatRfc3339(t), "2026-05-01T10:00:00Z");
  EXPECT_EQ(FormatRfc3339(t + std::chrono::milliseconds(999)), "2026-05-01T10:00:00Z");
  ASSERT_OK_AND_ASSIGN(auto parsed, ParseRfc3339("2026-05-01T12:00:00+02:00"));
  EXPECT_EQ(parsed, t);
  ASSERT_OK_AND_ASSIGN(parsed, ParseRfc3339("2026-05-01T10:00:00.5Z"));
  EXPECT_EQ(parsed, t + std::chrono::milliseconds(500));
  for (const char* bad : {"", "2026-05-01", "2026-05-01 10:00:00Z", "2026-13-01T10:00:00Z",
                          "10:00:00Z", "2026-05-01T10:00:00"}) {
    EXPECT_THAT(ParseRfc3339(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be an RFC 3339 time")))
        << bad;
  }
}

TEST(Names, Dns1123Rules) {
  EXPECT_TRUE(IsDns1123Subdomain("vgg16"));
  EXPECT_TRUE(IsDns1123Subdomain("a.b-c.d"));
  EXPECT_TRUE(IsDns1123Subdomain(std::string(253, 'a')));
  EXPECT_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
  EXPECT_FALSE(IsDns1123Subdomain(""));
  EXPECT_FALSE(IsDns1123Subdomain("-a"));
  EXPECT_FALSE(IsDns1123Subdomain("a-"));
  EXPECT_FALSE(IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(IsDns1123Subdomain("a.-b"));
  EXPECT_FALSE(IsDns1123Subdomain("A"));
  EXPECT_FALSE(IsDns1123Subdomain("a_b"));
  EXPECT_TRUE(IsDns1123Label("team-a"));
  EXPECT_TRUE(IsDns1123Label(std::string(63, 'a')));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_FALSE(IsDns1123Label("a.b"));
}

TEST(FieldPaths, BuildParentAndContext) {
  const FieldPath path = FieldPath("stages").Index(3).Child("ranks").Index(1);
  EXPECT_EQ(path.str(), "stages[3].ranks[1]");
  EXPECT_EQ(ParentPath("stages[3].ranks[1]"), "stages[3].ranks");
  EXPECT_EQ(ParentPath("stages[3]"), "stages");
  EXPECT_EQ(ParentPath("metadata.labels[app.kubernetes.io/name]"), "metadata.labels");
  EXPECT_EQ(ParentPath("spec"), "");
  const absl::Status status = WithContext(path.Invalid("rank 9 is outside [0, 8)"), "Plan");
  EXPECT_EQ(status.message(), "Plan: stages[3].ranks[1]: rank 9 is outside [0, 8)");
  EXPECT_EQ(FieldPathOf(status), "stages[3].ranks[1]");
  EXPECT_EQ(FieldPathOf(absl::InvalidArgumentError("x")), std::nullopt);
  EXPECT_TRUE(WithContext(absl::OkStatus(), "Plan").ok());
}

TEST(LenientFields, AbsentNullMistypedAndNonObjectsReadAsAbsent) {
  const nlohmann::json meta = nlohmann::json::parse(R"({
    "namespace": "team", "generation": 3, "uid": null, "finalizers": "x",
    "labels": {"wavepool.dev/job": "vgg", "replicas": 4}})");
  EXPECT_EQ(FieldAs<std::string>(meta, "namespace"), "team");
  EXPECT_EQ(FieldAs<std::int64_t>(meta, "generation"), 3);
  EXPECT_EQ(FieldAs<std::string>(meta, "generation"), std::nullopt);  // a number
  EXPECT_EQ(FieldAs<bool>(meta, "finalizers"), std::nullopt);         // a string
  EXPECT_EQ(FieldAs<std::string>(meta, "uid"), std::nullopt);         // null
  EXPECT_EQ(FieldAs<std::string>(meta, "name"), std::nullopt);        // absent
  EXPECT_EQ(FieldOrNull(meta, "generation"), 3);
  EXPECT_EQ(FieldOrNull(meta, "finalizers"), "x");
  EXPECT_TRUE(FieldOrNull(meta, "uid").is_null());
  EXPECT_TRUE(FieldOrNull(meta, "name").is_null());
  // One label reads on its own; the whole map does not decode with a number in it.
  const nlohmann::json& labels = FieldOrNull(meta, "labels");
  EXPECT_EQ(labels, meta.at("labels"));
  EXPECT_EQ(FieldAs<std::string>(labels, "wavepool.dev/job"), "vgg");
  EXPECT_EQ(FieldAs<std::string>(labels, "replicas"), std::nullopt);
  EXPECT_EQ((FieldAs<std::map<std::string, std::string>>(meta, "labels")), std::nullopt);
  // Every field of a value that is not an object is absent.
  for (const nlohmann::json& not_object : {nlohmann::json(), nlohmann::json::array({meta}),
                                           nlohmann::json("team"), nlohmann::json(7)}) {
    EXPECT_TRUE(FieldOrNull(not_object, "namespace").is_null()) << not_object.dump();
    EXPECT_EQ(FieldAs<std::string>(not_object, "namespace"), std::nullopt) << not_object.dump();
  }
  EXPECT_EQ(FieldAs<std::string>(FieldOrNull(meta, "spec"), "nodeName"), std::nullopt);
}

TEST(Enums, WireNamesRoundTrip) {
  EXPECT_EQ(ToString(Optimizer::kSgd), "SGD");
  EXPECT_EQ(ParseEnum<Strategy>("ModelParallelWaves"), Strategy::kModelParallelWaves);
  EXPECT_EQ(ParseEnum<Strategy>("modelparallelwaves"), std::nullopt);
  EXPECT_EQ(ParseEnum<CollectiveAlgorithm>("tree"), CollectiveAlgorithm::kTree);
  EXPECT_EQ(EnumNames<Toggle>(), "Auto, On, Off");
  EXPECT_EQ(EnumNames<ConditionStatus>(), "True, False, Unknown");
}

}  // namespace
}  // namespace wavepool::api
