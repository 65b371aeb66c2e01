// Kubeconfig parsing, kubectl's search order and the in-cluster configuration, with files in a
// temporary directory.
#include "wavepool/kube/kubeconfig.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::kube {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;
namespace fs = std::filesystem;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-kubeconfig"));
    dir_ = temp_dir_.path();
  }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    EXPECT_OK(WriteFile(path.string(), text));
    return path.string();
  }

  // No environment leaks into the search.
  DefaultConfigOptions Isolated() {
    DefaultConfigOptions options;
    options.kubeconfig_env = "";
    options.home = (dir_ / "home").string();
    options.in_cluster.service_host = "";
    options.in_cluster.service_port = "";
    return options;
  }

  TempDir temp_dir_;
  fs::path dir_;  // temp_dir_.path()
};

// "-----BEGIN CERTIFICATE-----\nCA\n" in base64.
constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nCA\n";
constexpr char kCaBase64[] = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==";

constexpr char kTwoContexts[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==
- name: prod-cluster
  cluster:
    server: https://prod.example:443
    certificate-authority: certs/ca.pem
    insecure-skip-tls-verify: false
users:
- name: dev-user
  user:
    token: dev-token
- name: prod-user
  user:
    tokenFile: secrets/token
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

TEST_F(KubeconfigTest, CurrentContextWithTokenAndBase64Ca) {
  const std::string path = Write("config", kTwoContexts);
  ASSERT_OK_AND_ASSIGN(ClientConfig config, LoadKubeconfig(path));
  EXPECT_EQ(config.server, "https://10.0.0.1:6443");  // trailing slash dropped
  EXPECT_EQ(config.certificate_authority_pem, kCaPem);
  EXPECT_EQ(config.bearer_token, "dev-token");
  EXPECT_EQ(config.default_namespace, "team-a");
  EXPECT_FALSE(config.insecure_skip_tls_verify);
  EXPECT_THAT(config.source, HasSubstr(path));
  EXPECT_THAT(config.source, HasSubstr("context dev"));
}

TEST_F(KubeconfigTest, NamedContextResolvesFilesRelativeToTheKubeconfig) {
  Write("kube/certs/ca.pem", "CA-FROM-FILE");
  Write("kube/certs/client.pem", "CERT-FROM-FILE");
  const std::string path = Write("kube/config", kTwoContexts);
  ASSERT_OK_AND_ASSIGN(ClientConfig config, LoadKubeconfig(path, "prod"));
  EXPECT_EQ(config.server, "https://prod.example:443");
  EXPECT_EQ(config.certificate_authority_pem, "CA-FROM-FILE");
  EXPECT_EQ(config.client_certificate_pem, "CERT-FROM-FILE");
  EXPECT_EQ(config.client_key_pem, "key\n");
  EXPECT_EQ(config.bearer_token_file, (dir_ / "kube/secrets/token").string());
  EXPECT_EQ(config.default_namespace, "default");
}

TEST_F(KubeconfigTest, UnknownContextNamesTheOnesThatExist) {
  const std::string path = Write("config", kTwoContexts);
  EXPECT_THAT(LoadKubeconfig(path, "staging"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("context \"staging\" not found (contexts: dev, prod)")));
}

TEST_F(KubeconfigTest, MissingFileIsNotFound) {
  EXPECT_THAT(LoadKubeconfig((dir_ / "nope").string()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
}

TEST_F(KubeconfigTest, BadFilesGetClearErrors) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"clusters: [unclosed", "not YAML"},
      {"- a\n- b\n", "must be a mapping"},
      {"kind: Pod\n", "kind: must be Config"},
      {"kind: [Config]\n", "kind: must be a string"},
      {"kind:\ncontexts:\n- name: c\n  context: {cluster: c}\n", "no current-context"},
      {"clusters: {}\n", "clusters: must be a list"},
      {"clusters:\n- cluster: {server: x}\n", "clusters[0].name: required"},
      {"contexts:\n- name: c\n  context: {cluster: c}\n", "no current-context"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: missing}\n",
       "cluster \"missing\" not defined"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {}\n"
       "contexts:\n- name: c\n  context: {cluster: k}\n",
       "clusters[k].cluster.server: required"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://a', "
       "certificate-authority-data: '%%%'}\ncontexts:\n- name: c\n  context: {cluster: k}\n",
       "certificate-authority-data: not base64"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://a', "
       "certificate-authority: missing.pem}\ncontexts:\n- name: c\n  context: {cluster: k}\n",
       "certificate-authority: "},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://a'}\n"
       "users:\n- name: u\n  user: {exec: {command: aws}}\n"
       "contexts:\n- name: c\n  context: {cluster: k, user: u}\n",
       "users[u].user.exec: not supported"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://a'}\n"
       "contexts:\n- name: c\n  context: {cluster: k, user: ghost}\n",
       "user \"ghost\" not defined"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://a', "
       "insecure-skip-tls-verify: 'yes'}\ncontexts:\n- name: c\n  context: {cluster: k}\n",
       "insecure-skip-tls-verify: must be true or false"},
      {"current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://a'}\n"
       "users:\n- name: u\n  user: {client-certificate-data: Y2VydA==}\n"
       "contexts:\n- name: c\n  context: {cluster: k, user: u}\n",
       "give both or neither"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<ClientConfig> config =
        ParseKubeconfig(c.text, "kubeconfig test", dir_.string());
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.expected)) << c.text;
  }
}

TEST_F(KubeconfigTest, ExplicitPathWinsOverTheEnvironment) {
  const std::string explicit_path = Write("explicit", kTwoContexts);
  DefaultConfigOptions options = Isolated();
  options.explicit_path = explicit_path;
  options.context = "prod";
  options.kubeconfig_env = Write("env", "this: is not used\n");
  Write("kube/certs/ca.pem", "CA");
  Write("certs/ca.pem", "CA");
  Write("certs/client.pem", "CERT");
  ASSERT_OK_AND_ASSIGN(ClientConfig config, LoadDefaultConfig(options));
  EXPECT_EQ(config.server, "https://prod.example:443");
}

TEST_F(KubeconfigTest, KubeconfigEnvMergesFilesFirstDefinitionWins) {
  // The first file sets current-context and defines cluster "k"; the second redefines "k"
  // (ignored) and adds the user and context.
  const std::string first = Write("a/first",
                                  "current-context: c\nclusters:\n- name: k\n"
                                  "  cluster: {server: 'https://first:6443'}\n");
  const std::string second =
      Write("b/second",
            "current-context: other\nclusters:\n- name: k\n  cluster: {server: 'https://second'}\n"
            "users:\n- name: u\n  user: {tokenFile: token}\n"
            "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: ns}\n");
  DefaultConfigOptions options = Isolated();
  options.kubeconfig_env = first + ":" + (dir_ / "missing").string() + ":" + second;
  ASSERT_OK_AND_ASSIGN(ClientConfig config, LoadDefaultConfig(options));
  EXPECT_EQ(config.server, "https://first:6443");
  EXPECT_EQ(config.default_namespace, "ns");
  // Relative to the file that named it.
  EXPECT_EQ(config.bearer_token_file, (dir_ / "b/token").string());
}

TEST_F(KubeconfigTest, HomeKubeConfigWhenNoEnvironment) {
  Write("home/.kube/config", kTwoContexts);
  ASSERT_OK_AND_ASSIGN(ClientConfig config, LoadDefaultConfig(Isolated()));
  EXPECT_EQ(config.bearer_token, "dev-token");
}

TEST_F(KubeconfigTest, NothingFoundNamesEveryPlace) {
  EXPECT_THAT(LoadDefaultConfig(Isolated()),
              StatusIs(absl::StatusCode::kNotFound,
                       ::testing::AllOf(HasSubstr(".kube/config"), HasSubstr("in-cluster"))));
}

class InClusterTest : public KubeconfigTest {
 protected:
  InClusterOptions Options(const std::string& host) {
    InClusterOptions options;
    options.service_account_dir = (dir_ / "sa").string();
    options.service_host = host;
    options.service_port = "443";
    return options;
  }
};

TEST_F(InClusterTest, ReadsTokenCaAndNamespace) {
  Write("sa/token", "jwt");
  Write("sa/ca.crt", "CLUSTER-CA");
  Write("sa/namespace", "wavepool-system\n");
  ASSERT_OK_AND_ASSIGN(ClientConfig config, InClusterConfig(Options("10.96.0.1")));
  EXPECT_EQ(config.server, "https://10.96.0.1:443");
  EXPECT_EQ(config.certificate_authority_pem, "CLUSTER-CA");
  EXPECT_EQ(config.bearer_token_file, (dir_ / "sa/token").string());
  EXPECT_EQ(config.default_namespace, "wavepool-system");
  EXPECT_EQ(config.source, "in-cluster");
}

TEST_F(InClusterTest, BracketsAnIpv6HostAndDefaultsTheNamespace) {
  Write("sa/token", "jwt");
  Write("sa/ca.crt", "CLUSTER-CA");
  ASSERT_OK_AND_ASSIGN(ClientConfig config, InClusterConfig(Options("fd00:10:96::1")));
  EXPECT_EQ(config.server, "https://[fd00:10:96::1]:443");
  EXPECT_EQ(config.default_namespace, "default");
}

TEST_F(InClusterTest, OutsideAClusterIsFailedPrecondition) {
  EXPECT_THAT(InClusterConfig(Options("")), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                     HasSubstr("KUBERNETES_SERVICE_HOST")));
  EXPECT_THAT(InClusterConfig(Options("10.96.0.1")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("sa/token")));
  Write("sa/token", "jwt");
  EXPECT_THAT(InClusterConfig(Options("10.96.0.1")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("ca.crt")));
}

TEST_F(InClusterTest, DefaultConfigFallsBackToInCluster) {
  Write("sa/token", "jwt");
  Write("sa/ca.crt", "CLUSTER-CA");
  DefaultConfigOptions options = Isolated();
  options.in_cluster = Options("10.96.0.1");
  ASSERT_OK_AND_ASSIGN(ClientConfig config, LoadDefaultConfig(options));
  EXPECT_EQ(config.source, "in-cluster");
}

}  // namespace
}  // namespace wavepool::kube
