// The CEL subset's syntax tree, parser and type checker, shared by its sources. Internal to the
// test API server.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_CEL_INTERNAL_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_CEL_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver::cel {

enum class Op {
  kSelf,
  kInt,
  kDouble,
  kString,
  kBool,
  kNull,
  kList,    // operands: the elements
  kSelect,  // operands[0].text
  kHas,     // has(operands[0].text)
  kNot,
  kNegate,
  kAnd,
  kOr,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIn,
};

struct Node {
  Op op = Op::kNull;
  std::size_t position = 0;  // byte offset of the node's token in the expression
  int depth = 1;             // of the tree below and including this node
  std::int64_t int_value = 0;
  double double_value = 0;
  bool bool_value = false;
  std::string text;  // a string literal's value, or the selected field's name
  std::vector<std::unique_ptr<Node>> operands;
};

// A static type. kObject is a schema object with declared properties (selection must name one);
// kMap one under additionalProperties (any key; `elem` is the values' type).
struct Type {
  enum Kind { kDyn, kNull, kBool, kInt, kDouble, kString, kList, kMap, kObject };
  Kind kind = kDyn;
  const nlohmann::json* schema = nullptr;  // kObject: its schema node
  std::shared_ptr<const Type> elem;        // kList, kMap
};

// "ERROR: <input>:<line>:<column>: <message>" and the line with a caret under `position`, as
// cel-go prints an issue.
std::string Issue(std::string_view expression, std::size_t position, std::string_view message);

// The syntax tree of `expression`; InvalidArgument with an Issue (syntax errors, unsupported
// constructs, the length and nesting bounds).
absl::StatusOr<std::unique_ptr<Node>> Parse(std::string_view expression);

// The type of `node` with `self` of `self_schema`; InvalidArgument with an Issue (undefined
// fields, operands no overload takes).
absl::StatusOr<Type> Check(std::string_view expression, const Node& node,
                           const nlohmann::json& self_schema);

// The static type of a value of a schema node.
Type TypeOfSchema(const nlohmann::json& schema);

}  // namespace wavepool::testing::apiserver::cel

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_CEL_INTERNAL_H_
