// One row of a layer table, and its attrs column, with typed accessors whose errors name the
// line and the column (layer_table.h documents the format).
#ifndef WAVEPOOL_PLANNER_SRC_LAYER_TABLE_LAYER_TABLE_ROW_H_
#define WAVEPOOL_PLANNER_SRC_LAYER_TABLE_LAYER_TABLE_ROW_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner::internal {

// `text` without leading and trailing spaces, tabs and carriage returns.
std::string_view Trim(std::string_view text);

// A data row. Borrows the header's column names, which must outlive it.
class Row {
 public:
  Row(int line, const std::vector<std::string>* columns, std::vector<std::string> fields);

  int line() const { return line_; }
  // The field of `column`; empty when the field is empty or the table lacks the column.
  std::string_view Get(std::string_view column) const;
  // InvalidArgument "layer table line <line>, column <column>: <message>".
  absl::Status Error(std::string_view column, const std::string& message) const;

  // A required shape ("3x224x224").
  absl::StatusOr<TensorShape> Shape(std::string_view column) const;
  // nullopt for an empty field.
  absl::StatusOr<std::optional<TensorShape>> OptionalShape(std::string_view column) const;
  absl::StatusOr<std::optional<std::int64_t>> OptionalInteger(std::string_view column) const;
  // A finite number >= 0.
  absl::StatusOr<std::optional<double>> OptionalNumber(std::string_view column) const;

 private:
  int line_;
  const std::vector<std::string>* columns_;
  std::vector<std::string> fields_;
};

// `value` as an int, or an error naming `column` of `row` when it does not fit.
absl::StatusOr<int> ToInt(const Row& row, std::string_view column, std::int64_t value);

// The attrs column of a row: key=value settings separated by spaces. Borrows the row.
class Attrs {
 public:
  // Rejects keys that `kind` does not take (AttrKeysOf), repeated keys and malformed pairs.
  static absl::StatusOr<Attrs> Parse(const Row& row, LayerKind kind, std::string_view type);

  // `fallback` nullopt: the key is required.
  absl::StatusOr<std::int64_t> Integer(std::string_view key,
                                       std::optional<std::int64_t> fallback) const;
  absl::StatusOr<int> Int(std::string_view key, std::optional<int> fallback) const;
  absl::StatusOr<bool> Bool(std::string_view key, bool fallback) const;
  // "P" (both) or "PHxPW".
  absl::StatusOr<std::pair<int, int>> Pair(std::string_view key,
                                           std::pair<int, int> fallback) const;

 private:
  Attrs(const Row* row, std::string type) : row_(row), type_(std::move(type)) {}
  const std::string* Find(std::string_view key) const;

  const Row* row_;
  std::string type_;
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace wavepool::planner::internal

#endif  // WAVEPOOL_PLANNER_SRC_LAYER_TABLE_LAYER_TABLE_ROW_H_
