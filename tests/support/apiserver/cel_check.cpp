// The CEL subset's type checker: the schema gives `self` its type, as kube-apiserver derives a
// DeclType from the structural schema, and each operator takes the overloads cel-go declares
// (equality needs operands of one type; ordering also takes int against double, Kubernetes
// enabling cross-type numeric comparison; dyn takes anything and is checked when evaluated).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/cel_internal.h"
#include "tests/support/apiserver/structural_internal.h"

namespace wavepool::testing::apiserver::cel {
namespace {

using nlohmann::json;

Type Simple(Type::Kind kind) { return Type{kind, nullptr, nullptr}; }

Type Container(Type::Kind kind, Type elem) {
  return Type{kind, nullptr, std::make_shared<const Type>(std::move(elem))};
}

std::string Name(const Type& type) {
  switch (type.kind) {
    case Type::kDyn:
      return "dyn";
    case Type::kNull:
      return "null_type";
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kDouble:
      return "double";
    case Type::kString:
      return "string";
    case Type::kList:
      return absl::StrCat("list(", Name(*type.elem), ")");
    case Type::kMap:
      return absl::StrCat("map(string, ", Name(*type.elem), ")");
    case Type::kObject:
      return "object";
  }
  return "dyn";
}

// Whether values of `a` and `b` may be compared for equality (cel-go unifies the operands).
bool Unifies(const Type& a, const Type& b) {
  if (a.kind == Type::kDyn || b.kind == Type::kDyn) return true;
  if (a.kind != b.kind) return false;
  if (a.kind == Type::kList || a.kind == Type::kMap) return Unifies(*a.elem, *b.elem);
  if (a.kind == Type::kObject) return a.schema == b.schema;
  return true;
}

bool IsNumber(const Type& t) { return t.kind == Type::kInt || t.kind == Type::kDouble; }

bool Orderable(const Type& a, const Type& b) {
  if (a.kind == Type::kDyn || b.kind == Type::kDyn) return true;
  if (IsNumber(a) && IsNumber(b)) return true;
  return a.kind == b.kind && (a.kind == Type::kString || a.kind == Type::kBool);
}

const char* OperatorName(Op op) {
  switch (op) {
    case Op::kNot:
      return "!_";
    case Op::kNegate:
      return "-_";
    case Op::kAnd:
      return "_&&_";
    case Op::kOr:
      return "_||_";
    case Op::kEq:
      return "_==_";
    case Op::kNe:
      return "_!=_";
    case Op::kLt:
      return "_<_";
    case Op::kLe:
      return "_<=_";
    case Op::kGt:
      return "_>_";
    case Op::kGe:
      return "_>=_";
    case Op::kIn:
      return "@in";
    default:
      return "?";
  }
}

class Checker {
 public:
  Checker(std::string_view expression, const json& self_schema)
      : expression_(expression), self_schema_(self_schema) {}

  absl::StatusOr<Type> Check(const Node& node) {
    switch (node.op) {
      case Op::kSelf:
        return TypeOfSchema(self_schema_);
      case Op::kInt:
        return Simple(Type::kInt);
      case Op::kDouble:
        return Simple(Type::kDouble);
      case Op::kString:
        return Simple(Type::kString);
      case Op::kBool:
        return Simple(Type::kBool);
      case Op::kNull:
        return Simple(Type::kNull);
      case Op::kList:
        return CheckList(node);
      case Op::kSelect:
      case Op::kHas:
        return CheckSelect(node);
      default:
        return CheckOperator(node);
    }
  }

 private:
  absl::Status Error(const Node& node, std::string_view message) const {
    return absl::InvalidArgumentError(Issue(expression_, node.position, message));
  }

  absl::Status NoOverload(const Node& node, const std::vector<Type>& operands) const {
    std::string names;
    for (const Type& t : operands) absl::StrAppend(&names, names.empty() ? "" : ", ", Name(t));
    return Error(node, absl::StrCat("found no matching overload for '", OperatorName(node.op),
                                    "' applied to '(", names, ")'"));
  }

  absl::StatusOr<Type> CheckList(const Node& node) {
    Type elem = Simple(Type::kDyn);
    for (std::size_t i = 0; i < node.operands.size(); ++i) {
      absl::StatusOr<Type> t = Check(*node.operands[i]);
      if (!t.ok()) return t.status();
      // A list of mixed element types is a list(dyn), as cel-go types it.
      if (i == 0) {
        elem = *t;
      } else if (!Unifies(elem, *t) || elem.kind == Type::kDyn || t->kind == Type::kDyn) {
        elem = Simple(Type::kDyn);
      }
    }
    return Container(Type::kList, elem);
  }

  // Selection and has(): the operand must have fields, and an object the field.
  absl::StatusOr<Type> CheckSelect(const Node& node) {
    absl::StatusOr<Type> operand = Check(*node.operands[0]);
    if (!operand.ok()) return operand;
    Type field;
    switch (operand->kind) {
      case Type::kDyn:
        field = Simple(Type::kDyn);
        break;
      case Type::kMap:
        field = *operand->elem;
        break;
      case Type::kObject: {
        const json* properties = structural::Sub(*operand->schema, "properties");
        if (properties == nullptr || !properties->contains(node.text)) {
          return Error(node, absl::StrCat("undefined field '", node.text, "'"));
        }
        field = TypeOfSchema((*properties)[node.text]);
        break;
      }
      default:
        if (node.op == Op::kHas) return Error(node, "invalid argument to has() macro");
        return Error(node,
                     absl::StrCat("type '", Name(*operand), "' does not support field selection"));
    }
    return node.op == Op::kHas ? Simple(Type::kBool) : field;
  }

  absl::StatusOr<Type> CheckOperator(const Node& node) {
    std::vector<Type> operands;
    for (const auto& operand : node.operands) {
      absl::StatusOr<Type> t = Check(*operand);
      if (!t.ok()) return t.status();
      operands.push_back(*std::move(t));
    }
    const Type& a = operands[0];
    switch (node.op) {
      case Op::kNot:
        if (a.kind == Type::kBool || a.kind == Type::kDyn) return Simple(Type::kBool);
        break;
      case Op::kNegate:
        if (IsNumber(a) || a.kind == Type::kDyn) return a;
        break;
      case Op::kAnd:
      case Op::kOr:
        if ((a.kind == Type::kBool || a.kind == Type::kDyn) &&
            (operands[1].kind == Type::kBool || operands[1].kind == Type::kDyn)) {
          return Simple(Type::kBool);
        }
        break;
      case Op::kEq:
      case Op::kNe:
        if (Unifies(a, operands[1])) return Simple(Type::kBool);
        break;
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
        if (Orderable(a, operands[1])) return Simple(Type::kBool);
        break;
      case Op::kIn: {
        const Type& container = operands[1];
        if (container.kind == Type::kDyn ||
            (container.kind == Type::kList && Unifies(a, *container.elem)) ||
            (container.kind == Type::kMap && (a.kind == Type::kString || a.kind == Type::kDyn))) {
          return Simple(Type::kBool);
        }
        break;
      }
      default:
        return Error(node, "internal error: unknown operator");
    }
    return NoOverload(node, operands);
  }

  std::string_view expression_;
  const json& self_schema_;
};

}  // namespace

Type TypeOfSchema(const json& schema) {
  if (!schema.is_object() || structural::Flag(schema, "x-kubernetes-int-or-string")) {
    return Simple(Type::kDyn);
  }
  const std::string type = structural::TypeOf(schema);
  if (type == "integer") return Simple(Type::kInt);
  if (type == "number") return Simple(Type::kDouble);
  if (type == "string") return Simple(Type::kString);
  if (type == "boolean") return Simple(Type::kBool);
  if (type == "array") {
    const json* items = structural::Sub(schema, "items");
    return Container(Type::kList, items != nullptr ? TypeOfSchema(*items) : Simple(Type::kDyn));
  }
  if (type != "object") return Simple(Type::kDyn);
  if (structural::Sub(schema, "properties") != nullptr) return Type{Type::kObject, &schema, {}};
  auto additional = schema.find("additionalProperties");
  if (additional != schema.end() && additional->is_object()) {
    return Container(Type::kMap, TypeOfSchema(*additional));
  }
  if ((additional != schema.end() && additional->is_boolean() && additional->get<bool>()) ||
      structural::Flag(schema, "x-kubernetes-preserve-unknown-fields")) {
    // Fields nobody declared: what is there is known only when the rule runs.
    return Simple(Type::kDyn);
  }
  return Type{Type::kObject, &schema, {}};  // an object without fields
}

absl::StatusOr<Type> Check(std::string_view expression, const Node& node, const json& self_schema) {
  return Checker(expression, self_schema).Check(node);
}

}  // namespace wavepool::testing::apiserver::cel
