// Table rows for `kubectl get`: a CRD's additionalPrinterColumns evaluated on objects, as the
// apiextensions server's table convertor does (a JSONPath per column, Name first).
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_PRINTER_COLUMNS_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_PRINTER_COLUMNS_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

struct PrinterColumn {
  std::string name;
  std::string type;    // integer, number, string, boolean, date
  std::string format;  // optional
  std::string description;
  std::string json_path;  // ".status.phase", ".spec.containers[0].image",
                          // ".status.conditions[?(@.type==\"Ready\")].status"
  int priority = 0;
};

// Parsed and checked additionalPrinterColumns (InvalidArgument naming the column and problem,
// worded as the server's CRD validation: "additionalPrinterColumns[0].type: Unsupported value:
// ..."). A null `columns` is no columns.
absl::StatusOr<std::vector<PrinterColumn>> ParsePrinterColumns(const nlohmann::json& columns);

// The meta.k8s.io/v1 Table columnDefinitions: Name (type string, format name, ObjectMeta's
// description of name), then `columns` (description defaulted to "Custom resource definition
// column (in JSONPath format): <jsonPath>").
nlohmann::json TableColumnDefinitions(const std::vector<PrinterColumn>& columns);

// One row's cells, in the order of TableColumnDefinitions: the name, then each column's value
// as the real server's table convertor renders it (kubectl prints the cells as they come):
//   integer: a JSON integer (a float is truncated); number: a JSON number; boolean: a bool;
//   string: the value, or a non-string printed as JSONPath prints it ("3", "true", "{...}");
//   date: the age of an RFC 3339 timestamp as the server words it (ShortHumanDuration: "42s",
//         "5m", "3h", "12d", "2y"), "<invalid>" for an unparsable one, "<unknown>" for "".
// A missing value, or one of the wrong JSON type, is null. Dates are aged against the system
// clock; the overload takes `now` for tests.
nlohmann::json TableCells(const std::vector<PrinterColumn>& columns, const nlohmann::json& object);
nlohmann::json TableCells(const std::vector<PrinterColumn>& columns, const nlohmann::json& object,
                          std::chrono::system_clock::time_point now);

// The values `json_path` selects in `object`, in document order (a missing field selects nothing).
// The subset kubectl and CRD printer columns use: ".a.b" (a "\." inside a name is a literal dot),
// "['a.b']", "[n]" (negative counts from the end), "[*]", ".*", and filters
// "[?(@.type==\"Ready\")]" with ==, !=, <, <=, >, >= against a string, number or boolean, or
// "[?(@.field)]" for presence. InvalidArgument for other syntax.
absl::StatusOr<std::vector<nlohmann::json>> EvaluateJsonPath(std::string_view json_path,
                                                             const nlohmann::json& object);

// k8s.io/apimachinery duration.ShortHumanDuration: "<invalid>" below -1s, then "0s", "Ns" under a
// minute, "Nm" under an hour, "Nh" under a day, "Nd" under 365 days, else "Ny".
std::string ShortHumanDuration(std::chrono::duration<double> age);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_PRINTER_COLUMNS_H_
