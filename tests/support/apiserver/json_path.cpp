// The JSONPath subset of client-go's jsonpath that printer columns use, with missing keys
// allowed (the table convertor's AllowMissingKeys(true)).
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/printer_columns.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;

struct Filter {
  std::vector<std::string> field;  // the path below @
  std::string op;                  // "", "==", "!=", "<", "<=", ">", ">="
  json literal;
};

struct Step {
  enum Kind { kField, kWildcard, kIndex, kFilter } kind;
  std::string name;
  long index = 0;
  Filter filter;
};

absl::Status Syntax(std::string_view path, size_t at, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("JSONPath ", std::string(path), " at offset ", at, ": ", what));
}

// A field name after '.', up to the next unescaped '.' or '['.
std::string ReadName(std::string_view path, size_t& at) {
  std::string name;
  while (at < path.size() && path[at] != '.' && path[at] != '[') {
    if (path[at] == '\\' && at + 1 < path.size()) ++at;
    name.push_back(path[at++]);
  }
  return name;
}

absl::StatusOr<json> ParseLiteral(std::string_view text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    return json(std::string(text.substr(1, text.size() - 2)));
  }
  if (text == "true") return json(true);
  if (text == "false") return json(false);
  const std::string number(text);
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size()) {
    return absl::InvalidArgumentError(absl::StrCat("bad literal ", number));
  }
  return json(value);
}

// "@.a.b OP literal" or "@.a.b".
absl::StatusOr<Filter> ParseFilter(std::string_view text) {
  Filter filter;
  if (text.empty() || text[0] != '@') return absl::InvalidArgumentError("filter must start with @");
  size_t at = 1;
  while (at < text.size() && text[at] == '.') {
    ++at;
    std::string name;
    while (at < text.size() && text[at] != '.' &&
           std::string_view("=!<> ").find(text[at]) == std::string_view::npos) {
      name.push_back(text[at++]);
    }
    filter.field.push_back(name);
  }
  while (at < text.size() && text[at] == ' ') ++at;
  if (at == text.size()) return filter;
  for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
    if (text.substr(at, std::string_view(op).size()) == op) {
      filter.op = op;
      break;
    }
  }
  if (filter.op.empty()) return absl::InvalidArgumentError("unknown filter operator");
  std::string_view rest = text.substr(at + filter.op.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  absl::StatusOr<json> literal = ParseLiteral(rest);
  if (!literal.ok()) return literal.status();
  filter.literal = *std::move(literal);
  return filter;
}

// The bracket starting at `at` ('['), up to its ']'.
absl::StatusOr<Step> ParseBracket(std::string_view path, size_t& at) {
  const size_t close = path.find(']', at);
  if (close == std::string_view::npos) return Syntax(path, at, "unclosed [");
  std::string_view inside = path.substr(at + 1, close - at - 1);
  const size_t start = at;
  at = close + 1;
  Step step{Step::kIndex, "", 0, {}};
  if (inside == "*") {
    step.kind = Step::kWildcard;
  } else if (inside.size() >= 2 && (inside.front() == '\'' || inside.front() == '"')) {
    step.kind = Step::kField;
    step.name = std::string(inside.substr(1, inside.size() - 2));
  } else if (inside.size() >= 3 && inside.substr(0, 2) == "?(" && inside.back() == ')') {
    absl::StatusOr<Filter> filter = ParseFilter(inside.substr(2, inside.size() - 3));
    if (!filter.ok()) return Syntax(path, start, std::string(filter.status().message()));
    step.kind = Step::kFilter;
    step.filter = *std::move(filter);
  } else {
    const std::string number(inside);
    char* end = nullptr;
    step.index = std::strtol(number.c_str(), &end, 10);
    if (number.empty() || end != number.c_str() + number.size()) {
      return Syntax(path, start, absl::StrCat("unsupported subscript [", number, "]"));
    }
  }
  return step;
}

absl::StatusOr<std::vector<Step>> ParsePath(std::string_view path) {
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') {
    path = path.substr(1, path.size() - 2);
  }
  std::vector<Step> steps;
  size_t at = 0;
  while (at < path.size()) {
    if (path[at] == '[') {
      absl::StatusOr<Step> step = ParseBracket(path, at);
      if (!step.ok()) return step.status();
      steps.push_back(*std::move(step));
    } else if (path[at] == '.') {
      ++at;
      if (at < path.size() && path[at] == '.') return Syntax(path, at, "recursive descent (..)");
      if (at < path.size() && path[at] == '*') {
        ++at;
        steps.push_back(Step{Step::kWildcard, "", 0, {}});
        continue;
      }
      std::string name = ReadName(path, at);
      if (!name.empty()) steps.push_back(Step{Step::kField, std::move(name), 0, {}});
    } else {
      return Syntax(path, at, "expected '.' or '['");
    }
  }
  return steps;
}

bool Compare(const json& value, const std::string& op, const json& literal) {
  if (op == "==") return value == literal;
  if (op == "!=") return value != literal;
  if (!value.is_number() || !literal.is_number()) return false;
  const double a = value.get<double>();
  const double b = literal.get<double>();
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a >= b;
}

bool Matches(const json& item, const Filter& filter) {
  const json* value = &item;
  for (const std::string& name : filter.field) {
    if (!value->is_object() || !value->contains(name)) return false;
    value = &(*value)[name];
  }
  return filter.op.empty() || Compare(*value, filter.op, filter.literal);
}

void Apply(const Step& step, const json& node, std::vector<json>& out) {
  switch (step.kind) {
    case Step::kField:
      if (node.is_object() && node.contains(step.name)) out.push_back(node[step.name]);
      break;
    case Step::kWildcard:
      if (node.is_object() || node.is_array()) {
        for (const json& child : node) out.push_back(child);
      }
      break;
    case Step::kIndex: {
      if (!node.is_array()) break;
      const long size = static_cast<long>(node.size());
      const long index = step.index < 0 ? size + step.index : step.index;
      if (index >= 0 && index < size) out.push_back(node[static_cast<size_t>(index)]);
      break;
    }
    case Step::kFilter:
      if (!node.is_array()) break;
      for (const json& item : node) {
        if (Matches(item, step.filter)) out.push_back(item);
      }
      break;
  }
}

}  // namespace

absl::StatusOr<std::vector<nlohmann::json>> EvaluateJsonPath(std::string_view json_path,
                                                             const nlohmann::json& object) {
  absl::StatusOr<std::vector<Step>> steps = ParsePath(json_path);
  if (!steps.ok()) return steps.status();
  std::vector<json> nodes = {object};
  for (const Step& step : *steps) {
    std::vector<json> next;
    for (const json& node : nodes) Apply(step, node, next);
    nodes = std::move(next);
  }
  return nodes;
}

}  // namespace wavepool::testing::apiserver
