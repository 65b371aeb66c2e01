#include "layer_table/layer_table_row.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "layer_table/layer_table_internal.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner::internal {
namespace {

absl::string_view ToAbsl(std::string_view text) { return {text.data(), text.size()}; }

// Shapes whose element count would overflow int64 are rejected.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 62;

}  // namespace

std::string_view Trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r";
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(kSpace) - begin + 1);
}

Row::Row(int line, const std::vector<std::string>* columns, std::vector<std::string> fields)
    : line_(line), columns_(columns), fields_(std::move(fields)) {}

std::string_view Row::Get(std::string_view column) const {
  for (size_t i = 0; i < columns_->size() && i < fields_.size(); ++i) {
    if ((*columns_)[i] == column) return fields_[i];
  }
  return {};
}

absl::Status Row::Error(std::string_view column, const std::string& message) const {
  return absl::InvalidArgumentError(
      absl::StrCat("layer table line ", line_, ", column ", std::string(column), ": ", message));
}

absl::StatusOr<TensorShape> Row::Shape(std::string_view column) const {
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<TensorShape> shape, OptionalShape(column));
  if (!shape) return Error(column, "is empty; a shape looks like 3x224x224");
  return *shape;
}

absl::StatusOr<std::optional<TensorShape>> Row::OptionalShape(std::string_view column) const {
  const std::string_view text = Get(column);
  if (text.empty()) return std::nullopt;
  TensorShape shape;
  std::int64_t elements = 1;
  for (absl::string_view part : absl::StrSplit(ToAbsl(text), 'x')) {
    std::int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim <= 0 || part.empty() || part[0] == '+') {
      return Error(column, absl::StrCat("dimension '", part, "' of '", std::string(text),
                                        "' is not a positive integer"));
    }
    if (elements > kMaxElements / dim) {
      return Error(column, absl::StrCat("shape '", std::string(text), "' has too many elements"));
    }
    elements *= dim;
    shape.dims.push_back(dim);
  }
  return shape;
}

absl::StatusOr<std::optional<std::int64_t>> Row::OptionalInteger(std::string_view column) const {
  const std::string_view text = Get(column);
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  if (!absl::SimpleAtoi(ToAbsl(text), &value) || value < 0) {
    return Error(column, absl::StrCat("'", std::string(text), "' is not an integer >= 0"));
  }
  return value;
}

absl::StatusOr<std::optional<double>> Row::OptionalNumber(std::string_view column) const {
  const std::string_view text = Get(column);
  if (text.empty()) return std::nullopt;
  double value = 0;
  if (!absl::SimpleAtod(ToAbsl(text), &value) || !std::isfinite(value) || value < 0) {
    return Error(column, absl::StrCat("'", std::string(text), "' is not a finite number >= 0"));
  }
  return value;
}

absl::StatusOr<int> ToInt(const Row& row, std::string_view column, std::int64_t value) {
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    return row.Error(column, absl::StrCat("value ", value, " is out of range"));
  }
  return static_cast<int>(value);
}

absl::StatusOr<Attrs> Attrs::Parse(const Row& row, LayerKind kind, std::string_view type) {
  Attrs attrs(&row, std::string(type));
  const std::vector<std::string_view> allowed = AttrKeysOf(kind);
  for (absl::string_view token :
       absl::StrSplit(ToAbsl(row.Get("attrs")), absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    const size_t equals = token.find('=');
    if (equals == absl::string_view::npos || equals == 0 || equals + 1 == token.size()) {
      return row.Error("attrs", absl::StrCat("'", token, "' is not key=value"));
    }
    std::string key(token.substr(0, equals));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return row.Error("attrs",
                       allowed.empty()
                           ? absl::StrCat("a ", attrs.type_, " takes no attrs, got '", key, "'")
                           : absl::StrCat("unknown key '", key, "' for a ", attrs.type_,
                                          "; valid keys: ", JoinNames(allowed)));
    }
    if (!attrs.values_.emplace(key, std::string(token.substr(equals + 1))).second) {
      return row.Error("attrs", absl::StrCat("key '", key, "' is given twice"));
    }
  }
  return attrs;
}

const std::string* Attrs::Find(std::string_view key) const {
  const auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

absl::StatusOr<std::int64_t> Attrs::Integer(std::string_view key,
                                            std::optional<std::int64_t> fallback) const {
  const std::string* text = Find(key);
  if (text == nullptr) {
    if (fallback) return *fallback;
    return row_->Error("attrs", absl::StrCat("a ", type_, " needs ", std::string(key), "=..."));
  }
  std::int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value)) {
    return row_->Error("attrs",
                       absl::StrCat(std::string(key), "=", *text, ": the value is not an integer"));
  }
  return value;
}

absl::StatusOr<int> Attrs::Int(std::string_view key, std::optional<int> fallback) const {
  WAVEPOOL_ASSIGN_OR_RETURN(std::int64_t value, Integer(key, fallback));
  return ToInt(*row_, "attrs", value);
}

absl::StatusOr<bool> Attrs::Bool(std::string_view key, bool fallback) const {
  const std::string* text = Find(key);
  if (text == nullptr) return fallback;
  if (*text == "1" || *text == "true") return true;
  if (*text == "0" || *text == "false") return false;
  return row_->Error(
      "attrs", absl::StrCat(std::string(key), "=", *text, ": a boolean is 0, 1, false or true"));
}

absl::StatusOr<std::pair<int, int>> Attrs::Pair(std::string_view key,
                                                std::pair<int, int> fallback) const {
  const std::string* text = Find(key);
  if (text == nullptr) return fallback;
  const std::vector<std::string> parts = absl::StrSplit(*text, 'x');
  std::int64_t first = 0, second = 0;
  const bool parsed = (parts.size() == 1 || parts.size() == 2) &&
                      absl::SimpleAtoi(parts[0], &first) && absl::SimpleAtoi(parts.back(), &second);
  if (!parsed) {
    return row_->Error("attrs", absl::StrCat(std::string(key), "=", *text, ": expected N or HxW"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(int h, ToInt(*row_, "attrs", first));
  WAVEPOOL_ASSIGN_OR_RETURN(int w, ToInt(*row_, "attrs", second));
  return std::make_pair(h, w);
}

}  // namespace wavepool::planner::internal
