// Decoding of kube-apiserver requests and encoding of their answers, shared by the handlers in
// api_handler.cpp, request_objects.cpp and request_watch.cpp: resource paths, query parameters
// (list, write and delete options), bodies in JSON or YAML, and answers as JSON, Status failures
// and Warning headers. Pure functions.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_REQUEST_DECODING_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_REQUEST_DECODING_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/http_server.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/apiserver/table.h"

namespace wavepool::testing::apiserver {

// A resource path, split:
//   /api/v1/<plural>[/<name>[/<subresource>]]                (cluster-wide or cluster-scoped)
//   /api/v1/namespaces/<ns>/<plural>[/<name>[/<subresource>]]
//   /apis/<group>/<version>/... (the same two forms)
// with the deprecated /watch/ segment after the version accepted.
struct ResourcePath {
  std::string group;
  std::string version;
  std::string namespace_name;  // set only in the namespaces/<ns>/<plural> form
  bool namespaced_form = false;
  std::string plural;
  std::string name;
  std::string subresource;
  bool watch_segment = false;  // /api/v1/watch/...
};

// nullopt when `path` is not a resource path (discovery documents are routed before this).
std::optional<ResourcePath> ParseResourcePath(std::string_view path);

// The media type of a Content-Type header, lower case, without parameters.
std::string MediaTypeOf(std::string_view content_type);

// The request's body as a JSON object (application/json, or application/yaml). A body that is
// not an object of `resource`: 400 with the real server's "couldn't get version/kind" wording.
absl::StatusOr<nlohmann::json> DecodeObjectBody(const HttpRequest& request,
                                                const ResourceInfo& resource);

// The body as any JSON value (patches, DeleteOptions); 400 when it does not parse.
absl::StatusOr<nlohmann::json> DecodeJsonBody(const HttpRequest& request);

// labelSelector, fieldSelector, resourceVersion, resourceVersionMatch, limit, continue.
absl::StatusOr<ListQuery> ParseListQuery(const HttpRequest& request);

// dryRun=All and fieldValidation=Ignore|Warn|Strict (default Warn, as the real server).
absl::StatusOr<WriteOptions> ParseWriteOptions(const HttpRequest& request);

// DeleteOptions from the body (when there is one) and the query: gracePeriodSeconds,
// propagationPolicy, orphanDependents, preconditions.uid/resourceVersion, dryRun.
absl::StatusOr<DeleteRequest> ParseDeleteRequest(const HttpRequest& request);

// A boolean query parameter: "1", "true" (any case) -> true; absent, "0", "false" -> false.
absl::StatusOr<bool> ParseBoolQuery(const HttpRequest& request, const std::string& name);

// Whether the answer should be a meta.k8s.io/v1 Table (the Accept header asks for one), and how
// much of each object its rows carry (?includeObject; Metadata when absent, as the real server).
struct TableRequest {
  bool as_table = false;
  IncludeObject include = IncludeObject::kMetadata;
};
absl::StatusOr<TableRequest> ParseTableRequest(const HttpRequest& request);

// An answer with a JSON body.
HttpResponse JsonResponse(int status, const nlohmann::json& body);
// A failure as the real server answers it: HttpCodeOf(status) and StatusBodyOf(status).
HttpResponse FailureResponse(const absl::Status& status);
// `299 - "<warning>"` header values, quotes and backslashes escaped.
std::vector<std::pair<std::string, std::string>> WarningHeaders(
    const std::vector<std::string>& warnings);

// 404 "the server could not find the requested resource", as for any unknown path.
absl::Status UnknownPathFailure();

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_REQUEST_DECODING_H_
