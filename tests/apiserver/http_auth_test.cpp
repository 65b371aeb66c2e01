// Authentication and RBAC authorization through HTTP: bearer tokens (the admin token and the
// TokenRequest API's ServiceAccount tokens), 401 and 403 answers as kube-apiserver words them,
// and SelfSubjectAccessReview. The default (AlwaysAllow) server keeps needing no credentials.
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/http_test_client.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kPods[] = "/api/v1/namespaces/team/pods";
constexpr char kTokenPath[] = "/api/v1/namespaces/team/serviceaccounts/bot/token";
constexpr char kBotUser[] = "system:serviceaccount:team:bot";

json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
}

class Caller {
 public:
  Caller(const std::string& url, std::string token) : client_(url), token_(std::move(token)) {}

  ClientResponse Call(const std::string& method, const std::string& target,
                      const json& body = nullptr,
                      const std::string& content_type = "application/json") {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!token_.empty()) headers.emplace_back("Authorization", "Bearer " + token_);
    return client_.Request(method, target, body.is_null() ? "" : body.dump(), content_type,
                           headers);
  }

 private:
  HttpTestClient client_;
  std::string token_;
};

class HttpAuth : public ::testing::Test {
 protected:
  void Start(AuthorizationMode mode) {
    TestApiServer::Options options;
    options.authorization_mode = mode;
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start(options));
    admin_ = std::make_unique<Caller>(server_->url(), server_->AdminToken());
  }

  // Namespace "team" with ServiceAccount "bot", and a token for it.
  std::string BotToken() {
    EXPECT_EQ(
        admin_
            ->Call("POST", "/api/v1/namespaces",
                   {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}})
            .status,
        201);
    EXPECT_EQ(
        admin_
            ->Call(
                "POST", "/api/v1/namespaces/team/serviceaccounts",
                {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "bot"}}}})
            .status,
        201);
    const ClientResponse token = admin_->Call("POST", kTokenPath,
                                              {{"apiVersion", "authentication.k8s.io/v1"},
                                               {"kind", "TokenRequest"},
                                               {"spec", json::object()}});
    EXPECT_EQ(token.status, 201) << token.body;
    return token.Json()["status"].value("token", "");
  }

  void Grant(const std::string& binding_kind, const std::string& ns, const std::string& role_kind,
             const std::string& name, const json& rules) {
    const std::string base = ns.empty()
                                 ? "/apis/rbac.authorization.k8s.io/v1/"
                                 : "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/";
    const std::string role_plural = role_kind == "Role" ? "roles" : "clusterroles";
    const std::string binding_plural =
        binding_kind == "RoleBinding" ? "rolebindings" : "clusterrolebindings";
    const std::string role_base =
        role_kind == "Role" ? base : std::string("/apis/rbac.authorization.k8s.io/v1/");
    ClientResponse role = admin_->Call("POST", role_base + role_plural,
                                       {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                                        {"kind", role_kind},
                                        {"metadata", {{"name", name}}},
                                        {"rules", rules}});
    ASSERT_TRUE(role.status == 201 || role.status == 409) << role.body;
    const ClientResponse binding = admin_->Call(
        "POST", base + binding_plural,
        {{"apiVersion", "rbac.authorization.k8s.io/v1"},
         {"kind", binding_kind},
         {"metadata", {{"name", name}}},
         {"roleRef",
          {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", role_kind}, {"name", name}}},
         {"subjects", {{{"kind", "ServiceAccount"}, {"name", "bot"}, {"namespace", "team"}}}}});
    ASSERT_EQ(binding.status, 201) << binding.body;
  }

  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<Caller> admin_;
};

TEST_F(HttpAuth, AlwaysAllowNeedsNoTokenButRefusesAnUnknownOne) {
  ASSERT_NO_FATAL_FAILURE(Start(AuthorizationMode::kAlwaysAllow));
  EXPECT_EQ(Caller(server_->url(), "").Call("GET", "/api/v1/namespaces").status, 200);
  EXPECT_EQ(admin_->Call("GET", "/api/v1/namespaces").status, 200);
  const ClientResponse unknown =
      Caller(server_->url(), "not-a-token").Call("GET", "/api/v1/namespaces");
  EXPECT_EQ(unknown.status, 401);
  EXPECT_THAT(server_->Kubeconfig(), ::testing::Not(HasSubstr("token:")));
  // ServiceAccount tokens are issued here too, and authenticate.
  const std::string token = BotToken();
  EXPECT_EQ(Caller(server_->url(), token).Call("GET", kPods).status, 200);
}

TEST_F(HttpAuth, RbacRefusesRequestsWithoutAValidToken) {
  ASSERT_NO_FATAL_FAILURE(Start(AuthorizationMode::kRbac));
  for (const std::string& token : {std::string(), std::string("not-a-token")}) {
    const ClientResponse r = Caller(server_->url(), token).Call("GET", "/api/v1/namespaces");
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.Json(), json({{"kind", "Status"},
                              {"apiVersion", "v1"},
                              {"metadata", json::object()},
                              {"status", "Failure"},
                              {"message", "Unauthorized"},
                              {"reason", "Unauthorized"},
                              {"code", 401}}));
    EXPECT_EQ(Caller(server_->url(), token).Call("GET", "/healthz").status, 401);
  }
  EXPECT_THAT(server_->Refusals(),
              ::testing::ElementsAre("no token: GET /api/v1/namespaces", "no token: GET /healthz",
                                     "unknown token: GET /api/v1/namespaces",
                                     "unknown token: GET /healthz"));
  // The admin token (in the kubeconfig) may do everything, fault injection included.
  EXPECT_THAT(server_->Kubeconfig(), HasSubstr("token: " + server_->AdminToken()));
  EXPECT_EQ(admin_->Call("GET", "/api/v1/namespaces").status, 200);
  EXPECT_EQ(admin_->Call("POST", "/wavepool-test/compact").status, 200);
}

TEST_F(HttpAuth, TokenRequestIssuesAServiceAccountToken) {
  ASSERT_NO_FATAL_FAILURE(Start(AuthorizationMode::kRbac));
  ASSERT_FALSE(BotToken().empty());
  const ClientResponse r =
      admin_->Call("POST", kTokenPath,
                   {{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenRequest"},
                    {"spec", {{"audiences", {"wavepool"}}, {"expirationSeconds", 7200}}}});
  ASSERT_EQ(r.status, 201) << r.body;
  const json answer = r.Json();
  EXPECT_EQ(answer["apiVersion"], "authentication.k8s.io/v1");
  EXPECT_EQ(answer["kind"], "TokenRequest");
  EXPECT_EQ(answer["metadata"]["name"], "bot");
  EXPECT_EQ(answer["metadata"]["namespace"], "team");
  EXPECT_EQ(answer["spec"]["audiences"], json({"wavepool"}));
  EXPECT_EQ(answer["spec"]["expirationSeconds"], 7200);
  EXPECT_GE(answer["status"]["token"].get<std::string>().size(), 40u);
  EXPECT_THAT(answer["status"]["expirationTimestamp"].get<std::string>(),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z"));

  // Too short a life; a ServiceAccount that does not exist; a GET.
  const ClientResponse short_life =
      admin_->Call("POST", kTokenPath, {{"spec", {{"expirationSeconds", 60}}}});
  EXPECT_EQ(short_life.status, 422);
  EXPECT_THAT(short_life.Json().value("message", ""),
              HasSubstr("spec.expirationSeconds: Invalid value: 60: may not specify a duration "
                        "less than 10 minutes"));
  const ClientResponse missing =
      admin_->Call("POST", "/api/v1/namespaces/team/serviceaccounts/ghost/token", json::object());
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.Json().value("message", ""), "serviceaccounts \"ghost\" not found");
  EXPECT_EQ(admin_->Call("GET", kTokenPath).status, 405);
}

TEST_F(HttpAuth, ServiceAccountGetsOnlyWhatItsBindingsGrant) {
  ASSERT_NO_FATAL_FAILURE(Start(AuthorizationMode::kRbac));
  Caller bot(server_->url(), BotToken());
  // Discovery, version and health: every authenticated user.
  EXPECT_EQ(bot.Call("GET", "/api").status, 200);
  EXPECT_EQ(bot.Call("GET", "/apis").status, 200);
  EXPECT_EQ(bot.Call("GET", "/api/v1").status, 200);
  EXPECT_EQ(bot.Call("GET", "/version").status, 200);
  EXPECT_EQ(bot.Call("GET", "/healthz").status, 200);
  EXPECT_EQ(bot.Call("POST", "/wavepool-test/compact").status, 403);

  ClientResponse list = bot.Call("GET", kPods);
  EXPECT_EQ(list.status, 403);
  EXPECT_EQ(list.Json(),
            json({{"kind", "Status"},
                  {"apiVersion", "v1"},
                  {"metadata", json::object()},
                  {"status", "Failure"},
                  {"message",
                   "pods is forbidden: User \"system:serviceaccount:team:bot\" cannot "
                   "list resource \"pods\" in API group \"\" in the namespace \"team\""},
                  {"reason", "Forbidden"},
                  {"details", {{"kind", "pods"}}},
                  {"code", 403}}));

  EXPECT_THAT(server_->Refusals(),
              ::testing::ElementsAre("forbidden: User \"system:serviceaccount:team:bot\" cannot "
                                     "post path \"/wavepool-test/compact\"",
                                     list.Json().value("message", "")));
  ASSERT_NO_FATAL_FAILURE(
      Grant("RoleBinding", "team", "Role", "pods",
            {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"list", "create"}}}}));
  EXPECT_EQ(bot.Call("GET", kPods).status, 200);
  EXPECT_EQ(bot.Call("POST", kPods, Pod("p")).status, 201);
  // watch is its own verb; get, the status subresource and delete are not granted.
  const ClientResponse watch = bot.Call("GET", std::string(kPods) + "?watch=true");
  EXPECT_EQ(watch.status, 403);
  EXPECT_THAT(watch.Json().value("message", ""), HasSubstr("cannot watch resource \"pods\""));
  const ClientResponse get = bot.Call("GET", std::string(kPods) + "/p");
  EXPECT_EQ(get.status, 403);
  EXPECT_THAT(get.Json().value("message", ""), HasSubstr("pods \"p\" is forbidden"));
  const ClientResponse status =
      bot.Call("PATCH", std::string(kPods) + "/p/status", {{"status", {{"phase", "Running"}}}},
               "application/merge-patch+json");
  EXPECT_EQ(status.status, 403);
  EXPECT_THAT(status.Json().value("message", ""),
              HasSubstr("cannot patch resource \"pods/status\" in API group \"\""));
  EXPECT_EQ(bot.Call("DELETE", std::string(kPods) + "/p").status, 403);
  // A Role grants in its namespace only: not across all namespaces, not in another one.
  EXPECT_EQ(bot.Call("GET", "/api/v1/pods").status, 403);
  EXPECT_EQ(bot.Call("GET", "/api/v1/namespaces/default/pods").status, 403);
  // Cluster-scoped resources need a ClusterRoleBinding.
  const ClientResponse nodes = bot.Call("GET", "/api/v1/nodes");
  EXPECT_EQ(nodes.status, 403);
  EXPECT_THAT(nodes.Json().value("message", ""),
              HasSubstr("cannot list resource \"nodes\" in API group \"\" at the cluster scope"));
  ASSERT_NO_FATAL_FAILURE(
      Grant("ClusterRoleBinding", "", "ClusterRole", "nodes",
            {{{"apiGroups", {""}}, {"resources", {"nodes", "pods/status"}}, {"verbs", {"*"}}}}));
  EXPECT_EQ(bot.Call("GET", "/api/v1/nodes").status, 200);
  EXPECT_EQ(bot.Call("PATCH", std::string(kPods) + "/p/status",
                     {{"status", {{"phase", "Running"}}}}, "application/merge-patch+json")
                .status,
            200);
  // Revoking is immediate: the binding is read on every request.
  EXPECT_EQ(
      admin_->Call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/nodes").status,
      200);
  EXPECT_EQ(bot.Call("GET", "/api/v1/nodes").status, 403);
}

TEST_F(HttpAuth, DeletedServiceAccountsTokensStopWorking) {
  ASSERT_NO_FATAL_FAILURE(Start(AuthorizationMode::kRbac));
  Caller bot(server_->url(), BotToken());
  EXPECT_EQ(bot.Call("GET", "/api").status, 200);
  ASSERT_EQ(admin_->Call("DELETE", "/api/v1/namespaces/team/serviceaccounts/bot").status, 200);
  EXPECT_EQ(bot.Call("GET", "/api").status, 401);
  EXPECT_THAT(server_->Refusals(), ::testing::ElementsAre("token of a deleted ServiceAccount "
                                                          "team/bot: GET /api"));
  // Nor does a new ServiceAccount of the same name revive them (a different uid).
  ASSERT_EQ(
      admin_
          ->Call(
              "POST", "/api/v1/namespaces/team/serviceaccounts",
              {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "bot"}}}})
          .status,
      201);
  EXPECT_EQ(bot.Call("GET", "/api").status, 401);
}

TEST_F(HttpAuth, TokensSurviveARestart) {
  ASSERT_NO_FATAL_FAILURE(Start(AuthorizationMode::kRbac));
  EXPECT_EQ(admin_->Call("GET", "/api/v1/namespaces").status, 200);
  ASSERT_OK(server_->Restart());
  EXPECT_EQ(admin_->Call("GET", "/api/v1/namespaces").status, 200);
}

TEST_F(HttpAuth, SelfSubjectAccessReviewAnswersForTheCaller) {
  ASSERT_NO_FATAL_FAILURE(Start(AuthorizationMode::kRbac));
  Caller bot(server_->url(), BotToken());
  ASSERT_NO_FATAL_FAILURE(
      Grant("RoleBinding", "team", "Role", "pods",
            {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"get"}}}}));
  auto review = [&](Caller& caller, const std::string& verb, const std::string& ns) {
    const ClientResponse r = caller.Call(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {{"apiVersion", "authorization.k8s.io/v1"},
         {"kind", "SelfSubjectAccessReview"},
         {"spec",
          {{"resourceAttributes", {{"verb", verb}, {"resource", "pods"}, {"namespace", ns}}}}}});
    EXPECT_EQ(r.status, 201) << r.body;
    return r.Json()["status"].value("allowed", false);
  };
  EXPECT_TRUE(review(bot, "get", "team"));
  EXPECT_FALSE(review(bot, "delete", "team"));
  EXPECT_FALSE(review(bot, "get", "default"));
  EXPECT_TRUE(review(*admin_, "delete", "default"));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
