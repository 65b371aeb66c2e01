// additionalPrinterColumns: the checks on the columns, the JSONPath subset, and cells rendered as
// the apiextensions table convertor renders them (dates as their age).
#include "tests/support/apiserver/printer_columns.h"

#include <chrono>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json J(const char* text) { return json::parse(text); }

// 2026-01-01T00:00:00Z: 20454 days after 1970-01-01 (56 years, 14 of them leap: 56*365+14).
std::chrono::system_clock::time_point NewYear2026() {
  return std::chrono::system_clock::time_point(seconds(int64_t{20454} * 86400));
}

std::vector<PrinterColumn> MustParse(const json& columns) {
  absl::StatusOr<std::vector<PrinterColumn>> parsed = ParsePrinterColumns(columns);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : std::vector<PrinterColumn>{};
}

const json& Columns() {
  static const json* columns = new json(J(R"([
    {"name": "GPUs", "type": "integer", "jsonPath": ".spec.gpus"},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
    {"name": "Ready", "type": "string",
     "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
    {"name": "Suspended", "type": "boolean", "jsonPath": ".spec.suspend"},
    {"name": "Image", "type": "string", "jsonPath": ".spec.containers[0].image"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Started", "type": "date", "jsonPath": ".status.startTime",
     "description": "When it started"}])"));
  return *columns;
}

json Job() {
  return J(R"({"metadata": {"name": "vgg", "creationTimestamp": "2025-12-31T23:50:00Z"},
               "spec": {"gpus": 8, "ratio": 0.5, "suspend": false,
                        "containers": [{"image": "img:1"}]},
               "status": {"phase": "Running", "startTime": "2026-01-01T00:05:00.5+01:00",
                          "conditions": [{"type": "Progressing", "status": "True"},
                                         {"type": "Ready", "status": "False"}]}})");
}

// Cell `index` (after Name) of Job() with `path` set to `value`.
json CellWith(size_t index, const json::json_pointer& path, const json& value) {
  json object = Job();
  object[path] = value;
  return TableCells(MustParse(Columns()), object, NewYear2026())[index + 1];
}

TEST(PrinterColumns, CellsAreTypedByColumnAndDatesAreAges) {
  // Age: created 23:50, now 00:00 -> 600 s = "10m". Started 00:05:00.5+01:00 = 23:05:00.5Z the
  // day before -> 3299.5 s, under an hour -> 54 whole minutes = "54m".
  EXPECT_EQ(TableCells(MustParse(Columns()), Job(), NewYear2026()),
            J(R"(["vgg", 8, 0.5, "Running", "False", false, "img:1", "10m", "54m"])"));
}

TEST(PrinterColumns, MissingValuesAndWrongTypesAreNull) {
  EXPECT_EQ(TableCells(MustParse(Columns()), J(R"({"metadata": {"name": "x"}})"), NewYear2026()),
            J(R"(["x", null, null, null, null, null, null, null, null])"));
  EXPECT_EQ(CellWith(0, "/spec/gpus"_json_pointer, "eight"), json());
  EXPECT_EQ(CellWith(4, "/spec/suspend"_json_pointer, "true"), json());
  EXPECT_EQ(CellWith(6, "/metadata/creationTimestamp"_json_pointer, 5), json());
  EXPECT_EQ(CellWith(2, "/status/phase"_json_pointer, nullptr), json());
}

TEST(PrinterColumns, NumbersConvertBetweenIntegerAndNumberColumns) {
  EXPECT_EQ(CellWith(0, "/spec/gpus"_json_pointer, 2.9), json(2));  // truncated, as int64(2.9)
  const json ratio = CellWith(1, "/spec/ratio"_json_pointer, 3);
  EXPECT_TRUE(ratio.is_number_float());
  EXPECT_EQ(ratio.get<double>(), 3.0);
}

TEST(PrinterColumns, StringColumnsPrintOtherValuesAsJsonPathDoes) {
  EXPECT_EQ(CellWith(2, "/status/phase"_json_pointer, 8), json("8"));
  EXPECT_EQ(CellWith(2, "/status/phase"_json_pointer, true), json("true"));
  EXPECT_EQ(CellWith(2, "/status/phase"_json_pointer, J(R"({"b": 1, "a": [2]})")),
            json("{\"a\":[2],\"b\":1}"));
}

TEST(PrinterColumns, BadAndEmptyDates) {
  EXPECT_EQ(CellWith(6, "/metadata/creationTimestamp"_json_pointer, "yesterday"),
            json("<invalid>"));
  EXPECT_EQ(CellWith(6, "/metadata/creationTimestamp"_json_pointer, ""), json("<unknown>"));
  // In the future by more than a second.
  EXPECT_EQ(CellWith(6, "/metadata/creationTimestamp"_json_pointer, "2026-01-01T00:00:05Z"),
            json("<invalid>"));
}

TEST(PrinterColumns, ColumnDefinitionsStartWithName) {
  const json definitions = TableColumnDefinitions(MustParse(Columns()));
  ASSERT_EQ(definitions.size(), 9u);
  EXPECT_EQ(definitions[0]["name"], "Name");
  EXPECT_EQ(definitions[0]["type"], "string");
  EXPECT_EQ(definitions[0]["format"], "name");
  EXPECT_THAT(definitions[0]["description"].get<std::string>(),
              HasSubstr("Name must be unique within a namespace."));
  EXPECT_EQ(definitions[3], J(R"({"name": "Phase", "type": "string", "format": "",
      "description": "Custom resource definition column (in JSONPath format): .status.phase",
      "priority": 1})"));
  EXPECT_EQ(definitions[8]["description"], "When it started");
  EXPECT_EQ(definitions[8]["type"], "date");
}

TEST(PrinterColumns, ShortHumanDurationBoundaries) {
  EXPECT_EQ(ShortHumanDuration(seconds(-2)), "<invalid>");
  EXPECT_EQ(ShortHumanDuration(std::chrono::duration<double>(-1.5)), "0s");  // int(-1.5) = -1
  EXPECT_EQ(ShortHumanDuration(std::chrono::duration<double>(59.9)), "59s");
  EXPECT_EQ(ShortHumanDuration(seconds(60)), "1m");
  EXPECT_EQ(ShortHumanDuration(seconds(3599)), "59m");
  EXPECT_EQ(ShortHumanDuration(hours(1)), "1h");
  EXPECT_EQ(ShortHumanDuration(hours(23) + seconds(3599)), "23h");
  EXPECT_EQ(ShortHumanDuration(hours(24)), "1d");
  EXPECT_EQ(ShortHumanDuration(hours(24 * 364)), "364d");
  EXPECT_EQ(ShortHumanDuration(hours(24 * 365)), "1y");
  EXPECT_EQ(ShortHumanDuration(hours(24 * 800)), "2y");
}

// --- JSONPath ---------------------------------------------------------------------------------

TEST(JsonPath, FieldsIndexesWildcardsAndFilters) {
  const json object = J(R"({"metadata": {"labels": {"app.kubernetes.io/name": "web"}},
      "items": [{"name": "a", "n": 1}, {"name": "b", "n": 5}, {"name": "c"}]})");
  using V = std::vector<json>;
  EXPECT_EQ(*EvaluateJsonPath(R"(.metadata.labels.app\.kubernetes\.io/name)", object), V{"web"});
  EXPECT_EQ(*EvaluateJsonPath(".metadata.labels['app.kubernetes.io/name']", object), V{"web"});
  EXPECT_EQ(*EvaluateJsonPath(".items[-1].name", object), V{"c"});
  EXPECT_EQ(*EvaluateJsonPath(".items[*].name", object), (V{"a", "b", "c"}));
  EXPECT_EQ(*EvaluateJsonPath(".items[?(@.n > 2)].name", object), V{"b"});
  EXPECT_EQ(*EvaluateJsonPath(".items[?(@.n)].name", object), (V{"a", "b"}));
  EXPECT_EQ(*EvaluateJsonPath(".items[?(@.name!='a')].name", object), (V{"b", "c"}));
  EXPECT_EQ(*EvaluateJsonPath("{.items[1].n}", object), V{5});
  EXPECT_THAT(*EvaluateJsonPath(".items[7].name", object), IsEmpty());
  EXPECT_THAT(*EvaluateJsonPath(".spec.missing", object), IsEmpty());
}

TEST(JsonPath, UnsupportedSyntaxIsRefused) {
  for (const char* path : {".items[1:2]", ".a..b", "spec.x", ".items[?(@.n ~ 1)]", ".items[0"}) {
    EXPECT_THAT(EvaluateJsonPath(path, json::object()),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSONPath")))
        << path;
  }
}

// --- ParsePrinterColumns ----------------------------------------------------------------------

TEST(ParsePrinterColumns, ReadsEveryField) {
  const std::vector<PrinterColumn> columns = MustParse(J(R"([{"name": "Phase", "type": "string",
      "format": "password", "description": "d", "jsonPath": ".status.phase", "priority": 2}])"));
  ASSERT_EQ(columns.size(), 1u);
  EXPECT_EQ(columns[0].name, "Phase");
  EXPECT_EQ(columns[0].format, "password");
  EXPECT_EQ(columns[0].description, "d");
  EXPECT_EQ(columns[0].json_path, ".status.phase");
  EXPECT_EQ(columns[0].priority, 2);
  EXPECT_THAT(MustParse(json()), IsEmpty());
}

TEST(ParsePrinterColumns, RefusesBadColumnsWithTheServersWords) {
  EXPECT_THAT(ParsePrinterColumns(J(R"([{"name": "X", "type": "int", "jsonPath": ".a"}])")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "additionalPrinterColumns[0].type: Unsupported value: \"int\": supported "
                       "values: \"boolean\", \"date\", \"integer\", \"number\", \"string\""));
  EXPECT_THAT(ParsePrinterColumns(J(R"([{"name": "X", "type": "string"}])")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "additionalPrinterColumns[0].jsonPath: Required value"));
  EXPECT_THAT(ParsePrinterColumns(J(R"([{"name": "X", "type": "string", "jsonPath": "spec.x"}])")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "additionalPrinterColumns[0].jsonPath: Invalid value: \"spec.x\": must be "
                       "a simple json path starting with ."));
  EXPECT_THAT(
      ParsePrinterColumns(J(R"([{"name": "X", "type": "string", "format": "uuid",
                                         "jsonPath": ".a"}])")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("additionalPrinterColumns[0].format: Unsupported value: \"uuid\"")));
  EXPECT_THAT(ParsePrinterColumns(J(R"([{"type": "string", "jsonPath": ".a"},
                                        {"name": "Y", "jsonPath": ".b[1:2]"}])")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("[additionalPrinterColumns[0].name: Required value, "
                                 "additionalPrinterColumns[1].type: Required value, "
                                 "additionalPrinterColumns[1].jsonPath: Invalid value: ")));
  EXPECT_THAT(ParsePrinterColumns(J(R"({"name": "X"})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a list")));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
