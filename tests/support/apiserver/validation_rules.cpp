// x-kubernetes-validations as apiextensions-apiserver applies them: each rule's shape and
// compilation when the CRD is written (apis/apiextensions/validation/validation.go), and the
// rules' evaluation on custom objects after defaulting and schema validation
// (apiserver/schema/cel/validation.go), with the field causes worded as the real server words
// them: `spec.gpus: Invalid value: "object": must be 1 for a Background job`.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/cel.h"
#include "tests/support/apiserver/field_errors.h"
#include "tests/support/apiserver/structural_internal.h"

namespace wavepool::testing::apiserver::structural {
namespace {

using field_errors::Child;
using field_errors::Index;
using nlohmann::json;
using Causes = std::vector<FieldCause>;

constexpr char kRules[] = "x-kubernetes-validations";
constexpr std::size_t kMaxMessageBytes = 2048;

bool HasNewlines(std::string_view text) {
  return text.find_first_of("\r\n") != std::string_view::npos;
}

std::string Trimmed(const json& rule, const char* key) {
  auto it = rule.find(key);
  return it != rule.end() && it->is_string()
             ? std::string(absl::StripAsciiWhitespace(it->get<std::string>()))
             : "";
}

// The schema node a rule's fieldPath (".a.b", ".a['b.c']") names below `schema`, or null when it
// names none.
const json* FieldPathTarget(const json& schema, std::string_view path) {
  const json* node = &schema;
  while (!path.empty()) {
    std::string name;
    if (path.substr(0, 2) == "['") {
      const std::size_t end = path.find("']");
      if (end == std::string_view::npos) return nullptr;
      name = std::string(path.substr(2, end - 2));
      path.remove_prefix(end + 2);
    } else if (path.front() == '.') {
      path.remove_prefix(1);
      const std::size_t end = path.find_first_of(".[");
      name = std::string(path.substr(0, end));
      path.remove_prefix(end == std::string_view::npos ? path.size() : end);
    } else {
      return nullptr;
    }
    if (name.empty()) return nullptr;
    const json* properties = Sub(*node, "properties");
    const json* additional = Sub(*node, "additionalProperties");
    if (properties != nullptr && properties->contains(name)) {
      node = &(*properties)[name];
    } else if (additional != nullptr) {
      node = additional;
    } else {
      return nullptr;
    }
  }
  return node;
}

// The field path a fieldPath adds to the node's path: ".a['b']" -> "a[b]", as field.Path prints.
std::string FieldPathSuffix(std::string_view path) {
  std::string out;
  while (!path.empty()) {
    if (path.substr(0, 2) == "['") {
      const std::size_t end = path.find("']");
      if (end == std::string_view::npos) return Child(out, path);  // not from an accepted CRD
      out = field_errors::Key(out, path.substr(2, end - 2));
      path.remove_prefix(end + 2);
      continue;
    }
    if (path.front() == '.') path.remove_prefix(1);
    const std::size_t end = path.find_first_of(".[");
    out = Child(out, path.substr(0, end));
    path.remove_prefix(end == std::string_view::npos ? path.size() : std::max<std::size_t>(end, 1));
  }
  return out;
}

void CheckMessage(const json& rule, const std::string& at, const std::string& trimmed_rule,
                  Causes& causes) {
  auto message = rule.find("message");
  if (message != rule.end() && !message->is_string()) {
    causes.push_back(field_errors::Invalid(Child(at, "message"), *message, "must be a string"));
    return;
  }
  const std::string raw = message != rule.end() ? message->get<std::string>() : "";
  const std::string trimmed = Trimmed(rule, "message");
  if (!raw.empty() && trimmed.empty()) {
    causes.push_back(
        field_errors::Invalid(Child(at, "message"), raw, "message must be non-empty if specified"));
  } else if (raw.size() > kMaxMessageBytes) {
    causes.push_back(field_errors::Invalid(Child(at, "message"), raw.substr(0, 10) + "...",
                                           "message must have a maximum length of 2048 "
                                           "characters"));
  } else if (HasNewlines(trimmed)) {
    causes.push_back(
        field_errors::Invalid(Child(at, "message"), raw, "message must not contain line breaks"));
  } else if (HasNewlines(trimmed_rule) && trimmed.empty()) {
    causes.push_back(field_errors::Required(Child(at, "message"),
                                            "message must be specified if rule contains line "
                                            "breaks"));
  }
}

void CheckReasonAndFieldPath(const json& rule, const json& schema, const std::string& at,
                             Causes& causes) {
  if (auto reason = rule.find("reason"); reason != rule.end()) {
    static const std::vector<std::string> kReasons = {"FieldValueDuplicate", "FieldValueForbidden",
                                                      "FieldValueInvalid", "FieldValueRequired"};
    const std::string value = reason->is_string() ? reason->get<std::string>() : "";
    if (std::find(kReasons.begin(), kReasons.end(), value) == kReasons.end()) {
      causes.push_back(field_errors::NotSupported(Child(at, "reason"), *reason, kReasons));
    }
  }
  auto field_path = rule.find("fieldPath");
  if (field_path == rule.end()) return;
  const std::string at_path = Child(at, "fieldPath");
  if (!field_path->is_string()) {
    causes.push_back(field_errors::Invalid(at_path, *field_path, "must be a string"));
    return;
  }
  const std::string raw = field_path->get<std::string>();
  if (Trimmed(rule, "fieldPath").empty()) {
    causes.push_back(
        field_errors::Invalid(at_path, raw, "fieldPath must be non-empty if specified"));
  } else if (HasNewlines(raw)) {
    causes.push_back(field_errors::Invalid(at_path, raw, "fieldPath must not contain line breaks"));
  } else if (FieldPathTarget(schema, raw) == nullptr) {
    causes.push_back(field_errors::Invalid(
        at_path, raw, "fieldPath must be a valid path: does not refer to a valid field"));
  }
}

// What the subset does not evaluate is refused, never skipped.
void CheckUnsupported(const json& rule, const std::string& at, Causes& causes) {
  if (auto it = rule.find("messageExpression"); it != rule.end()) {
    causes.push_back(field_errors::Invalid(
        Child(at, "messageExpression"), *it,
        "messageExpression is not supported by this API server (it evaluates a CEL subset); use "
        "message"));
  }
  if (auto it = rule.find("optionalOldSelf"); it != rule.end()) {
    causes.push_back(field_errors::Forbidden(Child(at, "optionalOldSelf"),
                                             "may not be set if rule does not use oldSelf"));
  }
}

void CheckRule(const json& rule, const json& schema, const std::string& at, Causes& causes) {
  if (!rule.is_object()) {
    causes.push_back(field_errors::Invalid(at, rule, "must be a validation rule object"));
    return;
  }
  auto text = rule.find("rule");
  const std::string trimmed_rule = Trimmed(rule, "rule");
  if (text == rule.end() || !text->is_string() || trimmed_rule.empty()) {
    causes.push_back(field_errors::Required(Child(at, "rule"), "rule is not specified"));
  } else {
    CheckMessage(rule, at, trimmed_rule, causes);
  }
  CheckReasonAndFieldPath(rule, schema, at, causes);
  CheckUnsupported(rule, at, causes);
  if (trimmed_rule.empty()) return;
  absl::StatusOr<cel::Program> program = cel::Program::Compile(text->get<std::string>(), schema);
  if (!program.ok()) {
    causes.push_back(
        field_errors::Invalid(Child(at, "rule"), text->get<std::string>(),
                              absl::StrCat("compilation failed: ", program.status().message())));
  }
}

// The detail a rule's failure carries: its message, or the rule itself.
std::string RuleErrorString(const json& rule) {
  const std::string message = Trimmed(rule, "message");
  return message.empty() ? Trimmed(rule, "rule") : message;
}

FieldCause FailureFor(const json& rule, const std::string& path, const std::string& type) {
  const std::string message = Trimmed(rule, "message");
  const std::string detail =
      message.empty() ? absl::StrCat("failed rule: ", Trimmed(rule, "rule")) : message;
  const std::string reason = rule.value("reason", json("")).is_string()
                                 ? rule.value("reason", json("")).get<std::string>()
                                 : "";
  if (reason == "FieldValueForbidden") return field_errors::Forbidden(path, detail);
  if (reason == "FieldValueRequired") return field_errors::Required(path, detail);
  if (reason == "FieldValueDuplicate") {
    return field_errors::Duplicate(path, field_errors::GoQuote(type));
  }
  return field_errors::Invalid(path, type, detail);
}

// The node's own rules for `value`.
void EvaluateNode(const json& value, const json& schema, const std::string& path, Causes& causes) {
  auto rules = schema.find(kRules);
  if (rules == schema.end()) return;
  const std::string type = TypeOf(schema);
  if (!rules->is_array()) {
    causes.push_back(field_errors::Invalid(path, type, "rule compile error: not a list of rules"));
    return;
  }
  for (const json& rule : *rules) {
    const std::string text = rule.is_object() ? Trimmed(rule, "rule") : "";
    absl::StatusOr<cel::Program> program = cel::Program::Compile(text, schema);
    if (!program.ok()) {
      causes.push_back(field_errors::Invalid(
          path, type, absl::StrCat("rule compile error: ", program.status().message())));
      continue;
    }
    absl::StatusOr<bool> result = program->Evaluate(value, schema);
    if (!result.ok()) {
      const std::string error(result.status().message());
      causes.push_back(field_errors::Invalid(
          path, type,
          absl::StartsWith(error, "no such overload")
              ? absl::StrCat("'", error,
                             "': call arguments did not match a supported operator, function or "
                             "macro signature for rule: ",
                             RuleErrorString(rule))
              : absl::StrCat(error, " evaluating rule: ", RuleErrorString(rule))));
    } else if (!*result) {
      std::string at = path;
      if (const std::string field_path = Trimmed(rule, "fieldPath"); !field_path.empty()) {
        at = Child(path, FieldPathSuffix(field_path));
      }
      causes.push_back(FailureFor(rule, at, type));
    }
  }
}

}  // namespace

void CheckRules(const json& schema, const std::string& path, std::vector<FieldCause>& causes) {
  auto rules = schema.find(kRules);
  if (rules == schema.end()) return;
  const std::string at = Child(path, kRules);
  if (!rules->is_array()) {
    causes.push_back(field_errors::Invalid(at, *rules, "must be a list of validation rules"));
    return;
  }
  for (std::size_t i = 0; i < rules->size(); ++i)
    CheckRule((*rules)[i], schema, Index(at, i), causes);
}

bool HasRules(const json& schema) {
  if (!schema.is_object()) return false;
  if (schema.contains(kRules)) return true;
  if (const json* properties = Sub(schema, "properties")) {
    for (const auto& [key, child] : properties->items()) {
      if (HasRules(child)) return true;
    }
  }
  for (const char* keyword : {"items", "additionalProperties"}) {
    if (const json* child = Sub(schema, keyword); child != nullptr && HasRules(*child)) return true;
  }
  return false;
}

void EvaluateRules(const json& value, const json& schema, const std::string& path, const json* old,
                   std::vector<FieldCause>& causes) {
  // An absent or null value has nothing for a rule to look at; an unchanged one ratchets.
  if (!schema.is_object() || value.is_null() || (old != nullptr && *old == value)) return;
  EvaluateNode(value, schema, path, causes);
  if (value.is_object()) {
    const json* properties = Sub(schema, "properties");
    const json* additional = Sub(schema, "additionalProperties");
    for (const auto& [key, child] : value.items()) {
      const json* old_child = nullptr;
      if (old != nullptr && old->is_object()) {
        if (auto it = old->find(key); it != old->end()) old_child = &*it;
      }
      if (properties != nullptr && properties->contains(key)) {
        EvaluateRules(child, (*properties)[key], Child(path, key), old_child, causes);
      } else if (additional != nullptr) {
        EvaluateRules(child, *additional, field_errors::Key(path, key), old_child, causes);
      }
    }
  } else if (value.is_array()) {
    // Items are not correlated with the old list's (a changed list is evaluated whole).
    if (const json* items = Sub(schema, "items")) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        EvaluateRules(value[i], *items, Index(path, i), nullptr, causes);
      }
    }
  }
}

}  // namespace wavepool::testing::apiserver::structural
