// x-kubernetes-validations in the test API server: rules compiled when a CRD is written (a rule
// that does not compile refuses the CRD, naming the rule's path) and evaluated on custom objects
// after defaulting, with kube-apiserver's field causes.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/apiserver/store_test_util.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/apiserver/structural_schema.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// `message` is a string or a matcher of one.
MATCHER_P3(Cause, reason, field, message, "") {
  *result_listener << "{" << arg.reason << ", " << arg.field << ", " << arg.message << "}";
  return arg.reason == reason && arg.field == field &&
         ::testing::Matches(::testing::Matcher<std::string>(message))(arg.message);
}

// A job schema whose spec carries `rules` (gpus, batch, role, an optional checkpoint object with
// its own rule, a list of workers with a rule on each, and labels).
json JobSchema(json rules) {
  json schema = json::parse(R"js({
    "type": "object",
    "properties": {
      "spec": {
        "type": "object",
        "properties": {
          "gpus": {"type": "integer", "minimum": 1},
          "batch": {"type": "integer"},
          "rate": {"type": "number"},
          "role": {"type": "string", "enum": ["Foreground", "Background"]},
          "checkpoint": {"type": "object",
            "x-kubernetes-validations": [{"rule": "has(self.path)", "message": "path required"}],
            "properties": {"path": {"type": "string"}, "every": {"type": "integer"}}},
          "workers": {"type": "array", "items": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.rank >= 0", "fieldPath": ".rank",
                                          "message": "must be >= 0"}],
            "properties": {"rank": {"type": "integer"}}}},
          "labels": {"type": "object", "additionalProperties": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self != ''"}]}}
        }
      },
      "status": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.low <= self.high", "fieldPath": ".low",
                                      "message": "must be <= high"}],
        "properties": {"low": {"type": "integer", "default": 0},
                       "high": {"type": "integer", "default": 0}}}
    }
  })js");
  schema["properties"]["spec"]["x-kubernetes-validations"] = std::move(rules);
  return schema;
}

json DefaultRules() {
  return json::parse(R"js([
    {"rule": "!has(self.gpus) || !has(self.batch) || self.batch >= self.gpus",
     "fieldPath": ".batch", "message": "must be >= spec.gpus"},
    {"rule": "!has(self.role) || self.role != 'Background' || self.gpus == 1"}
  ])js");
}

std::vector<FieldCause> Validate(const json& schema, const json& spec) {
  absl::StatusOr<StructuralSchema> parsed = StructuralSchema::Parse(schema);
  EXPECT_OK(parsed.status());
  if (!parsed.ok()) return {};
  return parsed->Validate({{"spec", spec}});
}

std::vector<FieldCause> Check(json rules) {
  return StructuralSchema::Check(JobSchema(std::move(rules)), "spec.validation.openAPIV3Schema");
}

constexpr char kRulePath[] =
    "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";

TEST(ValidationRules, OfTheSchemaCompileAndPassValidObjects) {
  EXPECT_THAT(Check(DefaultRules()), IsEmpty());
  EXPECT_THAT(Validate(JobSchema(DefaultRules()), {{"gpus", 2}, {"batch", 4}}), IsEmpty());
}

// An update ratchets (Kubernetes 1.30+): an object stored before its CRD gained a rule can still
// have its status written, while a changed node is checked whole.
TEST(ValidationRules, AnUnchangedNodeOfAnUpdateIsNotEvaluatedAgain) {
  ASSERT_OK_AND_ASSIGN(StructuralSchema schema, StructuralSchema::Parse(JobSchema(DefaultRules())));
  const json stored = {{"spec", {{"gpus", 4}, {"batch", 2}}},
                       {"status", {{"low", 0}, {"high", 1}}}};
  json status_write = stored;
  status_write["status"]["high"] = 2;
  EXPECT_THAT(schema.Validate(status_write, &stored), IsEmpty());
  json spec_edit = stored;
  spec_edit["spec"]["gpus"] = 3;
  EXPECT_THAT(schema.Validate(spec_edit, &stored),
              ElementsAre(Cause("FieldValueInvalid", "spec.batch",
                                "Invalid value: \"object\": must be >= spec.gpus")));
  // The changed status is evaluated; so is everything on a create (no stored object).
  json bad_status = stored;
  bad_status["status"]["low"] = 5;
  EXPECT_THAT(schema.Validate(bad_status, &stored),
              ElementsAre(Cause("FieldValueInvalid", "status.low",
                                "Invalid value: \"object\": must be <= high")));
  EXPECT_THAT(schema.Validate(status_write), SizeIs(1));
  // List items are not correlated: a changed list is evaluated item by item.
  const json with_workers = {{"spec", {{"workers", json::array({{{"rank", -1}}})}}}};
  json more_workers = with_workers;
  more_workers["spec"]["workers"].push_back({{"rank", 1}});
  EXPECT_THAT(schema.Validate(with_workers, &with_workers), IsEmpty());
  EXPECT_THAT(schema.Validate(more_workers, &with_workers), SizeIs(1));
}

TEST(ValidationRules, FalseRuleIsACauseAtTheNodePlusFieldPath) {
  EXPECT_THAT(Validate(JobSchema(DefaultRules()), {{"gpus", 4}, {"batch", 2}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.batch",
                                "Invalid value: \"object\": must be >= spec.gpus")));
  // Without a message: "failed rule: <rule>" on the node itself.
  EXPECT_THAT(
      Validate(JobSchema(DefaultRules()), {{"gpus", 2}, {"batch", 4}, {"role", "Background"}}),
      ElementsAre(Cause("FieldValueInvalid", "spec",
                        "Invalid value: \"object\": failed rule: !has(self.role) || self.role != "
                        "'Background' || self.gpus == 1")));
}

TEST(ValidationRules, ReasonPicksTheCauseType) {
  const auto with_reason = [](const char* reason) {
    return json::array({{{"rule", "self.gpus == 1"}, {"reason", reason}, {"message", "one"}}});
  };
  EXPECT_THAT(Validate(JobSchema(with_reason("FieldValueForbidden")), {{"gpus", 2}}),
              ElementsAre(Cause("FieldValueForbidden", "spec", "Forbidden: one")));
  EXPECT_THAT(Validate(JobSchema(with_reason("FieldValueRequired")), {{"gpus", 2}}),
              ElementsAre(Cause("FieldValueRequired", "spec", "Required value: one")));
  EXPECT_THAT(Validate(JobSchema(with_reason("FieldValueDuplicate")), {{"gpus", 2}}),
              ElementsAre(Cause("FieldValueDuplicate", "spec", "Duplicate value: \"object\"")));
}

// Every node present is evaluated: array items by index, map values by key; an absent optional
// object's rules are not.
TEST(ValidationRules, ApplyAtEveryPresentNode) {
  const json schema = JobSchema(json::array());
  EXPECT_THAT(Validate(schema, {{"gpus", 1}}), IsEmpty());
  EXPECT_THAT(Validate(schema, {{"checkpoint", {{"every", 2}}},
                                {"workers", {{{"rank", 0}}, {{"rank", -1}}}},
                                {"labels", {{"team", ""}, {"ok", "x"}}}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.checkpoint",
                                "Invalid value: \"object\": path required"),
                          Cause("FieldValueInvalid", "spec.labels[team]",
                                "Invalid value: \"string\": failed rule: self != ''"),
                          Cause("FieldValueInvalid", "spec.workers[1].rank",
                                "Invalid value: \"object\": must be >= 0")));
}

// An evaluation error is a cause too, on the node, as kube-apiserver reports it.
TEST(ValidationRules, EvaluationErrorIsACause) {
  const json rules = json::array({{{"rule", "self.gpus >= 1"}, {"message", "gpus"}}});
  EXPECT_THAT(Validate(JobSchema(rules), {{"batch", 1}}),
              ElementsAre(Cause("FieldValueInvalid", "spec",
                                "Invalid value: \"object\": no such key: gpus evaluating rule: "
                                "gpus")));
}

// A value of the wrong type or outside its enum stops the rules, as hasBlockingErr does.
TEST(ValidationRules, AreNotEvaluatedOnAnObjectWithTypeErrors) {
  const std::vector<FieldCause> causes =
      Validate(JobSchema(DefaultRules()), {{"gpus", "two"}, {"batch", 1}});
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].reason, "FieldValueTypeInvalid");
  EXPECT_THAT(causes[1],
              Cause("FieldValueInvalid", "",
                    "Invalid value: \"null\": some validation rules were not checked because the "
                    "object was invalid; correct the existing errors to complete validation"));
}

TEST(ValidationRulesCheck, RuleThatDoesNotCompileIsRefusedWithItsPath) {
  EXPECT_THAT(Check(json::array({{{"rule", "self.gpus > 1"}}, {{"rule", "self.gpu > 1"}}})),
              ElementsAre(Cause("FieldValueInvalid", std::string(kRulePath) + "[1].rule",
                                "Invalid value: \"self.gpu > 1\": compilation failed: ERROR: "
                                "<input>:1:6: undefined field 'gpu'\n | self.gpu > 1\n | .....^")));
  EXPECT_THAT(Check(json::array({{{"rule", "self.gpus.size() > 1"}}})),
              ElementsAre(Cause("FieldValueInvalid", std::string(kRulePath) + "[0].rule",
                                HasSubstr("function 'size' is not supported here"))));
}

TEST(ValidationRulesCheck, UnsupportedAndMalformedRulesAreRefused) {
  const json rules = json::parse(R"js([
    {"rule": "self.gpus == oldSelf.gpus", "message": "immutable"},
    {"rule": "self.gpus > 0", "messageExpression": "'gpus: ' + string(self.gpus)"},
    {"rule": "  "},
    {"rule": "self.gpus > 0", "reason": "FieldValueTooLong"},
    {"rule": "self.gpus > 0", "fieldPath": ".gpu"},
    {"rule": "self.gpus > 0", "message": "two\nlines"},
    {"rule": "self.gpus > 0 &&\nself.gpus < 9"}
  ])js");
  const std::string at = kRulePath;
  EXPECT_THAT(
      Check(rules),
      ElementsAre(
          Cause("FieldValueInvalid", at + "[0].rule",
                HasSubstr("Invalid value: \"self.gpus == oldSelf.gpus\": compilation failed: "
                          "ERROR: <input>:1:14: transition rules (oldSelf) are not supported "
                          "here")),
          Cause("FieldValueInvalid", at + "[1].messageExpression",
                HasSubstr("messageExpression is not supported by this API server")),
          Cause("FieldValueRequired", at + "[2].rule", "Required value: rule is not specified"),
          Cause("FieldValueNotSupported", at + "[3].reason",
                "Unsupported value: \"FieldValueTooLong\": supported values: "
                "\"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", "
                "\"FieldValueRequired\""),
          Cause("FieldValueInvalid", at + "[4].fieldPath",
                "Invalid value: \".gpu\": fieldPath must be a valid path: does not refer to a "
                "valid field"),
          Cause("FieldValueInvalid", at + "[5].message",
                "Invalid value: \"two\\nlines\": message must not contain line breaks"),
          Cause("FieldValueRequired", at + "[6].message",
                "Required value: message must be specified if rule contains line breaks")));
}

// Rules under allOf/anyOf/oneOf/not are not structural (and would never run): refused.
TEST(ValidationRulesCheck, RuleUnderAJunctorIsNotStructural) {
  json schema = JobSchema(json::array());
  schema["properties"]["spec"]["allOf"] =
      json::array({{{"x-kubernetes-validations", {{{"rule", "self.gpus > 0"}}}}}});
  EXPECT_THAT(StructuralSchema::Check(schema, "s"),
              ElementsAre(Cause("FieldValueForbidden",
                                "s.properties[spec].allOf[0].x-kubernetes-validations",
                                "Forbidden: must be empty to be structural")));
}

// A default must satisfy the rules of its node, once given its own nested defaults.
TEST(ValidationRulesCheck, DefaultThatBreaksARuleIsRefused) {
  json schema = JobSchema(json::array());
  schema["properties"]["status"]["default"] = {{"low", 2}};
  EXPECT_THAT(StructuralSchema::Check(schema, "s"),
              ElementsAre(Cause("FieldValueInvalid", "s.properties[status].default.low",
                                "Invalid value: \"object\": must be <= high")));
}

json Crd(json rules) {
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", "jobs.example.dev"}}},
          {"spec",
           {{"group", "example.dev"},
            {"scope", "Namespaced"},
            {"names", {{"plural", "jobs"}, {"kind", "Job"}}},
            {"versions",
             {{{"name", "v1"},
               {"served", true},
               {"storage", true},
               {"subresources", {{"status", json::object()}}},
               {"schema", {{"openAPIV3Schema", JobSchema(std::move(rules))}}}}}}}}};
}

class ValidationRulesStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenMemoryStore();
    ASSERT_NE(store_, nullptr);
    crds_ = Resource(*store_, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
  }

  std::unique_ptr<ObjectStore> store_;
  ResourceInfo crds_;
};

TEST_F(ValidationRulesStoreTest, CrdWithARuleThatDoesNotCompileIs422) {
  absl::StatusOr<WriteResult> made =
      store_->Create(crds_, "", Crd(json::array({{{"rule", "self.gpus > 'one'"}}})), {});
  ASSERT_EQ(HttpCodeOf(made.status()), 422) << made.status();
  EXPECT_THAT(made.status().message(),
              HasSubstr("CustomResourceDefinition.apiextensions.k8s.io \"jobs.example.dev\" is "
                        "invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec]."
                        "x-kubernetes-validations[0].rule: Invalid value: \"self.gpus > 'one'\": "
                        "compilation failed: ERROR: <input>:1:11: found no matching overload for "
                        "'_>_' applied to '(int, string)'"));
  EXPECT_FALSE(store_->FindResource("example.dev", "v1", "jobs").has_value());
}

TEST_F(ValidationRulesStoreTest, CreateAndStatusWritesAreCheckedAfterDefaulting) {
  ASSERT_OK(store_->Create(crds_, "", Crd(DefaultRules()), {}).status());
  const ResourceInfo jobs = Resource(*store_, "example.dev", "v1", "jobs");
  json job = Named("j", {{"spec", {{"gpus", 4}, {"batch", 2}}}});
  absl::StatusOr<WriteResult> made = store_->Create(jobs, "default", job, {});
  ASSERT_EQ(HttpCodeOf(made.status()), 422) << made.status();
  EXPECT_EQ(made.status().message(),
            "Job.example.dev \"j\" is invalid: spec.batch: Invalid value: \"object\": must be >= "
            "spec.gpus");
  const json causes = StatusBodyOf(made.status())["details"]["causes"];
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0]["field"], "spec.batch");
  EXPECT_EQ(causes[0]["reason"], "FieldValueInvalid");

  job["spec"]["batch"] = 8;
  ASSERT_OK(store_->Create(jobs, "default", job, {}).status());
  // The status rule sees the defaults (low and high 0) and then the written values.
  absl::StatusOr<WriteResult> status =
      store_->Modify(jobs, "default", "j", "status",
                     [](const json& current) -> absl::StatusOr<json> {
                       json next = current;
                       next["status"] = {{"low", 3}};
                       return next;
                     },
                     {});
  ASSERT_EQ(HttpCodeOf(status.status()), 422) << status.status();
  EXPECT_THAT(status.status().message(),
              HasSubstr("status.low: Invalid value: \"object\": must be <= high"));
  ASSERT_OK(store_
                ->Modify(jobs, "default", "j", "status",
                         [](const json& current) -> absl::StatusOr<json> {
                           json next = current;
                           next["status"] = {{"high", 3}};
                           return next;
                         },
                         {})
                .status());
}

}  // namespace
}  // namespace wavepool::testing::apiserver
