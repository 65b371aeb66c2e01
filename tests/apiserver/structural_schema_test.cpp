// CRD structural schemas: the checks on the schema, defaulting, pruning and validation, with the
// real server's wording (apiextensions-apiserver, k8s.io/apimachinery field errors).
#include "tests/support/apiserver/structural_schema.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/apiserver/field_errors.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

MATCHER_P3(Cause, reason, field, message, "") {
  *result_listener << "{" << arg.reason << ", " << arg.field << ", " << arg.message << "}";
  return arg.reason == reason && arg.field == field && arg.message == message;
}

const json& TrainingJobSchema() {
  static const json* schema = new json(json::parse(R"({
    "type": "object",
    "properties": {
      "spec": {
        "type": "object",
        "required": ["gpus"],
        "properties": {
          "gpus": {"type": "integer", "minimum": 1, "maximum": 64},
          "seed": {"type": "integer", "format": "int32"},
          "policy": {"type": "string", "enum": ["Foreground", "Background"],
                     "default": "Foreground"},
          "name": {"type": "string", "minLength": 3, "maxLength": 8, "pattern": "^[a-z]+$"},
          "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1,
                    "exclusiveMaximum": true, "multipleOf": 0.25},
          "items": {"type": "array", "minItems": 1, "maxItems": 3,
                    "items": {"type": "object", "required": ["name"],
                              "properties": {"name": {"type": "string"},
                                             "weight": {"type": "integer", "default": 1}}}},
          "tags": {"type": "array", "x-kubernetes-list-type": "set",
                   "items": {"type": "string"}},
          "workers": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object",
                                "properties": {"name": {"type": "string"},
                                               "rank": {"type": "integer"}}}},
          "port": {"x-kubernetes-int-or-string": true},
          "labels": {"type": "object", "minProperties": 1, "maxProperties": 2,
                     "additionalProperties": {"type": "string"}},
          "resources": {"type": "object", "default": {},
                        "properties": {"memory": {"type": "string", "default": "1Gi"}}},
          "note": {"type": "string", "nullable": true, "default": "n/a"},
          "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"known": {"type": "object",
                                           "properties": {"a": {"type": "string"}}}}}
        }
      },
      "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
    }
  })"));
  return *schema;
}

StructuralSchema MustParse(const json& schema) {
  auto parsed = StructuralSchema::Parse(schema);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return *std::move(parsed);
}

// A TrainingJob whose spec is `spec` (gpus 2 unless `spec` says otherwise).
json Job(json spec) {
  json object = {{"apiVersion", "wavepool.dev/v1"},
                 {"kind", "TrainingJob"},
                 {"metadata", {{"name", "a"}}},
                 {"spec", {{"gpus", 2}}}};
  object["spec"].update(spec);
  return object;
}

std::vector<FieldCause> ValidateSpec(json spec) {
  return MustParse(TrainingJobSchema()).Validate(Job(std::move(spec)));
}

// --- Parse ------------------------------------------------------------------------------------

TEST(StructuralSchemaParse, AcceptsSchemaWithCelRulesIntOrStringAndPreservedFields) {
  EXPECT_THAT(StructuralSchema::Check(TrainingJobSchema()), IsEmpty());
  EXPECT_OK(StructuralSchema::Parse(TrainingJobSchema()));
}

TEST(StructuralSchemaParse, MissingTypeAtObjectFieldNamesThePropertyPath) {
  const json schema = {
      {"type", "object"},
      {"properties", {{"spec", {{"properties", {{"gpus", {{"type", "integer"}}}}}}}}}};
  const std::string prefix = "spec.versions[0].schema.openAPIV3Schema";
  EXPECT_THAT(StructuralSchema::Check(schema, prefix),
              ElementsAre(Cause("FieldValueRequired", prefix + ".properties[spec].type",
                                "Required value: must not be empty for specified object fields")));
  EXPECT_THAT(StructuralSchema::Parse(schema, prefix),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required "
                       "value: must not be empty for specified object fields"));
}

TEST(StructuralSchemaParse, MissingTypeAtRootAndArrayItems) {
  EXPECT_THAT(StructuralSchema::Check(json::object()),
              ElementsAre(Cause("FieldValueRequired", "type",
                                "Required value: must not be empty at the root")));
  const json schema = {{"type", "object"},
                       {"properties",
                        {{"list", {{"type", "array"}, {"items", {{"minLength", 1}}}}},
                         {"bare", {{"type", "array"}}}}}};
  EXPECT_THAT(StructuralSchema::Check(schema),
              ElementsAre(Cause("FieldValueRequired", "properties[bare].items",
                                "Required value: must be specified"),
                          Cause("FieldValueRequired", "properties[list].items.type",
                                "Required value: must not be empty for specified array items")));
}

TEST(StructuralSchemaParse, RootMustBeObject) {
  EXPECT_THAT(StructuralSchema::Check({{"type", "string"}}),
              ElementsAre(Cause("FieldValueInvalid", "type",
                                "Invalid value: \"string\": must be object at the root")));
}

TEST(StructuralSchemaParse, UnsupportedTypeListsTheOpenApiTypes) {
  const json schema = {{"type", "object"}, {"properties", {{"n", {{"type", "int"}}}}}};
  EXPECT_THAT(StructuralSchema::Check(schema),
              ElementsAre(Cause("FieldValueNotSupported", "properties[n].type",
                                "Unsupported value: \"int\": supported values: \"array\", "
                                "\"boolean\", \"integer\", \"number\", \"object\", \"string\"")));
}

TEST(StructuralSchemaParse, RefusesKeywordsTheServerRefuses) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
      "b": {"$ref": "#/definitions/b", "type": "string"},
      "c": {"type": "object", "properties": {"x": {"type": "string"}},
            "additionalProperties": {"type": "string"}},
      "d": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}})");
  EXPECT_THAT(
      StructuralSchema::Check(schema),
      ElementsAre(
          Cause("FieldValueForbidden", "properties[a].uniqueItems",
                "Forbidden: uniqueItems cannot be set to true since the runtime "
                "complexity becomes quadratic"),
          Cause("FieldValueForbidden", "properties[b].$ref", "Forbidden: $ref is not supported"),
          Cause("FieldValueForbidden", "properties[c].additionalProperties",
                "Forbidden: additionalProperties and properties are mutual exclusive"),
          Cause("FieldValueInvalid", "properties[d].x-kubernetes-preserve-unknown-fields",
                "Invalid value: false: must be true or undefined")));
}

TEST(StructuralSchemaParse, MetadataMayRestrictOnlyNameAndGenerateName) {
  const json name_only = json::parse(R"({"type": "object", "properties": {
      "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}}}}})");
  EXPECT_THAT(StructuralSchema::Check(name_only), IsEmpty());
  const json labels = json::parse(R"({"type": "object", "properties": {
      "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}})");
  EXPECT_THAT(StructuralSchema::Check(labels),
              ElementsAre(Cause("FieldValueForbidden", "properties[metadata]",
                                "Forbidden: must not specify anything other than name and "
                                "generateName, but metadata is implicitly specified")));
}

TEST(StructuralSchemaParse, JunctorsMayNotDeclareStructureExceptIntOrString) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "a": {"type": "string", "anyOf": [{"type": "string"}, {"maxLength": 3}]},
      "b": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}}})");
  EXPECT_THAT(StructuralSchema::Check(schema),
              ElementsAre(Cause("FieldValueForbidden", "properties[a].anyOf[0].type",
                                "Forbidden: must be empty to be structural")));
}

TEST(StructuralSchemaParse, InvalidPatternAndListMapWithoutKeys) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "p": {"type": "string", "pattern": "(["},
      "m": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}}})");
  const auto causes = StructuralSchema::Check(schema);
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_THAT(causes[0],
              Cause("FieldValueRequired", "properties[m].x-kubernetes-list-map-keys",
                    "Required value: must not be empty if x-kubernetes-list-type is map"));
  EXPECT_EQ(causes[1].field, "properties[p].pattern");
  EXPECT_THAT(causes[1].message,
              HasSubstr("Invalid value: \"([\": must be a valid regular expression, but isn't: "));
}

TEST(StructuralSchemaParse, DefaultMustSatisfyItsSchema) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "gpus": {"type": "integer", "minimum": 1, "default": 0}}})");
  EXPECT_THAT(StructuralSchema::Check(schema),
              ElementsAre(Cause("FieldValueInvalid", "properties[gpus].default",
                                "Invalid value: 0: in body should be greater than or equal to 1")));
  // {} is valid once its own required field receives its default.
  const json nested = json::parse(R"({"type": "object", "properties": {
      "r": {"type": "object", "default": {}, "required": ["m"],
            "properties": {"m": {"type": "string", "default": "1Gi"}}}}})");
  EXPECT_THAT(StructuralSchema::Check(nested), IsEmpty());
}

TEST(StructuralSchemaParse, SeveralCausesAreJoinedInBracketsInFieldOrder) {
  const json schema = {{"type", "object"},
                       {"properties", {{"b", json::object()}, {"a", {{"type", "array"}}}}}};
  EXPECT_THAT(StructuralSchema::Parse(schema),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "[properties[a].items: Required value: must be specified, "
                       "properties[b].type: Required value: must not be empty for specified "
                       "object fields]"));
}

TEST(StructuralSchemaParse, NonObjectSchemaIsRefused) {
  EXPECT_THAT(StructuralSchema::Parse(json::array()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a schema object")));
}

// --- ApplyDefaults ----------------------------------------------------------------------------

TEST(StructuralSchemaDefaults, FillsAbsentFieldsTopDown) {
  json object = Job(json::object());
  MustParse(TrainingJobSchema()).ApplyDefaults(object);
  // policy and note from their defaults; resources defaults to {} and then gets memory's default.
  EXPECT_EQ(object["spec"], json::parse(R"({"gpus": 2, "policy": "Foreground", "note": "n/a",
                                            "resources": {"memory": "1Gi"}})"));
}

TEST(StructuralSchemaDefaults, FillsArrayItemsAndKeepsGivenValues) {
  json object =
      Job({{"items", {{{"name", "a"}}, {{"name", "b"}, {"weight", 5}}}}, {"policy", "Background"}});
  MustParse(TrainingJobSchema()).ApplyDefaults(object);
  EXPECT_EQ(object["spec"]["items"],
            json::parse(R"([{"name": "a", "weight": 1}, {"name": "b", "weight": 5}])"));
  EXPECT_EQ(object["spec"]["policy"], "Background");
}

TEST(StructuralSchemaDefaults, NullIsDefaultedUnlessNullable) {
  json object = Job({{"policy", nullptr}, {"note", nullptr}});
  MustParse(TrainingJobSchema()).ApplyDefaults(object);
  EXPECT_EQ(object["spec"]["policy"], "Foreground");
  EXPECT_TRUE(object["spec"]["note"].is_null());
}

// --- Prune ------------------------------------------------------------------------------------

TEST(StructuralSchemaPrune, RemovesUnknownFieldsAndReportsTheirPaths) {
  json object = Job({{"colour", "red"},
                     {"items", {{{"name", "a"}, {"extra", true}}}},
                     {"raw", {{"anything", 1}, {"known", {{"a", "x"}, {"b", "y"}}}}}});
  object["extra"] = 1;
  object["metadata"]["labels"] = {{"team", "ml"}};
  object["metadata"]["finalizers"] = {"wavepool.dev/cleanup"};
  object["metadata"]["bogus"] = 1;
  const json metadata_kept = {
      {"name", "a"}, {"labels", {{"team", "ml"}}}, {"finalizers", {"wavepool.dev/cleanup"}}};
  EXPECT_THAT(MustParse(TrainingJobSchema()).Prune(object),
              ElementsAre(".extra", ".metadata.bogus", ".spec.colour", ".spec.items[0].extra",
                          ".spec.raw.known.b"));
  EXPECT_EQ(object["metadata"], metadata_kept);
  EXPECT_EQ(object["apiVersion"], "wavepool.dev/v1");
  EXPECT_EQ(object["kind"], "TrainingJob");
  // Under x-kubernetes-preserve-unknown-fields unknown fields stay; declared ones are pruned.
  EXPECT_EQ(object["spec"]["raw"], json::parse(R"({"anything": 1, "known": {"a": "x"}})"));
  EXPECT_EQ(object["spec"]["items"], json::parse(R"([{"name": "a"}])"));
}

TEST(StructuralSchemaPrune, PreservedRootKeepsEverythingButUnknownMetadata) {
  const StructuralSchema schema =
      MustParse({{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}});
  json object = {{"kind", "X"}, {"metadata", {{"name", "a"}, {"x", 1}}}, {"spec", {{"y", 2}}}};
  EXPECT_THAT(schema.Prune(object), ElementsAre(".metadata.x"));
  EXPECT_EQ(object["spec"], json({{"y", 2}}));
}

TEST(StructuralSchemaPrune, KnownObjectIsUntouched) {
  json object = Job({{"labels", {{"a", "b"}}}, {"port", "http"}});
  const json before = object;
  EXPECT_THAT(MustParse(TrainingJobSchema()).Prune(object), IsEmpty());
  EXPECT_EQ(object, before);
}

// --- Validate ---------------------------------------------------------------------------------

TEST(StructuralSchemaValidate, ValidObjectHasNoCauses) {
  EXPECT_THAT(ValidateSpec({{"name", "abc"},
                            {"ratio", 0.5},
                            {"items", {{{"name", "a"}}}},
                            {"tags", {"x", "y"}},
                            {"port", 8080},
                            {"note", nullptr},
                            {"gpus", 2.0}}),  // an integral float is an integer
              IsEmpty());
  EXPECT_THAT(ValidateSpec({{"port", "http"}}), IsEmpty());
}

TEST(StructuralSchemaValidate, RequiredMinimumMaximumAndType) {
  EXPECT_THAT(MustParse(TrainingJobSchema()).Validate({{"spec", json::object()}}),
              ElementsAre(Cause("FieldValueRequired", "spec.gpus", "Required value")));
  EXPECT_THAT(ValidateSpec({{"gpus", 0}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.gpus",
                                "Invalid value: 0: spec.gpus in body should be greater than or "
                                "equal to 1")));
  EXPECT_THAT(ValidateSpec({{"gpus", 65}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.gpus",
                                "Invalid value: 65: spec.gpus in body should be less than or "
                                "equal to 64")));
  EXPECT_THAT(ValidateSpec({{"gpus", "string"}}),
              ElementsAre(Cause("FieldValueTypeInvalid", "spec.gpus",
                                "Invalid value: \"string\": spec.gpus in body must be of type "
                                "integer: \"string\"")));
  EXPECT_THAT(ValidateSpec({{"gpus", 2.5}}),
              ElementsAre(Cause("FieldValueTypeInvalid", "spec.gpus",
                                "Invalid value: \"number\": spec.gpus in body must be of type "
                                "integer: \"number\"")));
}

TEST(StructuralSchemaValidate, EnumListsTheSupportedValuesInSchemaOrder) {
  EXPECT_THAT(ValidateSpec({{"policy", "Foo"}}),
              ElementsAre(Cause("FieldValueNotSupported", "spec.policy",
                                "Unsupported value: \"Foo\": supported values: \"Foreground\", "
                                "\"Background\"")));
}

TEST(StructuralSchemaValidate, StringLengthsAndPattern) {
  EXPECT_THAT(ValidateSpec({{"name", "AB"}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.name",
                                "Invalid value: \"AB\": spec.name in body should be at least 3 "
                                "chars long"),
                          Cause("FieldValueInvalid", "spec.name",
                                "Invalid value: \"AB\": spec.name in body should match "
                                "'^[a-z]+$'")));
  // 10 letters > maxLength 8; the value is not repeated.
  EXPECT_THAT(ValidateSpec({{"name", "abcdefghij"}}),
              ElementsAre(Cause("FieldValueTooLong", "spec.name",
                                "Too long: may not be more than 8 bytes")));
  // Lengths count characters: "ééé" is 6 bytes but 3 characters.
  EXPECT_THAT(ValidateSpec({{"name", "\xc3\xa9\xc3\xa9\xc3\xa9"}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.name",
                                "Invalid value: \"\xc3\xa9\xc3\xa9\xc3\xa9\": spec.name in body "
                                "should match '^[a-z]+$'")));
}

TEST(StructuralSchemaValidate, ExclusiveBoundsAndMultipleOf) {
  EXPECT_THAT(ValidateSpec({{"ratio", 0}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.ratio",
                                "Invalid value: 0: spec.ratio in body should be greater than 0")));
  EXPECT_THAT(ValidateSpec({{"ratio", 1}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.ratio",
                                "Invalid value: 1: spec.ratio in body should be less than 1")));
  // 0.3 / 0.25 = 1.2, not whole.
  EXPECT_THAT(ValidateSpec({{"ratio", 0.3}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.ratio",
                                "Invalid value: 0.3: spec.ratio in body should be a multiple of "
                                "0.25")));
}

TEST(StructuralSchemaValidate, ArrayBoundsAndItemPaths) {
  EXPECT_THAT(ValidateSpec({{"items", json::array()}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.items",
                                "Invalid value: 0: spec.items in body should have at least 1 "
                                "items")));
  const json four = {{{"name", "a"}}, {{"name", "b"}}, {{"name", "c"}}, {{"name", "d"}}};
  EXPECT_THAT(ValidateSpec({{"items", four}}),
              ElementsAre(Cause("FieldValueTooMany", "spec.items",
                                "Too many: 4: must have at most 3 items")));
  const json third_unnamed = {{{"name", "a"}}, {{"name", "b"}}, {{"weight", 1}}};
  EXPECT_THAT(ValidateSpec({{"items", third_unnamed}}),
              ElementsAre(Cause("FieldValueRequired", "spec.items[2].name", "Required value")));
}

TEST(StructuralSchemaValidate, SetAndMapListsRefuseDuplicates) {
  EXPECT_THAT(ValidateSpec({{"tags", {"a", "b", "a"}}}),
              ElementsAre(Cause("FieldValueDuplicate", "spec.tags[2]", "Duplicate value: \"a\"")));
  const json workers = {{{"name", "w"}, {"rank", 0}}, {{"name", "w"}, {"rank", 1}}};
  EXPECT_THAT(ValidateSpec({{"workers", workers}}),
              ElementsAre(Cause("FieldValueDuplicate", "spec.workers[1]",
                                "Duplicate value: map[string]interface {}{\"name\":\"w\"}")));
}

TEST(StructuralSchemaValidate, IntOrStringAcceptsOnlyIntegersAndStrings) {
  EXPECT_THAT(ValidateSpec({{"port", true}}),
              ElementsAre(Cause("FieldValueTypeInvalid", "spec.port",
                                "Invalid value: \"boolean\": spec.port in body must be of type "
                                "integer,string: \"boolean\"")));
}

TEST(StructuralSchemaValidate, AdditionalPropertiesAndPropertyCounts) {
  EXPECT_THAT(ValidateSpec({{"labels", {{"a", 1}}}}),
              ElementsAre(Cause("FieldValueTypeInvalid", "spec.labels.a",
                                "Invalid value: \"integer\": spec.labels.a in body must be of type "
                                "string: \"integer\"")));
  EXPECT_THAT(ValidateSpec({{"labels", json::object()}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.labels",
                                "Invalid value: 0: spec.labels in body should have at least 1 "
                                "properties")));
  EXPECT_THAT(ValidateSpec({{"labels", {{"a", "1"}, {"b", "2"}, {"c", "3"}}}}),
              ElementsAre(Cause("FieldValueTooMany", "spec.labels",
                                "Too many: 3: must have at most 2 items")));
}

TEST(StructuralSchemaValidate, NullOnlyWhereNullable) {
  json object = Job({{"note", nullptr}});
  object["status"] = {{"phase", nullptr}};
  EXPECT_THAT(MustParse(TrainingJobSchema()).Validate(object),
              ElementsAre(Cause("FieldValueTypeInvalid", "status.phase",
                                "Invalid value: \"null\": status.phase in body must be of type "
                                "string: \"null\"")));
}

TEST(StructuralSchemaValidate, Int32FormatBoundsTheValue) {
  // 3000000000 > 2^31 - 1 = 2147483647.
  EXPECT_THAT(ValidateSpec({{"seed", 3000000000LL}}),
              ElementsAre(Cause("FieldValueInvalid", "spec.seed",
                                "Invalid value: \"\": Checked value must be of type integer with "
                                "format int32 in spec.seed")));
  EXPECT_THAT(ValidateSpec({{"seed", 2147483647}}), IsEmpty());
}

TEST(StructuralSchemaValidate, AllOfBranchesAreChecked) {
  const StructuralSchema schema = MustParse(json::parse(R"({"type": "object", "properties": {
      "n": {"type": "integer", "allOf": [{"minimum": 2}, {"maximum": 4}]}}})"));
  EXPECT_THAT(schema.Validate({{"n", 5}}),
              ElementsAre(Cause("FieldValueInvalid", "n",
                                "Invalid value: 5: n in body should be less than or equal to 4")));
}

// --- Field error rendering --------------------------------------------------------------------

TEST(FieldErrors, NumbersPrintAsGoPrintsThem) {
  EXPECT_EQ(field_errors::GoNumber(json(3)), "3");
  EXPECT_EQ(field_errors::GoNumber(json(1.5)), "1.5");
  EXPECT_EQ(field_errors::GoNumber(json(100.0)), "100");
  EXPECT_EQ(field_errors::GoNumber(json(0.0001)), "0.0001");
  EXPECT_EQ(field_errors::GoNumber(json(0.00001)), "1e-05");
  EXPECT_EQ(field_errors::GoNumber(json(1234567.0)), "1.234567e+06");
  EXPECT_EQ(field_errors::GoNumber(json(-2.5e21)), "-2.5e+21");
}

TEST(FieldErrors, StringsAreQuotedAsGoQuotes) {
  EXPECT_EQ(field_errors::GoQuote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\x01\"");
}

}  // namespace
}  // namespace wavepool::testing::apiserver
