// Request decoding with the real kube-apiserver's wording (k8s.io/apiserver
// pkg/endpoints/handlers, k8s.io/apimachinery pkg/runtime/serializer).
#include "tests/support/apiserver/request_decoding.h"

#include <cstdint>
#include <cstdlib>
#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/request_protobuf.h"
#include "yaml-cpp/yaml.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr char kUnknownFormat[] =
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf; got ";

std::vector<std::string> PathSegments(std::string_view path) {
  std::vector<std::string> segments;
  for (absl::string_view segment :
       absl::StrSplit(absl::string_view(path.data(), path.size()), '/', absl::SkipEmpty())) {
    segments.emplace_back(segment);
  }
  return segments;
}

// The rest of a resource path after the group version: [watch/] then the two forms.
std::optional<ResourcePath> ParseResourceRest(ResourcePath path,
                                              const std::vector<std::string>& rest) {
  std::size_t i = 0;
  if (i < rest.size() && rest[i] == "watch") {
    path.watch_segment = true;
    ++i;
  }
  const std::size_t left = rest.size() - i;
  // namespaces/<ns>/<plural>...; namespaces/<name>/status and /finalize are the namespace's own
  // subresources.
  if (left >= 3 && rest[i] == "namespaces" && rest[i + 2] != "status" &&
      rest[i + 2] != "finalize") {
    if (left > 5) return std::nullopt;
    path.namespaced_form = true;
    path.namespace_name = rest[i + 1];
    path.plural = rest[i + 2];
    if (left >= 4) path.name = rest[i + 3];
    if (left == 5) path.subresource = rest[i + 4];
    return path;
  }
  if (left == 0 || left > 3) return std::nullopt;
  path.plural = rest[i];
  if (left >= 2) path.name = rest[i + 1];
  if (left == 3) path.subresource = rest[i + 2];
  return path;
}

// A YAML scalar as JSON: quoted scalars stay strings; plain ones become null, booleans or
// numbers when they read as such (YAML 1.2 core schema), strings otherwise.
nlohmann::json YamlScalarToJson(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  std::int64_t integer = 0;
  if (absl::SimpleAtoi(text, &integer)) return integer;
  double number = 0;
  const bool numeric_start =
      std::isdigit(static_cast<unsigned char>(text[0])) != 0 ||
      ((text[0] == '-' || text[0] == '+' || text[0] == '.') && text.size() > 1);
  if (numeric_start && absl::SimpleAtod(text, &number)) return number;
  return text;
}

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : node) array.push_back(YamlToJson(item));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) {
        object[entry.first.as<std::string>()] = YamlToJson(entry.second);
      }
      return object;
    }
    case YAML::NodeType::Scalar:
      return YamlScalarToJson(node);
    default:
      return nullptr;
  }
}

bool IsYaml(const HttpRequest& request) {
  const std::string media = MediaTypeOf(request.Header("content-type"));
  return media == "application/yaml" || media == "application/x-yaml" || media == "text/yaml";
}

// The body parsed as JSON (or YAML); the parser's message on failure.
absl::StatusOr<nlohmann::json> ParseBody(const HttpRequest& request) {
  if (IsYaml(request)) {
    try {
      return YamlToJson(YAML::Load(request.body));
    } catch (const std::exception& error) {
      return absl::InvalidArgumentError(absl::StrCat("yaml: ", error.what()));
    }
  }
  if (request.body.empty()) {
    return absl::InvalidArgumentError("unexpected end of JSON input");
  }
  nlohmann::json body = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    // nlohmann's message needs the exception; parse again to get it.
    try {
      body = nlohmann::json::parse(request.body);
    } catch (const nlohmann::json::exception& error) {
      return absl::InvalidArgumentError(error.what());
    }
  }
  return body;
}

absl::StatusOr<std::int64_t> ParseInt(const HttpRequest& request, const std::string& name) {
  std::int64_t value = 0;
  if (!absl::SimpleAtoi(request.Query(name), &value)) {
    return BadRequestFailure(absl::StrCat("invalid value for query parameter ", name, ": \"",
                                          request.Query(name), "\": not an integer"));
  }
  return value;
}

absl::StatusOr<bool> ParseDryRun(const std::string& value) {
  if (value.empty()) return false;
  if (value == "All") return true;
  return BadRequestFailure(
      absl::StrCat("Invalid dryRun value: \"", value, "\": supported values: \"All\""));
}

}  // namespace

std::optional<ResourcePath> ParseResourcePath(std::string_view path) {
  const std::vector<std::string> segments = PathSegments(path);
  ResourcePath parsed;
  std::size_t rest_start = 0;
  if (segments.size() >= 3 && segments[0] == "api") {
    parsed.version = segments[1];
    rest_start = 2;
  } else if (segments.size() >= 4 && segments[0] == "apis") {
    parsed.group = segments[1];
    parsed.version = segments[2];
    rest_start = 3;
  } else {
    return std::nullopt;
  }
  return ParseResourceRest(std::move(parsed),
                           std::vector<std::string>(segments.begin() + rest_start, segments.end()));
}

std::string MediaTypeOf(std::string_view content_type) {
  const std::string_view media = content_type.substr(0, content_type.find(';'));
  return absl::AsciiStrToLower(
      std::string(absl::StripAsciiWhitespace(absl::string_view(media.data(), media.size()))));
}

absl::StatusOr<nlohmann::json> DecodeObjectBody(const HttpRequest& request,
                                                const ResourceInfo& resource) {
  const std::string media = MediaTypeOf(request.Header("content-type"));
  const bool protobuf = media == "application/vnd.kubernetes.protobuf";
  if (!media.empty() && media != "application/json" && !IsYaml(request) && !protobuf) {
    return UnsupportedMediaTypeFailure(absl::StrCat(kUnknownFormat, media));
  }
  absl::StatusOr<nlohmann::json> body =
      protobuf ? DecodeProtobufObject(request.body) : ParseBody(request);
  // kubectl's generator commands send protobuf for built-in kinds; only a few are decoded
  // (request_protobuf.h), the rest is refused rather than half read.
  if (!body.ok() && body.status().code() == absl::StatusCode::kUnimplemented) {
    return UnsupportedMediaTypeFailure(
        absl::StrCat(body.status().message(), "; send application/json"));
  }
  const std::string prefix = absl::StrCat("the object provided is unrecognized (must be of type ",
                                          resource.kind, "): couldn't get version/kind; ");
  if (!body.ok()) {
    return BadRequestFailure(
        absl::StrCat(prefix, protobuf ? "" : "json parse error: ", body.status().message()));
  }
  if (!body->is_object()) {
    return BadRequestFailure(absl::StrCat(prefix, "json parse error: json: cannot unmarshal ",
                                          body->type_name(), " into Go value of type struct"));
  }
  nlohmann::json& object = *body;
  const std::string group_version = resource.GroupVersion();
  if (object.contains("apiVersion") && object["apiVersion"] != group_version) {
    return BadRequestFailure(absl::StrCat(
        "the API version in the data (",
        object["apiVersion"].is_string() ? object["apiVersion"].get<std::string>() : "?",
        ") does not match the expected API version (", group_version, ")"));
  }
  if (object.contains("kind") && object["kind"] != resource.kind) {
    return BadRequestFailure(absl::StrCat("the object provided is unrecognized (must be of type ",
                                          resource.kind, "): kind ", object["kind"].dump(),
                                          " does not match"));
  }
  // The server takes the kind and version from the URL when the body leaves them out.
  object["apiVersion"] = group_version;
  object["kind"] = resource.kind;
  return body;
}

absl::StatusOr<nlohmann::json> DecodeJsonBody(const HttpRequest& request) {
  absl::StatusOr<nlohmann::json> body = ParseBody(request);
  if (!body.ok()) return BadRequestFailure(std::string(body.status().message()));
  return body;
}

absl::StatusOr<ListQuery> ParseListQuery(const HttpRequest& request) {
  ListQuery query;
  query.label_selector = request.Query("labelSelector");
  query.field_selector = request.Query("fieldSelector");
  query.resource_version = request.Query("resourceVersion");
  query.resource_version_match = request.Query("resourceVersionMatch");
  query.continue_token = request.Query("continue");
  if (request.HasQuery("limit") && !request.Query("limit").empty()) {
    absl::StatusOr<std::int64_t> limit = ParseInt(request, "limit");
    if (!limit.ok()) return limit.status();
    query.limit = *limit;
  }
  const std::string& match = query.resource_version_match;
  if (!match.empty() && match != "NotOlderThan" && match != "Exact") {
    return BadRequestFailure(absl::StrCat("resourceVersionMatch: Unsupported value: \"", match,
                                          "\": supported values: \"Exact\", \"NotOlderThan\""));
  }
  return query;
}

absl::StatusOr<WriteOptions> ParseWriteOptions(const HttpRequest& request) {
  WriteOptions options;
  absl::StatusOr<bool> dry_run = ParseDryRun(request.Query("dryRun"));
  if (!dry_run.ok()) return dry_run.status();
  options.dry_run = *dry_run;
  const std::string validation = request.Query("fieldValidation");
  if (validation.empty() || validation == "Warn") {
    options.field_validation = FieldValidation::kWarn;
  } else if (validation == "Ignore") {
    options.field_validation = FieldValidation::kIgnore;
  } else if (validation == "Strict") {
    options.field_validation = FieldValidation::kStrict;
  } else {
    return BadRequestFailure(absl::StrCat("fieldValidation: Unsupported value: \"", validation,
                                          "\": supported values: \"Ignore\", \"Strict\", "
                                          "\"Warn\""));
  }
  return options;
}

absl::StatusOr<DeleteRequest> ParseDeleteRequest(const HttpRequest& request) {
  DeleteRequest result;
  nlohmann::json options = nlohmann::json::object();
  if (!request.body.empty()) {
    absl::StatusOr<nlohmann::json> body = DecodeJsonBody(request);
    if (!body.ok()) return body.status();
    if (!body->is_object()) return BadRequestFailure("DeleteOptions: the body is not an object");
    options = *std::move(body);
  }
  try {
    if (options.contains("gracePeriodSeconds") && !options["gracePeriodSeconds"].is_null()) {
      result.grace_period_seconds = options["gracePeriodSeconds"].get<std::int64_t>();
    }
    result.propagation_policy = options.value("propagationPolicy", "");
    if (options.contains("orphanDependents") && options["orphanDependents"].is_boolean()) {
      if (result.propagation_policy.empty()) {
        result.propagation_policy =
            options["orphanDependents"].get<bool>() ? "Orphan" : "Background";
      }
    }
    const nlohmann::json preconditions = options.value("preconditions", nlohmann::json::object());
    result.precondition_uid = preconditions.value("uid", "");
    result.precondition_resource_version = preconditions.value("resourceVersion", "");
    for (const auto& value : options.value("dryRun", nlohmann::json::array())) {
      absl::StatusOr<bool> dry_run = ParseDryRun(value.get<std::string>());
      if (!dry_run.ok()) return dry_run.status();
      result.dry_run = result.dry_run || *dry_run;
    }
  } catch (const nlohmann::json::exception& error) {
    return BadRequestFailure(absl::StrCat("DeleteOptions: ", error.what()));
  }
  if (request.HasQuery("gracePeriodSeconds")) {
    absl::StatusOr<std::int64_t> grace = ParseInt(request, "gracePeriodSeconds");
    if (!grace.ok()) return grace.status();
    result.grace_period_seconds = *grace;
  }
  if (request.HasQuery("propagationPolicy")) {
    result.propagation_policy = request.Query("propagationPolicy");
  }
  if (request.HasQuery("orphanDependents") && result.propagation_policy.empty()) {
    result.propagation_policy =
        request.Query("orphanDependents") == "true" ? "Orphan" : "Background";
  }
  const std::string& policy = result.propagation_policy;
  if (!policy.empty() && policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    return BadRequestFailure(absl::StrCat("propagationPolicy: Unsupported value: \"", policy,
                                          "\": supported values: \"Foreground\", "
                                          "\"Background\", \"Orphan\""));
  }
  absl::StatusOr<bool> dry_run = ParseDryRun(request.Query("dryRun"));
  if (!dry_run.ok()) return dry_run.status();
  result.dry_run = result.dry_run || *dry_run;
  return result;
}

absl::StatusOr<bool> ParseBoolQuery(const HttpRequest& request, const std::string& name) {
  const std::string value = absl::AsciiStrToLower(request.Query(name));
  if (value.empty() || value == "0" || value == "false") return false;
  if (value == "1" || value == "true") return true;
  return BadRequestFailure(absl::StrCat("invalid value for query parameter ", name, ": \"",
                                        request.Query(name), "\": must be true or false"));
}

absl::StatusOr<TableRequest> ParseTableRequest(const HttpRequest& request) {
  TableRequest table;
  table.as_table = AcceptsTable(request.Header("accept"));
  if (table.as_table && !request.Query("includeObject").empty()) {
    absl::StatusOr<IncludeObject> include = ParseIncludeObject(request.Query("includeObject"));
    if (!include.ok()) return BadRequestFailure(std::string(include.status().message()));
    table.include = *include;
  }
  return table;
}

HttpResponse JsonResponse(int status, const nlohmann::json& body) {
  HttpResponse response;
  response.status = status;
  response.body = body.dump();
  response.body.push_back('\n');
  return response;
}

HttpResponse FailureResponse(const absl::Status& status) {
  return JsonResponse(HttpCodeOf(status), StatusBodyOf(status));
}

std::vector<std::pair<std::string, std::string>> WarningHeaders(
    const std::vector<std::string>& warnings) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const std::string& warning : warnings) {
    std::string value = "299 - \"";
    for (const char c : warning) {
      if (c == '"' || c == '\\') value.push_back('\\');
      // Header values cannot carry line breaks.
      value.push_back(c == '\n' || c == '\r' ? ' ' : c);
    }
    value.push_back('"');
    headers.emplace_back("Warning", std::move(value));
  }
  return headers;
}

absl::Status UnknownPathFailure() {
  return ApiFailure(404, "NotFound", "the server could not find the requested resource");
}

}  // namespace wavepool::testing::apiserver
