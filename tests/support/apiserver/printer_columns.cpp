// additionalPrinterColumns as apiextensions-apiserver checks them (CRD validation) and renders
// them (registry/customresource/tableconvertor).
#include "tests/support/apiserver/printer_columns.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/field_errors.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;

// metav1.ObjectMeta{}.SwaggerDoc()["name"], the Name column's description.
constexpr char kNameDescription[] =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

const std::vector<std::string> kColumnTypes = {"boolean", "date", "integer", "number", "string"};
const std::vector<std::string> kColumnFormats = {"byte",  "date",  "date-time", "double",
                                                 "float", "int32", "int64",     "password"};

bool Contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string StringField(const json& column, const char* key) {
  auto it = column.find(key);
  return it != column.end() && it->is_string() ? it->get<std::string>() : "";
}

// The checks of apiextensions validation on one column.
void CheckColumn(const json& column, const std::string& path, std::vector<FieldCause>& causes) {
  using field_errors::Child;
  if (!column.is_object()) {
    causes.push_back(field_errors::Invalid(path, column, "must be an object"));
    return;
  }
  if (StringField(column, "name").empty()) {
    causes.push_back(field_errors::Required(Child(path, "name"), ""));
  }
  const std::string type = StringField(column, "type");
  if (type.empty()) {
    causes.push_back(field_errors::Required(Child(path, "type"), ""));
  } else if (!Contains(kColumnTypes, type)) {
    causes.push_back(field_errors::NotSupported(Child(path, "type"), type, kColumnTypes));
  }
  const std::string format = StringField(column, "format");
  if (!format.empty() && !Contains(kColumnFormats, format)) {
    causes.push_back(field_errors::NotSupported(Child(path, "format"), format, kColumnFormats));
  }
  const std::string json_path = StringField(column, "jsonPath");
  if (json_path.empty()) {
    causes.push_back(field_errors::Required(Child(path, "jsonPath"), ""));
  } else if (json_path[0] != '.') {
    causes.push_back(field_errors::Invalid(Child(path, "jsonPath"), json_path,
                                           "must be a simple json path starting with ."));
  } else if (absl::Status s = EvaluateJsonPath(json_path, json::object()).status(); !s.ok()) {
    causes.push_back(
        field_errors::Invalid(Child(path, "jsonPath"), json_path,
                              absl::StrCat("must be a valid JSONPath: ", s.message())));
  }
  auto priority = column.find("priority");
  if (priority != column.end() && !priority->is_number_integer()) {
    causes.push_back(
        field_errors::Invalid(Child(path, "priority"), *priority, "must be an integer"));
  }
}

// Days since 1970-01-01 of a civil date (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// RFC 3339 ("2006-01-02T15:04:05Z07:00", fractional seconds allowed, as Go's time.Parse accepts).
bool ParseRfc3339(const std::string& text, std::chrono::system_clock::time_point& out) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, n = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 ||
      n != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) {
    return false;
  }
  size_t at = 19;
  double fraction = 0;
  if (at < text.size() && text[at] == '.') {
    size_t end = at + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == at + 1) return false;
    fraction = std::stod("0" + text.substr(at, end - at));
    at = end;
  }
  int64_t offset_seconds = 0;
  const std::string zone = text.substr(at);
  if (zone != "Z") {
    int oh = 0, om = 0;
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || zone[3] != ':' ||
        std::sscanf(zone.c_str() + 1, "%2d:%2d", &oh, &om) != 2) {
      return false;
    }
    offset_seconds = (zone[0] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  const int64_t seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_seconds;
  out = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(static_cast<double>(seconds) + fraction)));
  return true;
}

json DateCell(const json& value, std::chrono::system_clock::time_point now) {
  if (!value.is_string()) return nullptr;
  const std::string text = value.get<std::string>();
  if (text.empty() || text == "null") return "<unknown>";  // the zero time
  std::chrono::system_clock::time_point when;
  if (!ParseRfc3339(text, when)) return "<invalid>";
  return ShortHumanDuration(now - when);
}

// What client-go's JSONPath prints for a value in a string column.
std::string PrintedValue(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return field_errors::GoNumber(value);
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

json Cell(const PrinterColumn& column, const json& object,
          std::chrono::system_clock::time_point now) {
  absl::StatusOr<std::vector<json>> found = EvaluateJsonPath(column.json_path, object);
  if (!found.ok() || found->empty()) return nullptr;
  const json& value = found->front();  // the server takes the first result
  if (value.is_null()) return nullptr;
  if (column.type == "string") return PrintedValue(value);
  if (column.type == "integer") {
    if (value.is_number_integer()) return value;
    if (value.is_number_float()) {
      const double truncated = std::trunc(value.get<double>());  // Go's int64(float64)
      if (std::fabs(truncated) < 9.2e18) return static_cast<int64_t>(truncated);
    }
    return nullptr;
  }
  if (column.type == "number") return value.is_number() ? json(value.get<double>()) : json();
  if (column.type == "boolean") return value.is_boolean() ? value : json();
  if (column.type == "date") return DateCell(value, now);
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<PrinterColumn>> ParsePrinterColumns(const nlohmann::json& columns) {
  if (columns.is_null()) return std::vector<PrinterColumn>{};
  if (!columns.is_array()) {
    return absl::InvalidArgumentError("additionalPrinterColumns: must be a list of columns");
  }
  std::vector<FieldCause> causes;
  for (size_t i = 0; i < columns.size(); ++i) {
    CheckColumn(columns[i], field_errors::Index("additionalPrinterColumns", i), causes);
  }
  if (!causes.empty()) return absl::InvalidArgumentError(field_errors::JoinCauses(causes));
  std::vector<PrinterColumn> parsed;
  for (const json& column : columns) {
    PrinterColumn c;
    c.name = StringField(column, "name");
    c.type = StringField(column, "type");
    c.format = StringField(column, "format");
    c.description = StringField(column, "description");
    c.json_path = StringField(column, "jsonPath");
    c.priority = column.value("priority", 0);
    parsed.push_back(std::move(c));
  }
  return parsed;
}

nlohmann::json TableColumnDefinitions(const std::vector<PrinterColumn>& columns) {
  json definitions = json::array();
  definitions.push_back({{"name", "Name"},
                         {"type", "string"},
                         {"format", "name"},
                         {"description", kNameDescription},
                         {"priority", 0}});
  for (const PrinterColumn& column : columns) {
    const std::string description =
        column.description.empty()
            ? absl::StrCat("Custom resource definition column (in JSONPath format): ",
                           column.json_path)
            : column.description;
    definitions.push_back({{"name", column.name},
                           {"type", column.type},
                           {"format", column.format},
                           {"description", description},
                           {"priority", column.priority}});
  }
  return definitions;
}

nlohmann::json TableCells(const std::vector<PrinterColumn>& columns, const nlohmann::json& object) {
  return TableCells(columns, object, std::chrono::system_clock::now());
}

nlohmann::json TableCells(const std::vector<PrinterColumn>& columns, const nlohmann::json& object,
                          std::chrono::system_clock::time_point now) {
  json cells = json::array();
  const json* name = nullptr;
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    auto it = object["metadata"].find("name");
    if (it != object["metadata"].end() && it->is_string()) name = &*it;
  }
  cells.push_back(name != nullptr ? *name : json(""));
  for (const PrinterColumn& column : columns) cells.push_back(Cell(column, object, now));
  return cells;
}

std::string ShortHumanDuration(std::chrono::duration<double> age) {
  const double seconds_f = age.count();
  const auto seconds = static_cast<int64_t>(seconds_f);  // Go's int(d.Seconds()) truncates
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60) return absl::StrCat(seconds, "s");
  const auto minutes = static_cast<int64_t>(seconds_f / 60);
  if (minutes < 60) return absl::StrCat(minutes, "m");
  const auto hours = static_cast<int64_t>(seconds_f / 3600);
  if (hours < 24) return absl::StrCat(hours, "h");
  if (hours < 24 * 365) return absl::StrCat(hours / 24, "d");
  return absl::StrCat(static_cast<int64_t>(seconds_f / 3600 / 24 / 365), "y");
}

}  // namespace wavepool::testing::apiserver
