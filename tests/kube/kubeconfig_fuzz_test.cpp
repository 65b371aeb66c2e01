// Runs the kubeconfig fuzz check (kubeconfig_fuzz_target.h) in the normal test run, for a bounded
// budget (2 s or 100,000 inputs), on inputs mutated from a fixed seed: kubeconfigs with tokens,
// token files, certificates and several contexts, and the hostile YAML every reader must refuse
// (a recursive alias, an alias bomb). The budget bounds the run; nothing is timed.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/kube/kubeconfig_fuzz_target.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_fuzz.h"

namespace wavepool::kube::testing {
namespace {

using ::wavepool::testing::RunTextFuzz;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::TextFuzzReport;
using ::wavepool::testing::WriteFile;

constexpr char kKubeconfig[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==
- name: prod-cluster
  cluster:
    server: http://prod.example:8080
    certificate-authority: certs/ca.pem
    insecure-skip-tls-verify: true
users:
- name: dev-user
  user:
    token: dev-token
- name: prod-user
  user:
    tokenFile: token
    client-certificate: certs/client.pem
    client-key-data: a2V5Cg==
contexts:
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
    namespace: team-a
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
)";

// A directory with the files the seeds name, removed with the fixture.
class KubeconfigFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-kubeconfig-fuzz"));
    dir_ = temp_dir_.path();
    std::filesystem::create_directories(dir_ / "certs");
    ASSERT_OK(WriteFile((dir_ / "token").string(), "file-token\n"));
    ASSERT_OK(WriteFile((dir_ / "certs" / "ca.pem").string(), "-----BEGIN CERTIFICATE-----\nCA\n"));
  }

  TempDir temp_dir_;
  std::filesystem::path dir_;  // temp_dir_.path()
};

std::vector<std::string> Seeds() {
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 6; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    bomb += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) bomb += (i > 0 ? ", " : "") + prev;
    bomb += "]\n";
  }
  return {kKubeconfig,
          R"({"apiVersion":"v1","kind":"Config","current-context":"c","clusters":[{"name":"k",)"
          R"("cluster":{"server":"http://127.0.0.1:8080"}}],"users":[{"name":"u","user":{}}],)"
          R"("contexts":[{"name":"c","context":{"cluster":"k","user":"u"}}]})",
          "clusters: &a\n- name: a\n  cluster: {server: *a}\n",
          "users: &u [*u]\ncurrent-context: dev\n", bomb};
}

const std::vector<std::string> kDictionary = {"&a ",
                                              "*a",
                                              "[",
                                              "]",
                                              "{",
                                              "}",
                                              ": ",
                                              "- ",
                                              "\n  ",
                                              "---\n",
                                              "!!binary ",
                                              "'",
                                              "\"",
                                              "server: ",
                                              "token: ",
                                              "tokenFile: ",
                                              "certificate-authority: ",
                                              "client-key-data: ",
                                              "insecure-skip-tls-verify: ",
                                              "exec: {}",
                                              "auth-provider: {}",
                                              "username: ",
                                              "namespace: ",
                                              "current-context: ",
                                              "context: ",
                                              "cluster: ",
                                              "user: ",
                                              "==",
                                              "%%",
                                              "true",
                                              "null",
                                              "~"};

TEST_F(KubeconfigFuzz, EverySeedIsHandled) {
  for (const std::string& seed : Seeds()) {
    bool accepted = false;
    EXPECT_EQ(CheckKubeconfigInput(seed, dir_.string(), &accepted), "") << seed;
  }
  bool accepted = false;
  EXPECT_EQ(CheckKubeconfigInput(kKubeconfig, dir_.string(), &accepted), "");
  EXPECT_TRUE(accepted);
}

TEST_F(KubeconfigFuzz, MutatedKubeconfigsNeverCrash) {
  const TextFuzzReport report =
      RunTextFuzz(Seeds(), kDictionary, [this](std::string_view input, bool* accepted) {
        return CheckKubeconfigInput(input, dir_.string(), accepted);
      });
  ASSERT_EQ(report.failure, "") << "input: " << absl::CHexEscape(report.failing_input);
  // The mutations keep some inputs valid and break others: both paths ran.
  EXPECT_GT(report.passed, 0u);
  EXPECT_LT(report.passed, report.inputs);
  RecordProperty("inputs", static_cast<int>(report.inputs));
}

}  // namespace
}  // namespace wavepool::kube::testing
