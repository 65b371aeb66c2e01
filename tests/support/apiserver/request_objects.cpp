// The verbs on objects and collections: decode the request, call the store, encode the answer
// as kube-apiserver does (k8s.io/apiserver pkg/endpoints/handlers: get.go, create.go,
// update.go, patch.go, delete.go).
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/api_handler.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/strategic_merge.h"
#include "tests/support/apiserver/table.h"

namespace wavepool::testing::apiserver {
namespace {

// Registries whose DELETE answers with the deleted object (ReturnDeletedObject in their
// registry); every other resource answers with a Success Status.
bool ReturnsDeletedObject(const ResourceInfo& resource) {
  const std::string group_resource = resource.GroupResource();
  return group_resource == "pods" || group_resource == "serviceaccounts" ||
         group_resource == "storageclasses.storage.k8s.io";
}

HttpResponse WriteResponse(int status, const absl::StatusOr<WriteResult>& result) {
  if (!result.ok()) return FailureResponse(result.status());
  HttpResponse response = JsonResponse(status, result->object);
  response.headers = WarningHeaders(result->warnings);
  return response;
}

// The body's metadata.namespace and metadata.name must match the URL's (create.go, update.go);
// missing ones are taken from the URL.
absl::Status MatchUrl(nlohmann::json& object, const std::string& ns, const std::string& name) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    object["metadata"] = nlohmann::json::object();
  }
  nlohmann::json& metadata = object["metadata"];
  if (!ns.empty()) {
    const std::string body_ns = metadata.value("namespace", "");
    if (!body_ns.empty() && body_ns != ns) {
      return BadRequestFailure(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    metadata["namespace"] = ns;
  }
  if (!name.empty()) {
    const std::string body_name = metadata.value("name", "");
    if (!body_name.empty() && body_name != name) {
      return BadRequestFailure(absl::StrCat("the name of the object (", body_name,
                                            ") does not match the name on the URL (", name, ")"));
    }
    metadata["name"] = name;
  }
  return absl::OkStatus();
}

absl::Status UnsupportedPatchType(const ResourceInfo& resource) {
  std::string accepted = "application/json-patch+json, application/merge-patch+json";
  if (resource.crd_name.empty())
    absl::StrAppend(&accepted, ", application/strategic-merge-patch+json");
  return UnsupportedMediaTypeFailure(absl::StrCat(
      "the body of the request was in an unknown format - accepted media types include: ",
      accepted));
}

// `current` patched by `patch` of media type `media` (already checked to be supported).
absl::StatusOr<nlohmann::json> ApplyPatch(const std::string& media, const nlohmann::json& patch,
                                          const nlohmann::json& current,
                                          const ResourceInfo& resource) {
  if (media == "application/merge-patch+json") {
    nlohmann::json patched = current;
    patched.merge_patch(patch);
    return patched;
  }
  if (media == "application/json-patch+json") {
    try {
      return current.patch(patch);
    } catch (const nlohmann::json::exception& error) {
      // patch.go: a patch that does not apply is 422 with the patch library's message.
      return ApiFailure(422, "Invalid", error.what());
    }
  }
  absl::StatusOr<nlohmann::json> patched =
      StrategicMergePatch(current, patch, resource.group, resource.kind);
  if (!patched.ok()) return BadRequestFailure(std::string(patched.status().message()));
  return patched;
}

absl::Status CheckPatchBody(const std::string& media, const nlohmann::json& patch) {
  if (media == "application/json-patch+json" && !patch.is_array()) {
    return BadRequestFailure(absl::StrCat("json: cannot unmarshal ", patch.type_name(),
                                          " into Go value of type jsonpatch.Patch"));
  }
  if (media != "application/json-patch+json" && !patch.is_object()) {
    return BadRequestFailure(absl::StrCat("json: cannot unmarshal ", patch.type_name(),
                                          " into Go value of type map[string]interface {}"));
  }
  return absl::OkStatus();
}

// The real server answers 202 only when the object stays and the client asked for
// orphanDependents=false (delete.go keeps 200 otherwise for old clients).
bool AsksOrphanDependentsFalse(const HttpRequest& request) {
  if (request.Query("orphanDependents") == "false") return true;
  const nlohmann::json body =
      nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  return body.is_object() && body.contains("orphanDependents") && body["orphanDependents"] == false;
}

nlohmann::json SuccessStatus(const ResourceInfo& resource, const nlohmann::json& object) {
  nlohmann::json details = {{"name", object["metadata"].value("name", "")}};
  if (!resource.group.empty()) details["group"] = resource.group;
  details["kind"] = resource.plural;
  details["uid"] = object["metadata"].value("uid", "");
  return {{"kind", "Status"},
          {"apiVersion", "v1"},
          {"metadata", nlohmann::json::object()},
          {"status", "Success"},
          {"details", details}};
}

nlohmann::json ListObject(const ResourceInfo& resource, const ListResult& list) {
  nlohmann::json metadata = {{"resourceVersion", list.resource_version}};
  if (!list.continue_token.empty()) metadata["continue"] = list.continue_token;
  if (list.remaining_item_count.has_value()) {
    metadata["remainingItemCount"] = *list.remaining_item_count;
  }
  return {{"kind", resource.list_kind},
          {"apiVersion", resource.GroupVersion()},
          {"metadata", metadata},
          {"items", list.items}};
}

}  // namespace

HttpResponse ApiHandler::Get(const HttpRequest& request, const Target& target) {
  absl::StatusOr<TableRequest> table = ParseTableRequest(request);
  if (!table.ok()) return FailureResponse(table.status());
  absl::StatusOr<nlohmann::json> object = store_.Get(target.resource, target.ns, target.path.name);
  if (!object.ok()) return FailureResponse(object.status());
  if (table->as_table) {
    return JsonResponse(200, ToTable(target.resource, {*object}, nullptr, table->include));
  }
  return JsonResponse(200, *object);
}

HttpResponse ApiHandler::List(const HttpRequest& request, const Target& target) {
  absl::StatusOr<TableRequest> table = ParseTableRequest(request);
  if (!table.ok()) return FailureResponse(table.status());
  absl::StatusOr<ListQuery> query = ParseListQuery(request);
  if (!query.ok()) return FailureResponse(query.status());
  absl::StatusOr<ListResult> list = store_.List(target.resource, target.ns, *query);
  if (!list.ok()) return FailureResponse(list.status());
  if (table->as_table) {
    return JsonResponse(200, ToTable(target.resource, list->items, &*list, table->include));
  }
  return JsonResponse(200, ListObject(target.resource, *list));
}

HttpResponse ApiHandler::Create(const HttpRequest& request, const Target& target) {
  absl::StatusOr<WriteOptions> options = ParseWriteOptions(request);
  if (!options.ok()) return FailureResponse(options.status());
  absl::StatusOr<nlohmann::json> object = DecodeObjectBody(request, target.resource);
  if (!object.ok()) return FailureResponse(object.status());
  if (absl::Status status = MatchUrl(*object, target.ns, ""); !status.ok()) {
    return FailureResponse(status);
  }
  return WriteResponse(201,
                       store_.Create(target.resource, target.ns, *std::move(object), *options));
}

HttpResponse ApiHandler::Update(const HttpRequest& request, const Target& target) {
  absl::StatusOr<WriteOptions> options = ParseWriteOptions(request);
  if (!options.ok()) return FailureResponse(options.status());
  absl::StatusOr<nlohmann::json> object = DecodeObjectBody(request, target.resource);
  if (!object.ok()) return FailureResponse(object.status());
  if (absl::Status status = MatchUrl(*object, target.ns, target.path.name); !status.ok()) {
    return FailureResponse(status);
  }
  return WriteResponse(200, store_.Update(target.resource, target.ns, target.path.name,
                                          *std::move(object), target.path.subresource, *options));
}

HttpResponse ApiHandler::Patch(const HttpRequest& request, const Target& target) {
  const std::string media = MediaTypeOf(request.Header("content-type"));
  const bool strategic = media == "application/strategic-merge-patch+json";
  // Custom resources have no patch strategies, so the real server refuses strategic merge for
  // them; server-side apply is not implemented here.
  if ((strategic && !target.resource.crd_name.empty()) ||
      (!strategic && media != "application/merge-patch+json" &&
       media != "application/json-patch+json")) {
    return FailureResponse(UnsupportedPatchType(target.resource));
  }
  absl::StatusOr<WriteOptions> options = ParseWriteOptions(request);
  if (!options.ok()) return FailureResponse(options.status());
  absl::StatusOr<nlohmann::json> patch = DecodeJsonBody(request);
  if (!patch.ok()) return FailureResponse(patch.status());
  if (absl::Status status = CheckPatchBody(media, *patch); !status.ok()) {
    return FailureResponse(status);
  }
  const ResourceInfo& resource = target.resource;
  const std::string ns = target.ns;
  const std::string name = target.path.name;
  const ObjectStore::Mutation mutate =
      [&](const nlohmann::json& current) -> absl::StatusOr<nlohmann::json> {
    absl::StatusOr<nlohmann::json> patched = ApplyPatch(media, *patch, current, resource);
    if (!patched.ok()) return patched.status();
    if (!patched->is_object())
      return ApiFailure(422, "Invalid", "the patched object is not an object");
    if (absl::Status status = MatchUrl(*patched, ns, name); !status.ok()) return status;
    (*patched)["apiVersion"] = resource.GroupVersion();
    (*patched)["kind"] = resource.kind;
    return patched;
  };
  return WriteResponse(
      200, store_.Modify(resource, ns, name, target.path.subresource, mutate, *options));
}

HttpResponse ApiHandler::Delete(const HttpRequest& request, const Target& target) {
  absl::StatusOr<DeleteRequest> options = ParseDeleteRequest(request);
  if (!options.ok()) return FailureResponse(options.status());
  absl::StatusOr<DeleteResult> result =
      store_.Delete(target.resource, target.ns, target.path.name, *options);
  if (!result.ok()) return FailureResponse(result.status());
  if (!result->removed) {
    return JsonResponse(AsksOrphanDependentsFalse(request) ? 202 : 200, result->object);
  }
  if (ReturnsDeletedObject(target.resource)) return JsonResponse(200, result->object);
  return JsonResponse(200, SuccessStatus(target.resource, result->object));
}

HttpResponse ApiHandler::DeleteCollection(const HttpRequest& request, const Target& target) {
  absl::StatusOr<ListQuery> query = ParseListQuery(request);
  if (!query.ok()) return FailureResponse(query.status());
  absl::StatusOr<DeleteRequest> options = ParseDeleteRequest(request);
  if (!options.ok()) return FailureResponse(options.status());
  query->limit = 0;
  query->continue_token.clear();
  absl::StatusOr<ListResult> list = store_.List(target.resource, target.ns, *query);
  if (!list.ok()) return FailureResponse(list.status());
  ListResult deleted;
  deleted.resource_version = list->resource_version;
  for (const nlohmann::json& item : list->items) {
    const nlohmann::json& metadata = item["metadata"];
    absl::StatusOr<DeleteResult> result = store_.Delete(
        target.resource, metadata.value("namespace", ""), metadata.value("name", ""), *options);
    // An object deleted by someone else meanwhile is simply gone (delete.go ignores NotFound).
    if (!result.ok() && result.status().code() == absl::StatusCode::kNotFound) continue;
    if (!result.ok()) return FailureResponse(result.status());
    deleted.items.push_back(result->object);
  }
  return JsonResponse(200, ListObject(target.resource, deleted));
}

}  // namespace wavepool::testing::apiserver
