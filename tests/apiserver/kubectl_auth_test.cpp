// The real kubectl against the test API server in RBAC mode: `kubectl create token` through the
// TokenRequest API, the ServiceAccount's token in a kubeconfig of its own, kube-apiserver's
// Forbidden wording as kubectl prints it, and `kubectl auth can-i` (SelfSubjectAccessReview).
// The server serves HTTPS: kubectl sends a kubeconfig's token to https:// servers only.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/kubectl.h"
#include "tests/support/spawn.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr char kPodRole[] = R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: team}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pod-reader, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {kind: ServiceAccount, name: bot, namespace: team}
)";

class KubectlAuthTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (::access(GetParam().c_str(), X_OK) != 0) GTEST_SKIP() << "no kubectl at " << GetParam();
    TestApiServer::Options options;
    options.authorization_mode = AuthorizationMode::kRbac;
    options.tls = true;  // kubectl sends credentials to https:// servers only
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start(options));
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-kubectl-auth"));
    dir_ = temp_dir_.path();
    ASSERT_OK(WriteFile(dir_ + "/kubeconfig", server_->Kubeconfig()));
  }

  // As the admin (the server's kubeconfig), or as `kubeconfig`'s user.
  KubectlResult Kubectl(std::vector<std::string> args, const std::string& kubeconfig = "",
                        const std::string& input = "") {
    if (!kubeconfig.empty()) args.insert(args.begin(), "--kubeconfig=" + kubeconfig);
    return KubectlRunner(GetParam(), dir_).Run(args, input);
  }

  std::unique_ptr<TestApiServer> server_;
  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
};

TEST_P(KubectlAuthTest, ServiceAccountTokenIsLimitedToItsRole) {
  ASSERT_EQ(Kubectl({"create", "namespace", "team"}).exit_code, 0);
  ASSERT_EQ(Kubectl({"create", "serviceaccount", "bot", "-n", "team"}).exit_code, 0);
  const KubectlResult token = Kubectl({"create", "token", "bot", "-n", "team", "--duration=20m"});
  ASSERT_EQ(token.exit_code, 0) << token;
  ASSERT_THAT(token.out, MatchesRegex("[A-Za-z0-9_-]{40,}"));  // no newline when not a terminal
  const std::string bot = dir_ + "/bot-kubeconfig";
  ASSERT_OK(WriteFile(bot, server_->KubeconfigWithToken(token.out)));

  const KubectlResult denied = Kubectl({"get", "pods", "-n", "team"}, bot);
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_THAT(denied.err,
              HasSubstr("Error from server (Forbidden): pods is forbidden: User "
                        "\"system:serviceaccount:team:bot\" cannot list resource \"pods\" in API "
                        "group \"\" in the namespace \"team\""));
  const KubectlResult cannot = Kubectl({"auth", "can-i", "list", "pods", "-n", "team"}, bot);
  EXPECT_EQ(cannot.exit_code, 1) << cannot;
  EXPECT_EQ(cannot.out, "no\n");

  const KubectlResult role = Kubectl({"apply", "-f", "-"}, "", kPodRole);
  ASSERT_EQ(role.exit_code, 0) << role;
  const KubectlResult listed = Kubectl({"get", "pods", "-n", "team"}, bot);
  EXPECT_EQ(listed.exit_code, 0) << listed;
  EXPECT_THAT(listed.err, HasSubstr("No resources found in team namespace."));
  const KubectlResult can = Kubectl({"auth", "can-i", "list", "pods", "-n", "team"}, bot);
  EXPECT_EQ(can.exit_code, 0) << can;
  EXPECT_EQ(can.out, "yes\n");
  EXPECT_EQ(Kubectl({"auth", "can-i", "delete", "pods", "-n", "team"}, bot).out, "no\n");
  EXPECT_EQ(Kubectl({"auth", "can-i", "list", "pods", "-n", "default"}, bot).out, "no\n");
  EXPECT_EQ(Kubectl({"auth", "can-i", "list", "pods", "-n", "default"}).out, "yes\n");

  // The ServiceAccount gone, its token no longer authenticates.
  ASSERT_EQ(Kubectl({"delete", "serviceaccount", "bot", "-n", "team"}).exit_code, 0);
  const KubectlResult gone = Kubectl({"get", "pods", "-n", "team"}, bot);
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("You must be logged in to the server"));
}

// A token the server never issued (kubectl would prompt for a password without any).
TEST_P(KubectlAuthTest, UnknownTokenIsUnauthorized) {
  const std::string stranger = dir_ + "/stranger-kubeconfig";
  ASSERT_OK(WriteFile(stranger, server_->KubeconfigWithToken("never-issued")));
  const KubectlResult r = Kubectl({"get", "namespaces"}, stranger);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("You must be logged in to the server"));
}

// The binary: --tls --authorization-mode=RBAC writes an https kubeconfig with the admin token
// (and the token alone with --admin-token-out); a mode it does not know is a flag error (exit 2).
TEST_P(KubectlAuthTest, BinaryServesRbacOverTlsWithTheAdminKubeconfig) {
  SpawnOptions options;  // an empty environment
  options.inherit_environment = false;
  const ProcessResult bad =
      RunProcess({WAVEPOOL_TEST_APISERVER, "--authorization-mode=Webhook"}, options);
  EXPECT_EQ(bad.exit_status, 2) << bad;
  EXPECT_THAT(bad.err, HasSubstr("--authorization-mode"));

  const std::string kubeconfig = dir_ + "/binary-kubeconfig", token = dir_ + "/admin-token";
  options.out = ChildStream::File("/dev/null");
  options.err = ChildStream::File(dir_ + "/server.err");
  ASSERT_OK_AND_ASSIGN(
      const pid_t server,
      Spawn({WAVEPOOL_TEST_APISERVER, "--port=0", "--tls", "--authorization-mode=RBAC",
             "--kubeconfig-out=" + kubeconfig, "--admin-token-out=" + token},
            options));
  const bool written = Eventually([&] { return !ReadFileOrEmpty(token).empty(); });
  std::string text = ReadFileOrEmpty(kubeconfig);
  const KubectlResult ns = Kubectl({"get", "namespaces", "-o", "name"}, kubeconfig);
  // SIGTERM; SIGKILL (not an exit) if it is still running after two minutes.
  const std::optional<int> status = StopChild(server, std::chrono::seconds(120));
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(written);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << ReadFileOrEmpty(dir_ + "/server.err");
  EXPECT_THAT(text, HasSubstr("server: https://127.0.0.1:"));
  EXPECT_THAT(text, HasSubstr("certificate-authority-data: "));
  EXPECT_THAT(text, HasSubstr("token: " + ReadFileOrEmpty(token).substr(0, 20)));
  EXPECT_EQ(ns.exit_code, 0) << ns;
  EXPECT_THAT(ns.out, HasSubstr("namespace/kube-system"));
}

INSTANTIATE_TEST_SUITE_P(Kubectl, KubectlAuthTest,
                         ::testing::Values("/usr/bin/kubectl",
                                           std::string(WAVEPOOL_TOOLS_BIN) + "/kubectl"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.index == 0 ? std::string("System") : std::string("Tools");
                         });

}  // namespace
}  // namespace wavepool::testing::apiserver
