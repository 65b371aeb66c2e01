// Request decoding: resource paths, query parameters, bodies, Warning headers.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/request_decoding.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

ResourceInfo PodResource() {
  ResourceInfo pods;
  pods.version = "v1";
  pods.kind = "Pod";
  pods.plural = "pods";
  pods.list_kind = "PodList";
  return pods;
}

HttpRequest RequestWithQuery(const std::string& query) {
  HttpRequest request;
  request.query = ParseQueryString(query);
  return request;
}

TEST(HttpResourcePath, SplitsNamespacedObjectAndSubresource) {
  const auto path = ParseResourcePath("/api/v1/namespaces/team-a/pods/web-0/status");
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(path->group, "");
  EXPECT_EQ(path->version, "v1");
  EXPECT_TRUE(path->namespaced_form);
  EXPECT_EQ(path->namespace_name, "team-a");
  EXPECT_EQ(path->plural, "pods");
  EXPECT_EQ(path->name, "web-0");
  EXPECT_EQ(path->subresource, "status");
}

TEST(HttpResourcePath, SplitsGroupCollectionsAcrossNamespaces) {
  const auto path = ParseResourcePath("/apis/wavepool.dev/v1alpha1/trainingjobs");
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(path->group, "wavepool.dev");
  EXPECT_EQ(path->version, "v1alpha1");
  EXPECT_FALSE(path->namespaced_form);
  EXPECT_EQ(path->plural, "trainingjobs");
  EXPECT_EQ(path->name, "");
}

TEST(HttpResourcePath, TreatsNamespacesAsClusterScopedObjects) {
  const auto ns = ParseResourcePath("/api/v1/namespaces/team-a");
  ASSERT_TRUE(ns.has_value());
  EXPECT_FALSE(ns->namespaced_form);
  EXPECT_EQ(ns->plural, "namespaces");
  EXPECT_EQ(ns->name, "team-a");
  const auto status = ParseResourcePath("/api/v1/namespaces/team-a/status");
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->namespaced_form);
  EXPECT_EQ(status->name, "team-a");
  EXPECT_EQ(status->subresource, "status");
}

TEST(HttpResourcePath, AcceptsTheDeprecatedWatchSegment) {
  const auto path = ParseResourcePath("/api/v1/watch/namespaces/default/configmaps");
  ASSERT_TRUE(path.has_value());
  EXPECT_TRUE(path->watch_segment);
  EXPECT_EQ(path->namespace_name, "default");
  EXPECT_EQ(path->plural, "configmaps");
}

TEST(HttpResourcePath, RejectsNonResourcePaths) {
  EXPECT_FALSE(ParseResourcePath("/api").has_value());
  EXPECT_FALSE(ParseResourcePath("/apis/apps/v1").has_value());
  EXPECT_FALSE(ParseResourcePath("/version").has_value());
  EXPECT_FALSE(ParseResourcePath("/api/v1/namespaces/a/pods/b/status/extra").has_value());
}

TEST(HttpQuery, DecodesPercentAndPlus) {
  EXPECT_THAT(ParseQueryString("labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5&watch"),
              ElementsAre(Pair("labelSelector", "app=web,tier in (a)"), Pair("limit", "5"),
                          Pair("watch", "")));
  EXPECT_EQ(UrlDecode("a%2Fb+c", /*plus_is_space=*/false), "a/b+c");
  EXPECT_EQ(UrlDecode("bad%zz%4", /*plus_is_space=*/false), "bad%zz%4");
}

TEST(HttpQuery, ParsesListOptions) {
  ASSERT_OK_AND_ASSIGN(const ListQuery query,
                       ParseListQuery(RequestWithQuery(
                           "labelSelector=a%3Db&fieldSelector=metadata.name%3Dx&limit=2&"
                           "continue=tok&resourceVersion=7&resourceVersionMatch=NotOlderThan")));
  EXPECT_EQ(query.label_selector, "a=b");
  EXPECT_EQ(query.field_selector, "metadata.name=x");
  EXPECT_EQ(query.limit, 2);
  EXPECT_EQ(query.continue_token, "tok");
  EXPECT_EQ(query.resource_version, "7");
  EXPECT_EQ(query.resource_version_match, "NotOlderThan");
}

TEST(HttpQuery, RejectsBadLimitAndMatch) {
  EXPECT_THAT(ParseListQuery(RequestWithQuery("limit=many")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
  EXPECT_THAT(ParseListQuery(RequestWithQuery("resourceVersionMatch=Newest")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Exact")));
}

TEST(HttpQuery, ParsesWriteOptions) {
  ASSERT_OK_AND_ASSIGN(WriteOptions strict,
                       ParseWriteOptions(RequestWithQuery("dryRun=All&fieldValidation=Strict")));
  EXPECT_TRUE(strict.dry_run);
  EXPECT_EQ(strict.field_validation, FieldValidation::kStrict);
  ASSERT_OK_AND_ASSIGN(WriteOptions plain, ParseWriteOptions(RequestWithQuery("")));
  EXPECT_FALSE(plain.dry_run);
  EXPECT_EQ(plain.field_validation, FieldValidation::kWarn);
  EXPECT_THAT(ParseWriteOptions(RequestWithQuery("dryRun=Some")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("All")));
  EXPECT_THAT(ParseWriteOptions(RequestWithQuery("fieldValidation=Loud")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fieldValidation")));
}

TEST(HttpQuery, ParsesDeleteOptionsFromBodyAndQuery) {
  HttpRequest request = RequestWithQuery("gracePeriodSeconds=0");
  request.body = R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground",
      "gracePeriodSeconds":30,"preconditions":{"uid":"u-1","resourceVersion":"9"},
      "dryRun":["All"]})";
  ASSERT_OK_AND_ASSIGN(const DeleteRequest options, ParseDeleteRequest(request));
  EXPECT_EQ(options.grace_period_seconds, 0);  // the query wins over the body
  EXPECT_EQ(options.propagation_policy, "Foreground");
  EXPECT_EQ(options.precondition_uid, "u-1");
  EXPECT_EQ(options.precondition_resource_version, "9");
  EXPECT_TRUE(options.dry_run);

  HttpRequest orphan = RequestWithQuery("");
  orphan.body = R"({"orphanDependents":true})";
  ASSERT_OK_AND_ASSIGN(const DeleteRequest orphaned, ParseDeleteRequest(orphan));
  EXPECT_EQ(orphaned.propagation_policy, "Orphan");

  EXPECT_THAT(ParseDeleteRequest(RequestWithQuery("propagationPolicy=Sideways")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("propagationPolicy")));
  HttpRequest broken = RequestWithQuery("");
  broken.body = "{";
  EXPECT_THAT(ParseDeleteRequest(broken),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(HttpBody, FillsKindAndVersionFromTheUrl) {
  HttpRequest request;
  request.body = R"({"metadata":{"name":"a"}})";
  ASSERT_OK_AND_ASSIGN(const nlohmann::json object, DecodeObjectBody(request, PodResource()));
  EXPECT_EQ(object["kind"], "Pod");
  EXPECT_EQ(object["apiVersion"], "v1");
}

TEST(HttpBody, ReadsYamlWithTypedScalars) {
  HttpRequest request;
  request.headers["content-type"] = "application/yaml";
  request.body =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels: {tier: \"1\"}\n"
      "spec:\n  replicas: 3\n  ratio: 0.5\n  enabled: true\n  nothing: null\n  list: [a, 2]\n";
  ASSERT_OK_AND_ASSIGN(const nlohmann::json object, DecodeObjectBody(request, PodResource()));
  EXPECT_EQ(object["metadata"]["labels"]["tier"], "1");
  EXPECT_EQ(object["spec"]["replicas"], 3);
  EXPECT_EQ(object["spec"]["ratio"], 0.5);
  EXPECT_EQ(object["spec"]["enabled"], true);
  EXPECT_TRUE(object["spec"]["nothing"].is_null());
  EXPECT_EQ(object["spec"]["list"], nlohmann::json::array({"a", 2}));
}

TEST(HttpBody, RejectsBrokenJsonLikeTheRealServer) {
  HttpRequest request;
  request.body = R"({"kind": "Pod",)";
  const absl::StatusOr<nlohmann::json> object = DecodeObjectBody(request, PodResource());
  EXPECT_THAT(object, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("the object provided is unrecognized (must be of type "
                                         "Pod): couldn't get version/kind; json parse error")));
  EXPECT_EQ(HttpCodeOf(object.status()), 400);
  EXPECT_EQ(StatusBodyOf(object.status())["reason"], "BadRequest");
}

TEST(HttpBody, RejectsAnotherKindOrVersion) {
  HttpRequest request;
  request.body = R"({"apiVersion":"v2","kind":"Pod"})";
  EXPECT_THAT(DecodeObjectBody(request, PodResource()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("API version")));
  request.body = R"({"apiVersion":"v1","kind":"Node"})";
  EXPECT_THAT(DecodeObjectBody(request, PodResource()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be of type Pod")));
  request.body = "[1, 2]";
  EXPECT_THAT(DecodeObjectBody(request, PodResource()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot unmarshal array")));
}

TEST(HttpAnswer, EscapesWarnings) {
  EXPECT_THAT(WarningHeaders({"unknown field \"spec.x\""}),
              ElementsAre(Pair("Warning", R"(299 - "unknown field \"spec.x\"")")));
}

TEST(HttpAnswer, EncodesFailuresAsStatus) {
  const HttpResponse response = FailureResponse(NotFoundFailure("pods", "web"));
  EXPECT_EQ(response.status, 404);
  const nlohmann::json body = nlohmann::json::parse(response.body);
  EXPECT_EQ(body["kind"], "Status");
  EXPECT_EQ(body["reason"], "NotFound");
  EXPECT_EQ(body["message"], "pods \"web\" not found");
}

TEST(HttpQuery, ParsesBooleans) {
  const auto parse = [](const std::string& query) {
    return ParseBoolQuery(RequestWithQuery(query), "watch");
  };
  EXPECT_TRUE(parse("watch=1").value());
  EXPECT_TRUE(parse("watch=true").value());
  EXPECT_FALSE(parse("watch=false").value());
  EXPECT_FALSE(parse("").value());
  EXPECT_THAT(parse("watch=maybe"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("watch")));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
