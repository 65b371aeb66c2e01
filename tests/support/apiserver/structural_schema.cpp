// CRD schemas as apiextensions-apiserver applies them: the structural-schema checks
// (pkg/apiserver/schema/validation.go and the CRD's own validation), defaulting
// (pkg/apiserver/schema/defaulting) and pruning (pkg/apiserver/schema/pruning).
#include "tests/support/apiserver/structural_schema.h"

#include <algorithm>
#include <regex>
#include <set>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/field_errors.h"
#include "tests/support/apiserver/structural_internal.h"

namespace wavepool::testing::apiserver {
namespace structural {

bool Flag(const nlohmann::json& schema, const char* keyword) {
  auto it = schema.find(keyword);
  return it != schema.end() && it->is_boolean() && it->get<bool>();
}

std::string TypeOf(const nlohmann::json& schema) {
  auto it = schema.find("type");
  return it != schema.end() && it->is_string() ? it->get<std::string>() : "";
}

const nlohmann::json* Sub(const nlohmann::json& schema, const char* keyword) {
  auto it = schema.find(keyword);
  return it != schema.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace structural

namespace {

using field_errors::Child;
using field_errors::Forbidden;
using field_errors::Index;
using field_errors::Invalid;
using field_errors::Key;
using field_errors::NotSupported;
using field_errors::Required;
using nlohmann::json;
using structural::Flag;
using structural::Sub;
using structural::TypeOf;

enum class Level { kRoot, kItem, kField };

using Causes = std::vector<FieldCause>;

// The ObjectMeta fields: metadata keeps these and nothing else (it is decoded into ObjectMeta).
const std::set<std::string>& ObjectMetaFields() {
  static const auto* fields = new std::set<std::string>{"name",
                                                        "generateName",
                                                        "namespace",
                                                        "selfLink",
                                                        "uid",
                                                        "resourceVersion",
                                                        "generation",
                                                        "creationTimestamp",
                                                        "deletionTimestamp",
                                                        "deletionGracePeriodSeconds",
                                                        "labels",
                                                        "annotations",
                                                        "ownerReferences",
                                                        "finalizers",
                                                        "managedFields"};
  return *fields;
}

// JSON-Schema keywords a CRD schema may not use (apiextensions validation).
void CheckUnsupportedKeywords(const json& s, const std::string& path, Causes& causes) {
  for (const char* keyword : {"$ref", "$schema", "id", "additionalItems", "patternProperties",
                              "definitions", "dependencies"}) {
    if (s.contains(keyword)) {
      causes.push_back(Forbidden(Child(path, keyword), absl::StrCat(keyword, " is not supported")));
    }
  }
  if (Flag(s, "uniqueItems")) {
    causes.push_back(Forbidden(Child(path, "uniqueItems"),
                               "uniqueItems cannot be set to true since the runtime complexity "
                               "becomes quadratic"));
  }
}

void CheckType(const json& s, Level level, const std::string& path, Causes& causes) {
  static const std::vector<std::string> kTypes = {"array",  "boolean", "integer",
                                                  "number", "object",  "string"};
  auto it = s.find("type");
  const std::string type = TypeOf(s);
  if (it != s.end() &&
      (!it->is_string() || std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end())) {
    causes.push_back(NotSupported(Child(path, "type"), *it, kTypes));
  }
  const bool int_or_string = Flag(s, "x-kubernetes-int-or-string");
  if (type.empty() && !int_or_string && !Flag(s, "x-kubernetes-preserve-unknown-fields")) {
    const char* detail = level == Level::kRoot   ? "must not be empty at the root"
                         : level == Level::kItem ? "must not be empty for specified array items"
                                                 : "must not be empty for specified object fields";
    causes.push_back(Required(Child(path, "type"), detail));
  }
  if (!type.empty() && int_or_string) {
    causes.push_back(
        Invalid(Child(path, "type"), type, "must be empty if x-kubernetes-int-or-string is true"));
  }
  if (level == Level::kRoot && !type.empty() && type != "object") {
    causes.push_back(Invalid(Child(path, "type"), type, "must be object at the root"));
  }
  if (type == "array" && !s.contains("items")) {
    causes.push_back(Required(Child(path, "items"), "must be specified"));
  }
}

void CheckExtensions(const json& s, const std::string& path, Causes& causes) {
  auto preserve = s.find("x-kubernetes-preserve-unknown-fields");
  if (preserve != s.end() && !(preserve->is_boolean() && preserve->get<bool>())) {
    causes.push_back(Invalid(Child(path, "x-kubernetes-preserve-unknown-fields"), *preserve,
                             "must be true or undefined"));
  }
  if (Flag(s, "x-kubernetes-int-or-string") && Flag(s, "x-kubernetes-preserve-unknown-fields")) {
    causes.push_back(Invalid(Child(path, "x-kubernetes-preserve-unknown-fields"), true,
                             "must be false if x-kubernetes-int-or-string is true"));
  }
  auto list_type = s.find("x-kubernetes-list-type");
  if (list_type != s.end()) {
    static const std::vector<std::string> kListTypes = {"atomic", "map", "set"};
    const std::string value = list_type->is_string() ? list_type->get<std::string>() : "";
    if (std::find(kListTypes.begin(), kListTypes.end(), value) == kListTypes.end()) {
      causes.push_back(NotSupported(Child(path, "x-kubernetes-list-type"), *list_type, kListTypes));
    }
    auto keys = s.find("x-kubernetes-list-map-keys");
    if (value == "map" && (keys == s.end() || !keys->is_array() || keys->empty())) {
      causes.push_back(Required(Child(path, "x-kubernetes-list-map-keys"),
                                "must not be empty if x-kubernetes-list-type is map"));
    }
  }
}

void CheckValueKeywords(const json& s, const std::string& path, Causes& causes) {
  auto pattern = s.find("pattern");
  if (pattern != s.end()) {
    if (!pattern->is_string()) {
      causes.push_back(Invalid(Child(path, "pattern"), *pattern, "must be a string"));
    } else {
      try {
        std::regex compiled(pattern->get<std::string>(), std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        causes.push_back(
            Invalid(Child(path, "pattern"), *pattern,
                    absl::StrCat("must be a valid regular expression, but isn't: ", e.what())));
      }
    }
  }
  auto enum_values = s.find("enum");
  if (enum_values != s.end() && !enum_values->is_array()) {
    causes.push_back(Invalid(Child(path, "enum"), *enum_values, "must be a list of values"));
  }
}

// A value validation under allOf/anyOf/oneOf/not may restrict values but not declare structure
// ("must be empty to be structural").
void CheckNested(const json& v, Level level, const std::string& path, bool int_or_string_branch,
                 Causes& causes) {
  if (!v.is_object()) {
    causes.push_back(Invalid(path, v, "must be a schema object"));
    return;
  }
  if (v.contains("type") && !int_or_string_branch) {
    causes.push_back(Forbidden(Child(path, "type"), "must be empty to be structural"));
  }
  for (const char* keyword : {"additionalProperties", "default"}) {
    if (v.contains(keyword)) {
      causes.push_back(Forbidden(Child(path, keyword), "must be undefined to be structural"));
    }
  }
  for (const char* keyword : {"title", "description", "x-kubernetes-validations"}) {
    if (v.contains(keyword)) {
      causes.push_back(Forbidden(Child(path, keyword), "must be empty to be structural"));
    }
  }
  for (const char* keyword : {"nullable", "x-kubernetes-preserve-unknown-fields",
                              "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string"}) {
    if (Flag(v, keyword)) {
      causes.push_back(Forbidden(Child(path, keyword), "must be false to be structural"));
    }
  }
  if (const json* properties = Sub(v, "properties")) {
    if (properties->contains("metadata")) {
      causes.push_back(Forbidden(Key(Child(path, "properties"), "metadata"),
                                 "must not be specified in a nested context"));
    }
    for (const auto& [key, child] : properties->items()) {
      CheckNested(child, Level::kField, Key(Child(path, "properties"), key), false, causes);
    }
  }
  if (const json* items = Sub(v, "items")) {
    CheckNested(*items, level, Child(path, "items"), false, causes);
  }
  for (const char* junctor : {"allOf", "anyOf", "oneOf"}) {
    auto it = v.find(junctor);
    if (it == v.end() || !it->is_array()) continue;
    for (size_t i = 0; i < it->size(); ++i) {
      CheckNested((*it)[i], level, Index(Child(path, junctor), i), false, causes);
    }
  }
  if (const json* negated = Sub(v, "not"))
    CheckNested(*negated, level, Child(path, "not"), false, causes);
}

// anyOf: [{type: integer}, {type: string}] is the one structure allowed with int-or-string.
bool IsIntOrStringAnyOf(const json& junction) {
  return junction.is_array() && junction.size() == 2 && junction[0] == json{{"type", "integer"}} &&
         junction[1] == json{{"type", "string"}};
}

void CheckJunctors(const json& s, Level level, const std::string& path, Causes& causes) {
  const bool int_or_string = Flag(s, "x-kubernetes-int-or-string");
  for (const char* junctor : {"allOf", "anyOf", "oneOf"}) {
    auto it = s.find(junctor);
    if (it == s.end()) continue;
    if (!it->is_array()) {
      causes.push_back(Invalid(Child(path, junctor), *it, "must be a list of schemas"));
      continue;
    }
    const bool skip = int_or_string && std::string(junctor) == "anyOf" && IsIntOrStringAnyOf(*it);
    for (size_t i = 0; i < it->size(); ++i) {
      CheckNested((*it)[i], level, Index(Child(path, junctor), i), skip, causes);
    }
  }
  if (const json* negated = Sub(s, "not"))
    CheckNested(*negated, level, Child(path, "not"), false, causes);
}

// metadata at the root may restrict only name and generateName.
void CheckResourceRoot(const json& s, const std::string& path, Causes& causes) {
  const json* properties = Sub(s, "properties");
  if (properties == nullptr) return;
  const std::string props_path = Child(path, "properties");
  for (const char* field : {"kind", "apiVersion"}) {
    auto it = properties->find(field);
    if (it != properties->end() && it->is_object() && TypeOf(*it) != "string") {
      causes.push_back(
          Invalid(Child(Key(props_path, field), "type"), TypeOf(*it), "must be string"));
    }
  }
  auto metadata = properties->find("metadata");
  if (metadata == properties->end() || !metadata->is_object()) return;
  if (TypeOf(*metadata) != "object") {
    causes.push_back(
        Invalid(Child(Key(props_path, "metadata"), "type"), TypeOf(*metadata), "must be object"));
  }
  json rest = *metadata;
  rest.erase("type");
  rest.erase("default");
  if (const json* meta_props = Sub(rest, "properties")) {
    json kept = *meta_props;
    kept.erase("name");
    kept.erase("generateName");
    if (kept.empty()) rest.erase("properties");
  }
  if (!rest.empty()) {
    causes.push_back(Forbidden(Key(props_path, "metadata"),
                               "must not specify anything other than name and generateName, but "
                               "metadata is implicitly specified"));
  }
}

void Default(json& x, const json& s);

// Whether every rule under `s` is well formed and compiles.
bool RulesCompile(const json& s) {
  if (!s.is_object()) return true;
  Causes causes;
  structural::CheckRules(s, "", causes);
  if (!causes.empty()) return false;
  if (const json* properties = Sub(s, "properties")) {
    for (const auto& [key, child] : properties->items()) {
      if (!RulesCompile(child)) return false;
    }
  }
  for (const char* keyword : {"items", "additionalProperties"}) {
    if (const json* child = Sub(s, keyword); child != nullptr && !RulesCompile(*child))
      return false;
  }
  return true;
}

// A default, once given its own nested defaults, must satisfy the schema it sits in.
void CheckDefault(const json& s, const std::string& path, Causes& causes) {
  auto it = s.find("default");
  if (it == s.end()) return;
  json value = *it;
  Default(value, s);
  Causes inner;
  structural::ValidateValue(value, s, "", inner);
  // A default must satisfy the rules too; a rule that does not compile is reported on its own.
  if (inner.empty() && RulesCompile(s)) structural::EvaluateRules(value, s, "", nullptr, inner);
  for (FieldCause& cause : inner) {
    cause.field =
        cause.field.empty() ? Child(path, "default") : Child(Child(path, "default"), cause.field);
    causes.push_back(std::move(cause));
  }
}

void CheckNode(const json& s, Level level, const std::string& path, Causes& causes) {
  if (!s.is_object()) {
    causes.push_back(Invalid(path, s, "must be a schema object"));
    return;
  }
  CheckUnsupportedKeywords(s, path, causes);
  CheckType(s, level, path, causes);
  CheckExtensions(s, path, causes);
  CheckValueKeywords(s, path, causes);
  CheckJunctors(s, level, path, causes);
  structural::CheckRules(s, path, causes);
  if (level == Level::kRoot) CheckResourceRoot(s, path, causes);
  if (auto it = s.find("properties"); it != s.end()) {
    if (!it->is_object()) {
      causes.push_back(Invalid(Child(path, "properties"), *it, "must be a map of schemas"));
    } else {
      for (const auto& [key, child] : it->items()) {
        CheckNode(child, Level::kField, Key(Child(path, "properties"), key), causes);
      }
    }
  }
  if (auto it = s.find("items"); it != s.end()) {
    if (it->is_array()) {
      causes.push_back(
          Forbidden(Child(path, "items"), "items must be a schema object and not an array"));
    } else {
      CheckNode(*it, Level::kItem, Child(path, "items"), causes);
    }
  }
  if (auto it = s.find("additionalProperties"); it != s.end()) {
    const std::string ap_path = Child(path, "additionalProperties");
    if (level == Level::kRoot) causes.push_back(Forbidden(ap_path, "must not be used at the root"));
    if (s.contains("properties")) {
      causes.push_back(
          Forbidden(ap_path, "additionalProperties and properties are mutual exclusive"));
    }
    if (it->is_boolean() && !it->get<bool>()) {
      causes.push_back(Forbidden(ap_path, "additionalProperties cannot be set to false"));
    } else if (it->is_object()) {
      CheckNode(*it, Level::kField, ap_path, causes);
    }
  }
  CheckDefault(s, path, causes);
}

// Defaulting, top-down: a defaulted object then receives its own children's defaults.
bool NeedsDefault(const json& value, const json& schema) {
  return value.is_null() && !Flag(schema, "nullable");
}

void Default(json& x, const json& s) {
  if (x.is_object()) {
    const json* properties = Sub(s, "properties");
    if (properties != nullptr) {
      for (const auto& [key, prop] : properties->items()) {
        if (!prop.is_object() || !prop.contains("default")) continue;
        auto it = x.find(key);
        if (it == x.end() || NeedsDefault(*it, prop)) x[key] = prop["default"];
      }
    }
    const json* additional = Sub(s, "additionalProperties");
    for (auto& [key, value] : x.items()) {
      if (properties != nullptr && properties->contains(key)) {
        Default(value, (*properties)[key]);
      } else if (additional != nullptr) {
        if (NeedsDefault(value, *additional) && additional->contains("default")) {
          value = (*additional)["default"];
        }
        Default(value, *additional);
      }
    }
  } else if (x.is_array()) {
    const json* items = Sub(s, "items");
    if (items == nullptr) return;
    for (json& element : x) {
      if (NeedsDefault(element, *items) && items->contains("default"))
        element = (*items)["default"];
      Default(element, *items);
    }
  }
}

// Pruning: paths are reported as ".spec.colour", ".spec.items[0].x".
void PruneValue(json& x, const json* s, const std::string& path, bool resource_root,
                std::vector<std::string>& pruned);

void PruneMetadata(json& metadata, const std::string& path, std::vector<std::string>& pruned) {
  for (auto it = metadata.begin(); it != metadata.end();) {
    if (ObjectMetaFields().count(it.key()) == 0) {
      pruned.push_back(absl::StrCat(path, ".", it.key()));
      it = metadata.erase(it);
    } else {
      ++it;
    }
  }
}

// apiVersion, kind and metadata of a resource (the root or an embedded resource) are kept.
bool KeepResourceField(json& value, const std::string& key, const std::string& path,
                       std::vector<std::string>& pruned) {
  if ((key == "apiVersion" || key == "kind") && value.is_string()) return true;
  if (key == "metadata" && value.is_object()) {
    PruneMetadata(value, absl::StrCat(path, ".metadata"), pruned);
    return true;
  }
  return false;
}

// Under x-kubernetes-preserve-unknown-fields: unknown fields stay, known ones are pruned inside.
void SkipPrune(json& x, const json& s, const std::string& path, bool resource_root,
               std::vector<std::string>& pruned) {
  const json* properties = Sub(s, "properties");
  const json* additional = Sub(s, "additionalProperties");
  if (x.is_object()) {
    const bool resource = resource_root || Flag(s, "x-kubernetes-embedded-resource");
    for (auto& [key, value] : x.items()) {
      if (resource && KeepResourceField(value, key, path, pruned)) continue;
      const std::string child = absl::StrCat(path, ".", key);
      if (properties != nullptr && properties->contains(key)) {
        PruneValue(value, &(*properties)[key], child, false, pruned);
      } else if (additional != nullptr) {
        PruneValue(value, additional, child, false, pruned);
      }
    }
  } else if (x.is_array()) {
    const json* items = Sub(s, "items");
    if (items == nullptr) return;
    for (size_t i = 0; i < x.size(); ++i) {
      SkipPrune(x[i], *items, absl::StrCat(path, "[", i, "]"), false, pruned);
    }
  }
}

void PruneObject(json& x, const json& s, const std::string& path, bool resource_root,
                 std::vector<std::string>& pruned) {
  const json* properties = Sub(s, "properties");
  auto additional = s.find("additionalProperties");
  const bool resource = resource_root || Flag(s, "x-kubernetes-embedded-resource");
  for (auto it = x.begin(); it != x.end();) {
    const std::string key = it.key();
    const std::string child = absl::StrCat(path, ".", key);
    if (resource && KeepResourceField(it.value(), key, path, pruned)) {
      ++it;
    } else if (properties != nullptr && properties->contains(key)) {
      PruneValue(it.value(), &(*properties)[key], child, false, pruned);
      ++it;
    } else if (additional != s.end() && additional->is_object()) {
      PruneValue(it.value(), &*additional, child, false, pruned);
      ++it;
    } else if (additional != s.end() && additional->is_boolean() && additional->get<bool>()) {
      ++it;  // additionalProperties: true keeps any value as it is
    } else {
      pruned.push_back(child);
      it = x.erase(it);
    }
  }
}

void PruneValue(json& x, const json* s, const std::string& path, bool resource_root,
                std::vector<std::string>& pruned) {
  if (s != nullptr && Flag(*s, "x-kubernetes-preserve-unknown-fields")) {
    SkipPrune(x, *s, path, resource_root, pruned);
    return;
  }
  if (x.is_object()) {
    if (s == nullptr) {
      for (const auto& [key, value] : x.items()) pruned.push_back(absl::StrCat(path, ".", key));
      x = json::object();
      return;
    }
    PruneObject(x, *s, path, resource_root, pruned);
  } else if (x.is_array()) {
    const json* items = s != nullptr ? Sub(*s, "items") : nullptr;
    for (size_t i = 0; i < x.size(); ++i) {
      PruneValue(x[i], items, absl::StrCat(path, "[", i, "]"), false, pruned);
    }
  }
}

}  // namespace

std::vector<FieldCause> StructuralSchema::Check(const nlohmann::json& open_api_v3_schema,
                                                const std::string& field_prefix) {
  Causes causes;
  CheckNode(open_api_v3_schema, Level::kRoot, field_prefix, causes);
  // The server sorts structural errors by their text; do the same for a stable answer.
  std::stable_sort(causes.begin(), causes.end(), [](const FieldCause& a, const FieldCause& b) {
    return std::tie(a.field, a.message) < std::tie(b.field, b.message);
  });
  return causes;
}

absl::StatusOr<StructuralSchema> StructuralSchema::Parse(const nlohmann::json& open_api_v3_schema,
                                                         const std::string& field_prefix) {
  const Causes causes = Check(open_api_v3_schema, field_prefix);
  if (!causes.empty()) return absl::InvalidArgumentError(field_errors::JoinCauses(causes));
  return StructuralSchema(open_api_v3_schema);
}

void StructuralSchema::ApplyDefaults(nlohmann::json& object) const { Default(object, schema_); }

std::vector<std::string> StructuralSchema::Prune(nlohmann::json& object) const {
  std::vector<std::string> pruned;
  PruneValue(object, &schema_, "", true, pruned);
  return pruned;
}

}  // namespace wavepool::testing::apiserver
