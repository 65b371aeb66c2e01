// Table rows for `kubectl get`: a CRD's additionalPrinterColumns evaluated on objects, as the
// apiextensions server's table convertor does (a JSONPath per column, Name first).
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_PRINTER_COLUMNS_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_PRINTER_COLUMNS_H_

#include <string>
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

// Parsed and checked additionalPrinterColumns (InvalidArgument naming the column and problem).
absl::StatusOr<std::vector<PrinterColumn>> ParsePrinterColumns(const nlohmann::json& columns);

// The meta.k8s.io/v1 Table columnDefinitions: Name, then `columns`.
nlohmann::json TableColumnDefinitions(const std::vector<PrinterColumn>& columns);

// One row's cells, in the order of TableColumnDefinitions: the name, then each column's value
// (the real server's rendering: a missing value is null, a date is its age as kubectl shows it,
// e.g. "5m").
nlohmann::json TableCells(const std::vector<PrinterColumn>& columns, const nlohmann::json& object);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_PRINTER_COLUMNS_H_
