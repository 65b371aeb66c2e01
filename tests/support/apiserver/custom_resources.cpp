// CustomResourceDefinitions (apiextensions.k8s.io/v1): validation of the definition
// (apiextensions validation.go), its status as the establishing and naming controllers would set
// it, the resources it serves, and the schema applied to its objects (decode with pruning and
// strict field validation, then defaulting, then validation).
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/builtin_resources.h"
#include "tests/support/apiserver/names.h"
#include "tests/support/apiserver/store_core.h"

namespace wavepool::testing::apiserver::store_internal {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string StringAt(const nlohmann::json& object, const char* field) {
  if (!object.is_object() || !object.contains(field) || !object[field].is_string()) return "";
  return object[field].get<std::string>();
}

void Required(std::vector<FieldCause>& causes, const std::string& field) {
  causes.push_back({"FieldValueRequired", field, "Required value"});
}

void CheckNames(const nlohmann::json& crd, std::vector<FieldCause>& causes) {
  const nlohmann::json& spec = crd["spec"];
  const std::string group = StringAt(spec, "group");
  if (group.empty()) {
    Required(causes, "spec.group");
  } else if (!CheckDns1123Subdomain(group).empty() || group.find('.') == std::string::npos) {
    causes.push_back({"FieldValueInvalid", "spec.group",
                      InvalidValueBody(group, "should be a domain with at least one dot")});
  }
  const nlohmann::json& names = spec.value("names", nlohmann::json::object());
  const std::string plural = StringAt(names, "plural");
  if (plural.empty())
    Required(causes, "spec.names.plural");
  else if (std::string why = CheckDns1123Label(plural); !why.empty()) {
    causes.push_back({"FieldValueInvalid", "spec.names.plural", InvalidValueBody(plural, why)});
  }
  if (StringAt(names, "kind").empty()) Required(causes, "spec.names.kind");
  const std::string name = MetaString(crd, "name");
  if (!plural.empty() && !group.empty() && name != absl::StrCat(plural, ".", group)) {
    causes.push_back({"FieldValueInvalid", "metadata.name",
                      InvalidValueBody(name, "must be spec.names.plural+\".\"+spec.group")});
  }
  const std::string scope = StringAt(spec, "scope");
  if (scope.empty())
    Required(causes, "spec.scope");
  else if (scope != "Namespaced" && scope != "Cluster") {
    causes.push_back({"FieldValueNotSupported", "spec.scope",
                      absl::StrCat("Unsupported value: \"", scope,
                                   "\": supported values: \"Cluster\", \"Namespaced\"")});
  }
}

void CheckVersions(const nlohmann::json& crd, std::vector<FieldCause>& causes) {
  const nlohmann::json& versions = crd["spec"].value("versions", nlohmann::json());
  if (!versions.is_array() || versions.empty()) {
    causes.push_back({"FieldValueInvalid", "spec.versions",
                      "Invalid value: null: must have exactly one version marked as storage "
                      "version"});
    return;
  }
  int storage = 0;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < versions.size(); ++i) {
    const nlohmann::json& v = versions[i];
    const std::string at = absl::StrCat("spec.versions[", i, "]");
    const std::string name = StringAt(v, "name");
    if (name.empty())
      Required(causes, at + ".name");
    else if (std::string why = CheckDns1123Label(name); !why.empty()) {
      causes.push_back({"FieldValueInvalid", at + ".name", InvalidValueBody(name, why)});
    } else if (!seen.insert(name).second) {
      causes.push_back({"FieldValueInvalid", "spec.versions",
                        absl::StrCat("Invalid value: ", versions.dump(),
                                     ": must contain unique version names")});
    }
    if (v.value("storage", false)) ++storage;
    const std::string prefix = at + ".schema.openAPIV3Schema";
    const nlohmann::json& schema = v.value("schema", nlohmann::json::object());
    if (!schema.is_object() || !schema.contains("openAPIV3Schema")) {
      causes.push_back({"FieldValueRequired", prefix, "Required value: schemas are required"});
      continue;
    }
    for (FieldCause& cause : StructuralSchema::Check(schema["openAPIV3Schema"], prefix)) {
      causes.push_back(std::move(cause));
    }
  }
  if (storage != 1) {
    causes.push_back({"FieldValueInvalid", "spec.versions",
                      absl::StrCat("Invalid value: ", versions.dump(),
                                   ": must have exactly one version marked as storage version")});
  }
}

nlohmann::json AcceptedNames(const nlohmann::json& names) {
  nlohmann::json accepted = names;
  const std::string kind = StringAt(names, "kind");
  if (StringAt(names, "singular").empty()) accepted["singular"] = Lower(kind);
  if (StringAt(names, "listKind").empty()) accepted["listKind"] = absl::StrCat(kind, "List");
  return accepted;
}

// A True condition; it keeps the transition time `previous` (the CRD's current status) gives it,
// so that an update changing nothing else stays a no-op.
nlohmann::json Condition(const nlohmann::json& previous, const char* type, const char* reason,
                         const char* message) {
  std::string since = TimestampFromNow();
  const nlohmann::json& conditions = previous.is_object()
                                         ? previous.value("conditions", nlohmann::json::array())
                                         : nlohmann::json::array();
  for (const nlohmann::json& c : conditions) {
    if (c.is_object() && c.value("type", "") == type && c.value("status", "") == "True" &&
        c.contains("lastTransitionTime") && c["lastTransitionTime"].is_string()) {
      since = c["lastTransitionTime"].get<std::string>();
    }
  }
  return {{"type", type},
          {"status", "True"},
          {"lastTransitionTime", since},
          {"reason", reason},
          {"message", message}};
}

}  // namespace

absl::Status PrepareCrdLocked(const StoreCore& core, nlohmann::json& crd, bool creating) {
  std::vector<FieldCause> causes;
  if (!crd.contains("spec") || !crd["spec"].is_object()) {
    Required(causes, "spec");
  } else {
    CheckNames(crd, causes);
    CheckVersions(crd, causes);
  }
  const std::string name = MetaString(crd, "name");
  if (!creating && causes.empty()) {
    auto bucket = core.objects.find(kCrdResource);
    if (bucket != core.objects.end() && bucket->second.count(name) != 0) {
      const nlohmann::json& old = bucket->second.at(name);
      if (old["spec"].value("scope", "") != crd["spec"].value("scope", "")) {
        causes.push_back({"FieldValueInvalid", "spec.scope",
                          InvalidValueBody(crd["spec"].value("scope", ""), "field is immutable")});
      }
    }
  }
  if (!causes.empty()) {
    return InvalidFailure("CustomResourceDefinition", "apiextensions.k8s.io", name, causes);
  }
  nlohmann::json stored_versions = nlohmann::json::array();
  if (!creating && crd.contains("status") && crd["status"].is_object() &&
      crd["status"].value("storedVersions", nlohmann::json()).is_array()) {
    stored_versions = crd["status"]["storedVersions"];
  }
  for (const nlohmann::json& v : crd["spec"]["versions"]) {
    if (v.value("storage", false) && std::find(stored_versions.begin(), stored_versions.end(),
                                               v["name"]) == stored_versions.end()) {
      stored_versions.push_back(v["name"]);
    }
  }
  const nlohmann::json previous =
      creating ? nlohmann::json() : crd.value("status", nlohmann::json());
  crd["status"] = {{"acceptedNames", AcceptedNames(crd["spec"]["names"])},
                   {"conditions",
                    {Condition(previous, "NamesAccepted", "NoConflicts", "no conflicts found"),
                     Condition(previous, "Established", "InitialNamesAccepted",
                               "the initial names have been accepted")}},
                   {"storedVersions", stored_versions}};
  return absl::OkStatus();
}

void UnserveCrdLocked(StoreCore& core, const std::string& crd_name) {
  for (auto it = core.custom.begin(); it != core.custom.end();) {
    it = it->second.info.crd_name == crd_name ? core.custom.erase(it) : std::next(it);
  }
}

void ServeCrdLocked(StoreCore& core, const nlohmann::json& crd) {
  const std::string crd_name = MetaString(crd, "name");
  UnserveCrdLocked(core, crd_name);
  const nlohmann::json& spec = crd["spec"];
  const nlohmann::json names = AcceptedNames(spec["names"]);
  for (const nlohmann::json& v : spec["versions"]) {
    if (!v.value("served", false)) continue;
    CustomVersion served;
    ResourceInfo& info = served.info;
    info.group = StringAt(spec, "group");
    info.version = StringAt(v, "name");
    info.kind = StringAt(names, "kind");
    info.plural = StringAt(names, "plural");
    info.singular = StringAt(names, "singular");
    info.list_kind = StringAt(names, "listKind");
    info.namespaced = StringAt(spec, "scope") == "Namespaced";
    for (const char* list : {"shortNames", "categories"}) {
      const nlohmann::json& values = names.value(list, nlohmann::json::array());
      auto& target = std::string(list) == "shortNames" ? info.short_names : info.categories;
      for (const nlohmann::json& value : values) {
        if (value.is_string()) target.push_back(value.get<std::string>());
      }
    }
    info.verbs = {"delete", "deletecollection", "get",    "list",
                  "patch",  "create",           "update", "watch"};
    const nlohmann::json& subresources = v.value("subresources", nlohmann::json::object());
    info.status_subresource = subresources.is_object() && subresources.contains("status");
    info.crd_name = crd_name;
    info.crd_version = v;
    absl::StatusOr<StructuralSchema> schema = StructuralSchema::Parse(
        v.value("schema", nlohmann::json::object()).value("openAPIV3Schema", nlohmann::json()));
    if (schema.ok()) served.schema = std::make_shared<const StructuralSchema>(*std::move(schema));
    core.custom[absl::StrCat(info.group, "/", info.version, "/", info.plural)] = std::move(served);
  }
}

absl::Status ApplySchemaLocked(const StoreCore& core, const ResourceInfo& resource,
                               nlohmann::json& object, FieldValidation validation,
                               std::vector<std::string>& warnings, const nlohmann::json* old) {
  auto it =
      core.custom.find(absl::StrCat(resource.group, "/", resource.version, "/", resource.plural));
  if (it == core.custom.end() || it->second.schema == nullptr) return absl::OkStatus();
  const StructuralSchema& schema = *it->second.schema;
  std::vector<std::string> unknown;
  for (std::string path : schema.Prune(object)) {
    if (!path.empty() && path.front() == '.') path.erase(0, 1);
    unknown.push_back(absl::StrCat("unknown field \"", path, "\""));
  }
  if (!unknown.empty() && validation == FieldValidation::kStrict) {
    return BadRequestFailure(absl::StrCat("strict decoding error: ", absl::StrJoin(unknown, ", ")));
  }
  if (validation == FieldValidation::kWarn) {
    warnings.insert(warnings.end(), unknown.begin(), unknown.end());
  }
  schema.ApplyDefaults(object);
  std::vector<FieldCause> causes = schema.Validate(object, old);
  if (!causes.empty()) {
    return InvalidFailure(resource.kind, resource.group, MetaString(object, "name"), causes);
  }
  return absl::OkStatus();
}

}  // namespace wavepool::testing::apiserver::store_internal
