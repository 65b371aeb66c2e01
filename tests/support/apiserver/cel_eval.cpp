// The CEL subset's evaluator. Values from the object are typed by their schema node; an error is
// a value too, so that && and || can absorb it as CEL's commutative operators do
// (cel-spec langdef.md "Logical Operators").
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/cel.h"
#include "tests/support/apiserver/cel_internal.h"
#include "tests/support/apiserver/structural_internal.h"

namespace wavepool::testing::apiserver::cel {
namespace {

using nlohmann::json;

constexpr char kNoOverload[] = "no such overload";

struct Value {
  enum Kind { kError, kNull, kBool, kInt, kDouble, kString, kList, kMap };
  Kind kind = kNull;
  bool b = false;
  std::int64_t i = 0;
  double d = 0;
  std::string s;  // a string, or an error's message
  // A list or map from the object: its JSON and schema node (null: dyn, typed by the JSON).
  const json* data = nullptr;
  const json* schema = nullptr;
  std::vector<Value> items;  // a list literal (data == nullptr)
};

Value Error(std::string message) {
  Value v;
  v.kind = Value::kError;
  v.s = std::move(message);
  return v;
}

Value Bool(bool b) {
  Value v;
  v.kind = Value::kBool;
  v.b = b;
  return v;
}

// The JSON integer `x` as a CEL int (a JSON 2.0 passes the schema's integer check too).
Value IntOf(const json& x) {
  Value v;
  v.kind = Value::kInt;
  if (x.is_number_unsigned() &&
      x.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return Error("integer overflow");
  }
  if (x.is_number_float()) {
    const double d = x.get<double>();
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
      return Error("integer overflow");
    }
    v.i = static_cast<std::int64_t>(d);
    return v;
  }
  v.i = x.get<std::int64_t>();
  return v;
}

// `x` typed by `schema` (null: by its JSON type, as dyn).
Value FromJson(const json& x, const json* schema) {
  const std::string type =
      schema != nullptr && !structural::Flag(*schema, "x-kubernetes-int-or-string")
          ? structural::TypeOf(*schema)
          : "";
  Value v;
  if (x.is_null()) return v;
  if (x.is_boolean()) return Bool(x.get<bool>());
  if (x.is_string()) {
    v.kind = Value::kString;
    v.s = x.get<std::string>();
    return v;
  }
  if (x.is_number()) {
    if (type == "integer" || (type != "number" && x.is_number_integer())) return IntOf(x);
    v.kind = Value::kDouble;
    v.d = x.get<double>();
    return v;
  }
  v.kind = x.is_array() ? Value::kList : Value::kMap;
  v.data = &x;
  v.schema = schema;
  return v;
}

// The schema of the field `name` of an object or map node (null: untyped, dyn).
const json* FieldSchema(const json* schema, const std::string& name) {
  if (schema == nullptr) return nullptr;
  if (const json* properties = structural::Sub(*schema, "properties");
      properties != nullptr && properties->contains(name)) {
    return &(*properties)[name];
  }
  return structural::Sub(*schema, "additionalProperties");
}

// The elements of a list value, typed.
std::vector<Value> Elements(const Value& list) {
  if (list.data == nullptr) return list.items;
  std::vector<Value> elements;
  const json* items = list.schema != nullptr ? structural::Sub(*list.schema, "items") : nullptr;
  for (const json& x : *list.data) elements.push_back(FromJson(x, items));
  return elements;
}

// CEL's heterogeneous equality: numbers compare by value across int and double; values of
// different types are unequal.
bool Equal(const Value& a, const Value& b);

bool EqualMaps(const Value& a, const Value& b) {
  if (a.data->size() != b.data->size()) return false;
  for (const auto& [key, x] : a.data->items()) {
    auto other = b.data->find(key);
    if (other == b.data->end()) return false;
    if (!Equal(FromJson(x, FieldSchema(a.schema, key)),
               FromJson(*other, FieldSchema(b.schema, key)))) {
      return false;
    }
  }
  return true;
}

bool Equal(const Value& a, const Value& b) {
  const bool a_number = a.kind == Value::kInt || a.kind == Value::kDouble;
  const bool b_number = b.kind == Value::kInt || b.kind == Value::kDouble;
  if (a_number && b_number) {
    if (a.kind == Value::kInt && b.kind == Value::kInt) return a.i == b.i;
    const long double x = a.kind == Value::kInt ? a.i : a.d;  // exact for every int64
    const long double y = b.kind == Value::kInt ? b.i : b.d;
    return x == y;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::kNull:
      return true;
    case Value::kBool:
      return a.b == b.b;
    case Value::kString:
      return a.s == b.s;
    case Value::kList: {
      const std::vector<Value> x = Elements(a);
      const std::vector<Value> y = Elements(b);
      if (x.size() != y.size()) return false;
      for (std::size_t k = 0; k < x.size(); ++k) {
        if (!Equal(x[k], y[k])) return false;
      }
      return true;
    }
    case Value::kMap:
      return EqualMaps(a, b);
    default:
      return false;
  }
}

// -1, 0 or 1 as `a` is below, equal to or above `b`; 2 when the operands have no ordering (no
// such overload); 3 when they are unordered (a NaN).
int Compare(const Value& a, const Value& b) {
  const bool a_number = a.kind == Value::kInt || a.kind == Value::kDouble;
  const bool b_number = b.kind == Value::kInt || b.kind == Value::kDouble;
  if (a_number && b_number) {
    const long double x = a.kind == Value::kInt ? a.i : a.d;
    const long double y = b.kind == Value::kInt ? b.i : b.d;
    if (std::isnan(x) || std::isnan(y)) return 3;
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.kind != b.kind) return 2;
  if (a.kind == Value::kString) return a.s < b.s ? -1 : (a.s > b.s ? 1 : 0);  // bytewise: UTF-8
  if (a.kind == Value::kBool) return a.b == b.b ? 0 : (a.b ? 1 : -1);
  return 2;
}

class Evaluator {
 public:
  Evaluator(const json& self, const json& self_schema) : self_(self), self_schema_(self_schema) {}

  Value Eval(const Node& node) {
    switch (node.op) {
      case Op::kSelf:
        return FromJson(self_, &self_schema_);
      case Op::kInt: {
        Value v;
        v.kind = Value::kInt;
        v.i = node.int_value;
        return v;
      }
      case Op::kDouble: {
        Value v;
        v.kind = Value::kDouble;
        v.d = node.double_value;
        return v;
      }
      case Op::kString: {
        Value v;
        v.kind = Value::kString;
        v.s = node.text;
        return v;
      }
      case Op::kBool:
        return Bool(node.bool_value);
      case Op::kNull:
        return Value{};
      case Op::kList: {
        Value v;
        v.kind = Value::kList;
        for (const auto& element : node.operands) v.items.push_back(Eval(*element));
        for (const Value& element : v.items) {
          if (element.kind == Value::kError) return element;
        }
        return v;
      }
      case Op::kSelect:
      case Op::kHas:
        return Select(node);
      case Op::kAnd:
      case Op::kOr:
        return Logical(node);
      case Op::kNot:
      case Op::kNegate:
        return Unary(node);
      default:
        return Binary(node);
    }
  }

 private:
  Value Select(const Node& node) {
    const Value operand = Eval(*node.operands[0]);
    if (operand.kind == Value::kError) return operand;
    if (operand.kind != Value::kMap) return Error(kNoOverload);
    auto it = operand.data->find(node.text);
    if (node.op == Op::kHas) return Bool(it != operand.data->end());
    if (it == operand.data->end()) return Error(absl::StrCat("no such key: ", node.text));
    return FromJson(*it, FieldSchema(operand.schema, node.text));
  }

  // false && x and x && false are false whatever x is, an error included; likewise true for ||.
  Value Logical(const Node& node) {
    const bool absorbing = node.op == Op::kOr;
    const Value a = Eval(*node.operands[0]);
    if (a.kind == Value::kBool && a.b == absorbing) return a;
    const Value b = Eval(*node.operands[1]);
    if (b.kind == Value::kBool && b.b == absorbing) return b;
    if (a.kind == Value::kError) return a;
    if (b.kind == Value::kError) return b;
    if (a.kind != Value::kBool || b.kind != Value::kBool) return Error(kNoOverload);
    return Bool(!absorbing);
  }

  Value Unary(const Node& node) {
    Value v = Eval(*node.operands[0]);
    if (v.kind == Value::kError) return v;
    if (node.op == Op::kNot) return v.kind == Value::kBool ? Bool(!v.b) : Error(kNoOverload);
    if (v.kind == Value::kDouble) {
      v.d = -v.d;
    } else if (v.kind == Value::kInt) {
      if (v.i == std::numeric_limits<std::int64_t>::min()) return Error("integer overflow");
      v.i = -v.i;
    } else {
      return Error(kNoOverload);
    }
    return v;
  }

  Value Binary(const Node& node) {
    const Value a = Eval(*node.operands[0]);
    if (a.kind == Value::kError) return a;
    const Value b = Eval(*node.operands[1]);
    if (b.kind == Value::kError) return b;
    switch (node.op) {
      case Op::kEq:
        return Bool(Equal(a, b));
      case Op::kNe:
        return Bool(!Equal(a, b));
      case Op::kIn:
        return In(a, b);
      default:
        break;
    }
    const int order = Compare(a, b);
    if (order == 2) return Error(kNoOverload);
    if (order == 3) return Bool(false);  // NaN is unordered: every comparison is false
    switch (node.op) {
      case Op::kLt:
        return Bool(order < 0);
      case Op::kLe:
        return Bool(order <= 0);
      case Op::kGt:
        return Bool(order > 0);
      default:
        return Bool(order >= 0);
    }
  }

  static Value In(const Value& needle, const Value& haystack) {
    if (haystack.kind == Value::kList) {
      for (const Value& element : Elements(haystack)) {
        if (Equal(needle, element)) return Bool(true);
      }
      return Bool(false);
    }
    if (haystack.kind == Value::kMap && needle.kind == Value::kString) {
      return Bool(haystack.data->contains(needle.s));
    }
    return Error(kNoOverload);
  }

  const json& self_;
  const json& self_schema_;
};

}  // namespace

absl::StatusOr<Program> Program::Compile(std::string_view expression,
                                         const nlohmann::json& self_schema) {
  absl::StatusOr<std::unique_ptr<Node>> root = Parse(expression);
  if (!root.ok()) return root.status();
  absl::StatusOr<Type> type = Check(expression, **root, self_schema);
  if (!type.ok()) return type.status();
  // kube-apiserver's own check on a rule's result (CEL's would allow dyn).
  if (type->kind != Type::kBool) {
    return absl::InvalidArgumentError("cel expression must evaluate to a bool");
  }
  return Program(std::shared_ptr<const Node>(*std::move(root)));
}

absl::StatusOr<bool> Program::Evaluate(const nlohmann::json& self,
                                       const nlohmann::json& self_schema) const {
  const Value result = Evaluator(self, self_schema).Eval(*root_);
  if (result.kind == Value::kError) return absl::InvalidArgumentError(result.s);
  if (result.kind != Value::kBool) return absl::InvalidArgumentError(kNoOverload);
  return result.b;
}

}  // namespace wavepool::testing::apiserver::cel
