// The OpenAPI documents kubectl reads: /openapi/v3 (an index, then one document per group
// version) and /openapi/v2 (one Swagger 2.0 document). What kubectl relies on, and so what is
// faithful here:
//  - every PATCH operation carries x-kubernetes-group-version-kind and lists the fieldValidation
//    query parameter, so `kubectl apply` (--validate=strict by default) leaves validation to the
//    server (it sends fieldValidation=Strict) instead of validating on the client;
//  - a CRD version's schema is published as "<reversed group>.<version>.<Kind>" with the
//    x-kubernetes-group-version-kind extension, as the apiextensions server publishes it;
//  - built-in kinds are published without field schemas (an object that keeps unknown fields),
//    and without the kind extension, so kubectl computes strategic merge patches from its
//    compiled-in types, as it does against a server whose OpenAPI lacks a kind.
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_split.h"
#include "tests/support/apiserver/discovery.h"
#include "wavepool/base/fnv1a.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;

enum class Flavor { kV2, kV3 };

constexpr char kObjectMeta[] = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
constexpr char kListMeta[] = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
constexpr char kPatch[] = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
constexpr char kDeleteOptions[] = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
constexpr char kStatus[] = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

std::string Ref(Flavor flavor, const std::string& name) {
  return (flavor == Flavor::kV3 ? "#/components/schemas/" : "#/definitions/") + name;
}

json RefSchema(Flavor flavor, const std::string& name) { return {{"$ref", Ref(flavor, name)}}; }

// The definition name kube-apiserver gives a kind: io.k8s.api.core.v1.Pod,
// io.k8s.api.coordination.v1.Lease, io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.
// CustomResourceDefinition, and for CRDs the reversed group: dev.wavepool.v1alpha1.TrainingJob.
std::string DefinitionName(const ResourceInfo& resource, const std::string& kind) {
  const std::string tail = "." + resource.version + "." + kind;
  if (!resource.crd_name.empty()) {
    std::vector<std::string> labels = absl::StrSplit(resource.group, '.');
    std::string reversed;
    for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
      reversed += (reversed.empty() ? "" : ".") + *it;
    }
    return reversed + tail;
  }
  if (resource.group.empty()) return "io.k8s.api.core" + tail;
  if (resource.group == "apiextensions.k8s.io") {
    return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions" + tail;
  }
  return "io.k8s.api." + std::string(*absl::StrSplit(resource.group, '.').begin()) + tail;
}

std::string ListKindOf(const ResourceInfo& resource) {
  return resource.list_kind.empty() ? resource.kind + "List" : resource.list_kind;
}

json GroupVersionKind(const ResourceInfo& resource) {
  return {{"group", resource.group}, {"kind", resource.kind}, {"version", resource.version}};
}

bool HasVerb(const ResourceInfo& resource, const std::string& verb) {
  for (const std::string& v : resource.verbs) {
    if (v == verb) return true;
  }
  return false;
}

// ---- Parameters --------------------------------------------------------------------------

json Parameter(Flavor flavor, const std::string& name, const std::string& in,
               const std::string& type, const std::string& description) {
  json parameter = {{"name", name}, {"in", in}, {"description", description}};
  if (in == "path") parameter["required"] = true;
  if (flavor == Flavor::kV3) {
    parameter["schema"] = {{"type", type}, {"uniqueItems", true}};
  } else {
    parameter["type"] = type;
    parameter["uniqueItems"] = true;
  }
  return parameter;
}

json QueryParameter(Flavor flavor, const std::string& name) {
  struct Known {
    const char* name;
    const char* type;
    const char* description;
  };
  static const Known kKnown[] = {
      {"allowWatchBookmarks", "boolean", "requests watch events with type \"BOOKMARK\"."},
      {"continue", "string", "the continue token of a previous paged list."},
      {"dryRun", "string", "\"All\": process the request fully but persist nothing."},
      {"fieldManager", "string", "the name of the actor making these changes."},
      {"fieldSelector", "string", "restricts the returned objects by their fields."},
      {"fieldValidation", "string",
       "what to do with unknown or duplicate fields in the object: Ignore, Warn (the default) "
       "or Strict (fail the request)."},
      {"force", "boolean", "re-acquires conflicting fields owned by other managers (apply)."},
      {"gracePeriodSeconds", "integer", "seconds before the object is deleted."},
      {"labelSelector", "string", "restricts the returned objects by their labels."},
      {"limit", "integer", "the maximum number of objects in one list answer."},
      {"orphanDependents", "boolean", "deprecated: use propagationPolicy."},
      {"propagationPolicy", "string",
       "whether and how dependents are garbage collected: Orphan, Background or Foreground."},
      {"resourceVersion", "string", "the resourceVersion the request is served from."},
      {"resourceVersionMatch", "string", "how resourceVersion applies: NotOlderThan or Exact."},
      {"sendInitialEvents", "boolean", "starts a watch with synthetic events for the state."},
      {"timeoutSeconds", "integer", "the duration of a list or watch call."},
      {"watch", "boolean", "streams changes as watch events."},
  };
  for (const Known& known : kKnown) {
    if (name == known.name) return Parameter(flavor, name, "query", known.type, known.description);
  }
  return Parameter(flavor, name, "query", "string", "");
}

const std::vector<std::string>& QueryParametersOf(const std::string& action) {
  static const std::map<std::string, std::vector<std::string>> kByAction = {
      {"list",
       {"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
        "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}},
      {"post", {"dryRun", "fieldManager", "fieldValidation"}},
      {"put", {"dryRun", "fieldManager", "fieldValidation"}},
      {"patch", {"dryRun", "fieldManager", "fieldValidation", "force"}},
      {"delete", {"dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"}},
      {"deletecollection",
       {"continue", "dryRun", "fieldSelector", "gracePeriodSeconds", "labelSelector", "limit",
        "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch",
        "sendInitialEvents", "timeoutSeconds"}},
      {"get", {}},
  };
  return kByAction.at(action);
}

// ---- Operations --------------------------------------------------------------------------

struct OperationSpec {
  std::string method;  // get, post, put, patch, delete
  std::string action;  // x-kubernetes-action
  std::string body;    // definition name of the request body; "" for none
  std::string answer;  // definition name of the 200 answer
};

json Content(Flavor flavor, const std::vector<std::string>& media_types,
             const std::string& definition) {
  json content = json::object();
  for (const std::string& media_type : media_types) {
    content[media_type] = {{"schema", RefSchema(flavor, definition)}};
  }
  return content;
}

std::vector<std::string> PatchMediaTypes(const ResourceInfo& resource) {
  std::vector<std::string> types = {"application/apply-patch+yaml", "application/json-patch+json",
                                    "application/merge-patch+json"};
  // Custom resources do not accept strategic merge patches.
  if (resource.crd_name.empty()) types.push_back("application/strategic-merge-patch+json");
  return types;
}

json Operation(Flavor flavor, const ResourceInfo& resource, const OperationSpec& spec,
               const std::string& description) {
  json operation = {{"description", description},
                    {"x-kubernetes-action", spec.action},
                    {"x-kubernetes-group-version-kind", GroupVersionKind(resource)}};
  json parameters = json::array();
  for (const std::string& name : QueryParametersOf(spec.action)) {
    parameters.push_back(QueryParameter(flavor, name));
  }
  const std::vector<std::string> answer_types = {"application/json", "application/yaml"};
  const std::vector<std::string> body_types =
      spec.method == "patch" ? PatchMediaTypes(resource) : std::vector<std::string>{"*/*"};
  if (flavor == Flavor::kV3) {
    if (!spec.body.empty()) {
      operation["requestBody"] = {{"content", Content(flavor, body_types, spec.body)},
                                  {"required", spec.method != "delete"}};
    }
    operation["responses"] = {
        {"200", {{"description", "OK"}, {"content", Content(flavor, answer_types, spec.answer)}}},
        {"401", {{"description", "Unauthorized"}}}};
  } else {
    if (!spec.body.empty()) {
      parameters.push_back({{"name", "body"},
                            {"in", "body"},
                            {"required", spec.method != "delete"},
                            {"schema", RefSchema(flavor, spec.body)}});
    }
    operation["consumes"] = body_types;
    operation["produces"] = answer_types;
    operation["responses"] = {
        {"200", {{"description", "OK"}, {"schema", RefSchema(flavor, spec.answer)}}},
        {"401", {{"description", "Unauthorized"}}}};
  }
  operation["parameters"] = std::move(parameters);
  return operation;
}

json PathItem(Flavor flavor, const ResourceInfo& resource, bool with_namespace, bool with_name) {
  json item = json::object();
  json parameters = json::array();
  if (with_name) {
    parameters.push_back(
        Parameter(flavor, "name", "path", "string", "name of the " + resource.kind));
  }
  if (with_namespace) {
    parameters.push_back(Parameter(flavor, "namespace", "path", "string",
                                   "object name and auth scope, such as for teams and projects"));
  }
  parameters.push_back(Parameter(flavor, "pretty", "query", "string",
                                 "If 'true', then the output is pretty printed."));
  item["parameters"] = std::move(parameters);
  return item;
}

void AddResourcePaths(Flavor flavor, const ResourceInfo& resource, json& paths) {
  const std::string prefix = resource.group.empty()
                                 ? "/api/" + resource.version
                                 : "/apis/" + resource.group + "/" + resource.version;
  const std::string scope = resource.namespaced ? prefix + "/namespaces/{namespace}" : prefix;
  const std::string object = DefinitionName(resource, resource.kind);
  const std::string list = DefinitionName(resource, ListKindOf(resource));
  const std::string& kind = resource.kind;

  json collection = PathItem(flavor, resource, resource.namespaced, false);
  if (HasVerb(resource, "list")) {
    collection["get"] = Operation(flavor, resource, {"get", "list", "", list}, "list " + kind);
  }
  if (HasVerb(resource, "create")) {
    collection["post"] =
        Operation(flavor, resource, {"post", "post", object, object}, "create a " + kind);
  }
  if (HasVerb(resource, "deletecollection")) {
    collection["delete"] =
        Operation(flavor, resource, {"delete", "deletecollection", kDeleteOptions, kStatus},
                  "delete collection of " + kind);
  }
  paths[scope + "/" + resource.plural] = std::move(collection);

  json single = PathItem(flavor, resource, resource.namespaced, true);
  const std::vector<std::pair<std::string, OperationSpec>> single_operations = {
      {"get", {"get", "get", "", object}},
      {"update", {"put", "put", object, object}},
      {"patch", {"patch", "patch", kPatch, object}},
      {"delete", {"delete", "delete", kDeleteOptions, object}}};
  for (const auto& [verb, spec] : single_operations) {
    if (HasVerb(resource, verb)) {
      single[spec.method] = Operation(flavor, resource, spec, verb + " the specified " + kind);
    }
  }
  paths[scope + "/" + resource.plural + "/{name}"] = std::move(single);

  if (resource.status_subresource) {
    json status = PathItem(flavor, resource, resource.namespaced, true);
    status["get"] =
        Operation(flavor, resource, {"get", "get", "", object}, "read status of the " + kind);
    status["put"] = Operation(flavor, resource, {"put", "put", object, object},
                              "replace status of the " + kind);
    status["patch"] = Operation(flavor, resource, {"patch", "patch", kPatch, object},
                                "partially update status of the " + kind);
    paths[scope + "/" + resource.plural + "/{name}/status"] = std::move(status);
  }
  if (resource.namespaced && HasVerb(resource, "list")) {
    json all = PathItem(flavor, resource, false, false);
    all["get"] = Operation(flavor, resource, {"get", "list", "", list},
                           "list " + kind + " in every namespace");
    paths[prefix + "/" + resource.plural] = std::move(all);
  }
}

// ---- Schemas -----------------------------------------------------------------------------

json StringProperty(const std::string& description) {
  return {{"type", "string"}, {"description", description}};
}

json MetadataProperty(Flavor flavor) {
  return {{"allOf", {RefSchema(flavor, kObjectMeta)}},
          {"default", json::object()},
          {"description", "Standard object's metadata."}};
}

// Swagger 2.0 has no nullable, anyOf, oneOf or not: the v2 document drops them, as the real
// server does when it publishes a CRD's schema there.
void StripForV2(json& schema) {
  if (!schema.is_object()) return;
  for (const char* key : {"nullable", "anyOf", "oneOf", "not"}) schema.erase(key);
  for (auto& [key, value] : schema.items()) {
    if (key == "properties" && value.is_object()) {
      for (auto& [name, property] : value.items()) StripForV2(property);
    } else if (key == "items" || key == "additionalProperties") {
      StripForV2(value);
    } else if (key == "allOf" && value.is_array()) {
      for (json& part : value) StripForV2(part);
    }
  }
}

json KindSchema(Flavor flavor, const ResourceInfo& resource) {
  json schema;
  if (!resource.crd_name.empty()) {
    schema = resource.crd_version.is_object()
                 ? resource.crd_version.value(json::json_pointer("/schema/openAPIV3Schema"),
                                              json::object())
                 : json::object();
    if (flavor == Flavor::kV2) StripForV2(schema);
    schema["x-kubernetes-group-version-kind"] = json::array({GroupVersionKind(resource)});
  } else {
    schema = {{"description", resource.kind +
                                  ": this server publishes no field schema for built-in kinds; "
                                  "it validates them itself."},
              {"x-kubernetes-preserve-unknown-fields", true}};
  }
  schema["type"] = "object";
  json& properties = schema["properties"];
  if (!properties.is_object()) properties = json::object();
  properties["apiVersion"] = StringProperty("APIVersion defines the versioned schema.");
  properties["kind"] = StringProperty("Kind is the REST resource this object represents.");
  properties["metadata"] = MetadataProperty(flavor);
  return schema;
}

json ListSchema(Flavor flavor, const ResourceInfo& resource) {
  json schema = {
      {"description", "List of " + resource.kind + "."},
      {"type", "object"},
      {"required", {"items"}},
      {"properties",
       {{"apiVersion", StringProperty("APIVersion defines the versioned schema.")},
        {"items",
         {{"type", "array"},
          {"items", RefSchema(flavor, DefinitionName(resource, resource.kind))}}},
        {"kind", StringProperty("Kind is the REST resource this object represents.")},
        {"metadata", {{"allOf", {RefSchema(flavor, kListMeta)}}, {"default", json::object()}}}}}};
  if (!resource.crd_name.empty()) {
    json gvk = GroupVersionKind(resource);
    gvk["kind"] = ListKindOf(resource);
    schema["x-kubernetes-group-version-kind"] = json::array({gvk});
  }
  return schema;
}

json StringMap(const std::string& description) {
  return {{"type", "object"},
          {"additionalProperties", {{"type", "string"}, {"default", ""}}},
          {"description", description}};
}

json MetaSchemas() {
  const json string_list = {{"type", "array"}, {"items", {{"type", "string"}, {"default", ""}}}};
  const json free_object = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  json object_meta = {
      {"type", "object"},
      {"description", "ObjectMeta is metadata that all persisted resources must have."},
      {"properties",
       {{"annotations", StringMap("Unstructured key value map stored with a resource.")},
        {"creationTimestamp", {{"type", "string"}, {"format", "date-time"}}},
        {"deletionGracePeriodSeconds", {{"type", "integer"}, {"format", "int64"}}},
        {"deletionTimestamp", {{"type", "string"}, {"format", "date-time"}}},
        {"finalizers", string_list},
        {"generateName", StringProperty("Prefix for a name the server generates.")},
        {"generation", {{"type", "integer"}, {"format", "int64"}}},
        {"labels", StringMap("Map of string keys and values for selecting objects.")},
        {"managedFields", {{"type", "array"}, {"items", free_object}}},
        {"name", StringProperty("Name must be unique within a namespace.")},
        {"namespace", StringProperty("Namespace defines the space of unique names.")},
        {"ownerReferences", {{"type", "array"}, {"items", free_object}}},
        {"resourceVersion", StringProperty("An opaque value for optimistic concurrency.")},
        {"uid", StringProperty("UID is the unique in time and space value for this object.")}}}};
  json list_meta = {{"type", "object"},
                    {"properties",
                     {{"continue", {{"type", "string"}}},
                      {"remainingItemCount", {{"type", "integer"}, {"format", "int64"}}},
                      {"resourceVersion", {{"type", "string"}}}}}};
  return {{kObjectMeta, std::move(object_meta)},
          {kListMeta, std::move(list_meta)},
          {kPatch, {{"type", "object"}, {"description", "A patch: its media type says how."}}},
          {kDeleteOptions, free_object},
          {kStatus, free_object}};
}

// ---- Documents ---------------------------------------------------------------------------

// Paths and definitions of `resources` (one group version, or everything for v2).
std::pair<json, json> PathsAndSchemas(Flavor flavor,
                                      const std::vector<const ResourceInfo*>& served) {
  json paths = json::object();
  json schemas = MetaSchemas();
  for (const ResourceInfo* resource : served) {
    AddResourcePaths(flavor, *resource, paths);
    schemas[DefinitionName(*resource, resource->kind)] = KindSchema(flavor, *resource);
    schemas[DefinitionName(*resource, ListKindOf(*resource))] = ListSchema(flavor, *resource);
  }
  return {std::move(paths), std::move(schemas)};
}

json Info() { return {{"title", "Kubernetes"}, {"version", "v1.32.0"}}; }

std::string V3PathOf(const ResourceInfo& resource) {
  return resource.group.empty() ? "api/" + resource.version
                                : "apis/" + resource.group + "/" + resource.version;
}

// An opaque content hash (64-bit FNV-1a, hex) for the index's serverRelativeURL: it changes when
// a document changes, so a client's cache keyed by URL never serves a stale schema.
std::string ContentHash(const std::string& text) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llX", static_cast<unsigned long long>(Fnv1a64(text)));
  return buffer;
}

}  // namespace

json OpenApiV3Index(const std::vector<ResourceInfo>& resources) {
  json paths = json::object();
  std::set<std::string> seen;
  for (const ResourceInfo& resource : resources) {
    const std::string path = V3PathOf(resource);
    if (!seen.insert(path).second) continue;
    const std::optional<json> document = OpenApiV3Document(resources, path);
    if (!document.has_value()) continue;
    paths[path] = {
        {"serverRelativeURL", "/openapi/v3/" + path + "?hash=" + ContentHash(document->dump())}};
  }
  return {{"paths", std::move(paths)}};
}

std::optional<json> OpenApiV3Document(const std::vector<ResourceInfo>& resources,
                                      std::string_view path) {
  std::string wanted(path.substr(0, path.find('?')));
  while (!wanted.empty() && wanted.front() == '/') wanted.erase(0, 1);
  std::vector<const ResourceInfo*> served;
  for (const ResourceInfo& resource : resources) {
    if (V3PathOf(resource) == wanted) served.push_back(&resource);
  }
  if (served.empty()) return std::nullopt;
  auto [paths, schemas] = PathsAndSchemas(Flavor::kV3, served);
  return json{{"openapi", "3.0.0"},
              {"info", Info()},
              {"paths", std::move(paths)},
              {"components", {{"schemas", std::move(schemas)}}}};
}

json OpenApiV2Document(const std::vector<ResourceInfo>& resources) {
  std::vector<const ResourceInfo*> served;
  for (const ResourceInfo& resource : resources) served.push_back(&resource);
  auto [paths, definitions] = PathsAndSchemas(Flavor::kV2, served);
  return {{"swagger", "2.0"},
          {"info", Info()},
          {"paths", std::move(paths)},
          {"definitions", std::move(definitions)}};
}

}  // namespace wavepool::testing::apiserver
