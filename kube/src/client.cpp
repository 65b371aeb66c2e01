#include "wavepool/kube/client.h"

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "url_encoding.h"
#include "wavepool/api/object_key.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::kube {
namespace {

using nlohmann::json;

// "?k=v&k2=v2" with every key and value percent-encoded; "" when nothing was added.
class Query {
 public:
  void Add(std::string_view key, std::string_view value) {
    text_ += text_.empty() ? "?" : "&";
    text_ += internal::PercentEncode(key) + "=" + internal::PercentEncode(value);
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

std::string Describe(const HttpRequest& request) {
  return absl::StrCat(request.method, " ", request.target);
}

// A status from the transport (no answer) keeps its code and names the request.
absl::Status NoAnswer(const absl::Status& status, const HttpRequest& request) {
  return absl::Status(status.code(), absl::StrCat(Describe(request), ": ", status.message()));
}

// Sends `request`; a 2xx answer's body as JSON, anything else as the API's error.
absl::StatusOr<json> Call(Transport& transport, const HttpRequest& request) {
  absl::StatusOr<HttpResponse> response = transport.Send(request);
  if (!response.ok()) return NoAnswer(response.status(), request);
  if (response->status < 200 || response->status >= 300) {
    return ApiErrorFromResponse(response->status, response->body, Describe(request));
  }
  if (response->body.empty()) return json::object();
  json body = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return absl::InternalError(
        absl::StrCat(Describe(request), ": HTTP ", response->status,
                     " answer is not JSON: ", response->body.substr(0, 120)));
  }
  return body;
}

HttpRequest JsonRequest(std::string method, std::string target, const json& body,
                        std::string content_type = "application/json") {
  HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.content_type = std::move(content_type);
  request.body = body.dump();
  return request;
}

absl::Status RequireName(const ResourceType& type, std::string_view ns, std::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(type.kind, ": name must not be empty"));
  }
  if (type.namespaced && ns.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(type.kind, " ", std::string(name),
                                                   ": namespace must not be empty (", type.kind,
                                                   " is namespaced)"));
  }
  return absl::OkStatus();
}

std::string StringAt(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The object's metadata.namespace and metadata.name, checked against the type's scope: the
// namespace is cleared for a cluster-scoped type.
absl::StatusOr<api::ObjectKey> KeyOf(const ResourceType& type, const json& object,
                                     bool name_required) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(type.kind, ": expected a JSON object, got ", object.type_name()));
  }
  const json metadata = object.value("metadata", json::object());
  if (!metadata.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(type.kind, ": metadata: must be an object"));
  }
  api::ObjectKey key{StringAt(metadata, "namespace"), StringAt(metadata, "name")};
  const std::string shown = key.name.empty() ? StringAt(metadata, "generateName") + "*" : key.name;
  if (type.namespaced && key.namespace_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(type.kind, " ", shown,
                                                   ": metadata.namespace: required for the "
                                                   "namespaced kind ",
                                                   type.kind));
  }
  if (!type.namespaced) key.namespace_.clear();
  if (name_required && key.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(type.kind, ": metadata.name: required"));
  }
  return key;
}

// The body to send: the object with apiVersion and kind filled in when absent (the API server
// rejects an object without them).
absl::StatusOr<json> WithTypeMeta(const ResourceType& type, const json& object) {
  json body = object;
  if (!body.contains("apiVersion")) body["apiVersion"] = type.ApiVersion();
  if (!body.contains("kind")) body["kind"] = type.kind;
  if (body["kind"] != type.kind) {
    return absl::InvalidArgumentError(
        absl::StrCat(type.kind, ": kind: must be \"", type.kind, "\", got ", body["kind"].dump()));
  }
  return body;
}

void AddListOptions(const ListOptions& options, Query& query) {
  if (!options.label_selector.empty()) query.Add("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) query.Add("fieldSelector", options.field_selector);
  if (!options.resource_version.empty()) query.Add("resourceVersion", options.resource_version);
}

absl::StatusOr<ObjectList> DecodeList(const ResourceType& type, json body,
                                      const HttpRequest& request) {
  const auto fail = [&](std::string_view what) {
    return absl::InternalError(
        absl::StrCat(Describe(request), ": answer is not a list: ", std::string(what)));
  };
  if (!body.is_object()) return fail("not a JSON object");
  ObjectList list;
  const json metadata = body.value("metadata", json::object());
  if (!metadata.is_object()) return fail("metadata is not an object");
  list.resource_version = StringAt(metadata, "resourceVersion");
  list.continue_token = StringAt(metadata, "continue");
  json& items = body["items"];
  if (items.is_null()) return list;  // an empty list may come as "items": null
  if (!items.is_array()) return fail("items is not an array");
  list.items.reserve(items.size());
  for (json& item : items) {
    if (!item.is_object()) return fail("an item is not an object");
    // Items of a list come without apiVersion and kind; fill them in so each stands alone.
    if (!item.contains("apiVersion")) item["apiVersion"] = type.ApiVersion();
    if (!item.contains("kind")) item["kind"] = type.kind;
    list.items.push_back(std::move(item));
  }
  return list;
}

const char* ContentTypeOf(PatchType patch_type) {
  switch (patch_type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

json DeleteOptionsJson(const DeleteOptions& options) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.precondition_uid.empty()) {
    body["preconditions"]["uid"] = options.precondition_uid;
  }
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.propagation_policy.empty()) {
    body["propagationPolicy"] = options.propagation_policy;
  }
  return body;
}

}  // namespace

Client::Client(ClientConfig config, std::unique_ptr<Transport> transport)
    : config_(std::move(config)), transport_(std::move(transport)) {}

absl::StatusOr<json> Client::Get(const ResourceType& type, std::string_view ns,
                                 std::string_view name) {
  WAVEPOOL_RETURN_IF_ERROR(RequireName(type, ns, name));
  HttpRequest request;
  request.target = type.ObjectPath(ns, name);
  return Call(*transport_, request);
}

absl::StatusOr<ObjectList> Client::List(const ResourceType& type, std::string_view ns,
                                        const ListOptions& options) {
  if (options.limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("list ", type.plural, ": limit: must be >= 0, got ", options.limit));
  }
  Query query;
  AddListOptions(options, query);
  if (options.limit > 0) query.Add("limit", std::to_string(options.limit));
  if (!options.continue_token.empty()) query.Add("continue", options.continue_token);
  HttpRequest request;
  request.target = type.CollectionPath(ns) + query.text();
  WAVEPOOL_ASSIGN_OR_RETURN(json body, Call(*transport_, request));
  return DecodeList(type, std::move(body), request);
}

absl::StatusOr<ObjectList> Client::ListAll(const ResourceType& type, std::string_view ns,
                                           ListOptions options) {
  WAVEPOOL_ASSIGN_OR_RETURN(ObjectList first, List(type, ns, options));
  ObjectList all = std::move(first);
  std::set<std::string> seen_tokens;
  // A continued list reads from the first page's snapshot; the API server refuses a
  // resourceVersion next to a continue token.
  options.resource_version.clear();
  while (!all.continue_token.empty()) {
    if (!seen_tokens.insert(all.continue_token).second) {
      return absl::InternalError(absl::StrCat(
          "list ", type.plural, ": the server repeated continue token ", all.continue_token));
    }
    options.continue_token = all.continue_token;
    absl::StatusOr<ObjectList> page = List(type, ns, options);
    if (!page.ok() && IsGone(page.status())) {
      // The snapshot was compacted between pages: fall back to one unpaged list, as client-go's
      // pager does.
      ListOptions full = options;
      full.limit = 0;
      full.continue_token.clear();
      return List(type, ns, full);
    }
    if (!page.ok()) return page.status();
    for (json& item : page->items) all.items.push_back(std::move(item));
    all.continue_token = page->continue_token;
  }
  return all;
}

absl::StatusOr<json> Client::Create(const ResourceType& type, const json& object) {
  WAVEPOOL_ASSIGN_OR_RETURN(api::ObjectKey key, KeyOf(type, object, /*name_required=*/false));
  WAVEPOOL_ASSIGN_OR_RETURN(json body, WithTypeMeta(type, object));
  return Call(*transport_, JsonRequest("POST", type.CollectionPath(key.namespace_), body));
}

absl::StatusOr<json> Client::Update(const ResourceType& type, const json& object) {
  WAVEPOOL_ASSIGN_OR_RETURN(api::ObjectKey key, KeyOf(type, object, /*name_required=*/true));
  WAVEPOOL_ASSIGN_OR_RETURN(json body, WithTypeMeta(type, object));
  return Call(*transport_, JsonRequest("PUT", type.ObjectPath(key.namespace_, key.name), body));
}

absl::StatusOr<json> Client::UpdateStatus(const ResourceType& type, const json& object) {
  WAVEPOOL_ASSIGN_OR_RETURN(api::ObjectKey key, KeyOf(type, object, /*name_required=*/true));
  WAVEPOOL_ASSIGN_OR_RETURN(json body, WithTypeMeta(type, object));
  return Call(*transport_,
              JsonRequest("PUT", type.ObjectPath(key.namespace_, key.name) + "/status", body));
}

absl::StatusOr<json> Client::Patch(const ResourceType& type, std::string_view ns,
                                   std::string_view name, PatchType patch_type, const json& patch,
                                   std::string_view subresource) {
  WAVEPOOL_RETURN_IF_ERROR(RequireName(type, ns, name));
  if (subresource != "" && subresource != "status") {
    return absl::InvalidArgumentError(absl::StrCat("patch ", type.kind, " ", std::string(name),
                                                   ": subresource: must be \"\" or \"status\", "
                                                   "got \"",
                                                   std::string(subresource), "\""));
  }
  const bool json_patch = patch_type == PatchType::kJson;
  if (json_patch ? !patch.is_array() : !patch.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "patch ", type.kind, " ", std::string(name), ": a ", ContentTypeOf(patch_type),
        " patch must be a JSON ", json_patch ? "array" : "object", ", got ", patch.type_name()));
  }
  std::string target = type.ObjectPath(ns, name);
  if (!subresource.empty()) target += "/" + std::string(subresource);
  return Call(*transport_, JsonRequest("PATCH", target, patch, ContentTypeOf(patch_type)));
}

absl::Status Client::Delete(const ResourceType& type, std::string_view ns, std::string_view name,
                            const DeleteOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(RequireName(type, ns, name));
  return Call(*transport_,
              JsonRequest("DELETE", type.ObjectPath(ns, name), DeleteOptionsJson(options)))
      .status();
}

absl::StatusOr<std::unique_ptr<WatchStream>> Client::Watch(const ResourceType& type,
                                                           std::string_view ns,
                                                           const ListOptions& options) {
  Query query;
  query.Add("watch", "1");
  AddListOptions(options, query);
  if (options.timeout) {
    if (options.timeout->count() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "watch ", type.plural, ": timeout: must be > 0 seconds, got ", options.timeout->count()));
    }
    query.Add("timeoutSeconds", std::to_string(options.timeout->count()));
  }
  if (options.allow_watch_bookmarks) query.Add("allowWatchBookmarks", "true");
  HttpRequest request;
  request.target = type.CollectionPath(ns) + query.text();
  if (options.timeout) {
    // The server ends the stream at timeoutSeconds; give it a margin before the client gives up.
    request.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*options.timeout) +
                      std::chrono::milliseconds(30'000);
  }
  absl::StatusOr<std::unique_ptr<LineReader>> reader = transport_->Stream(request);
  if (!reader.ok()) {
    // An API error already names the request; a missing answer does not.
    if (ApiStatusOf(reader.status())) return reader.status();
    return NoAnswer(reader.status(), request);
  }
  return std::make_unique<WatchStream>(std::move(*reader));
}

}  // namespace wavepool::kube
