// HTTPS through the cpprest transport: the cluster's CA, client certificates and
// insecure-skip-tls-verify, against a loopback TLS server with certificates made by the openssl
// command (the tests skip when it is missing).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/raw_http_server.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/kube/http_transport.h"

namespace wavepool::kube {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::wavepool::kube::testing::RawConnection;
using ::wavepool::kube::testing::RawHttpServer;
using ::wavepool::kube::testing::RawRequest;
using ::wavepool::kube::testing::RawTlsOptions;
using ::wavepool::testing::ReadFileOrEmpty;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;
namespace fs = std::filesystem;

// A CA, a server certificate for 127.0.0.1 and a client certificate signed by it, and a second,
// unrelated CA.
class HttpsTransportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_OK_AND_ASSIGN(TempDir made, TempDir::Create("wavepool-tls"));
    temp_dir_ = new TempDir(std::move(made));
    dir_ = new fs::path(temp_dir_->path());
    const std::string d = dir_->string();
    ASSERT_OK(WriteFile((*dir_ / "san.ext").string(), "subjectAltName=IP:127.0.0.1\n"));
    const std::string quiet = " >/dev/null 2>&1";
    const std::string script =
        "cd " + d + " && " +
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -subj /CN=test-ca "
        "-days 1" +
        quiet + " && " +
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem "
        "-subj /CN=other-ca -days 1" +
        quiet + " && " +
        "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
        "-subj /CN=127.0.0.1" +
        quiet + " && " +
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out server.pem -days 1 -extfile san.ext" +
        quiet + " && " +
        "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
        "-subj /CN=wavepool-client" +
        quiet + " && " +
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out client.pem -days 1" +
        quiet;
    made_ = std::system(script.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete temp_dir_;  // removes the directory
  }
  void SetUp() override {
    if (!made_) GTEST_SKIP() << "the openssl command could not make test certificates";
  }

  static RawTlsOptions ServerTls(bool require_client_certificate) {
    RawTlsOptions tls;
    tls.certificate_file = (*dir_ / "server.pem").string();
    tls.key_file = (*dir_ / "server.key").string();
    if (require_client_certificate) tls.client_ca_file = (*dir_ / "ca.pem").string();
    return tls;
  }
  static std::string Pem(const char* name) { return ReadFileOrEmpty((*dir_ / name).string()); }

  static void Ok(const RawRequest&, RawConnection& connection) { connection.Answer(200, "{}"); }

  static inline TempDir* temp_dir_ = nullptr;
  static inline fs::path* dir_ = nullptr;  // temp_dir_->path()
  static inline bool made_ = false;
};

TEST_F(HttpsTransportTest, TrustsTheClusterCaAndPresentsTheClientCertificate) {
  const RawTlsOptions tls = ServerTls(/*require_client_certificate=*/true);
  RawHttpServer server(Ok, &tls);
  ClientConfig config;
  config.server = server.url();
  config.certificate_authority_pem = Pem("ca.pem");
  config.client_certificate_pem = Pem("client.pem");
  config.client_key_pem = Pem("client.key");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Transport> transport, NewHttpTransport(config));
  ASSERT_OK_AND_ASSIGN(HttpResponse response, transport->Send(HttpRequest{}));
  EXPECT_EQ(response.status, 200);
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].client_common_name, "wavepool-client");
}

TEST_F(HttpsTransportTest, AServerSignedByAnotherCaIsUnavailable) {
  const RawTlsOptions tls = ServerTls(/*require_client_certificate=*/false);
  RawHttpServer server(Ok, &tls);
  ClientConfig config;
  config.server = server.url();
  config.certificate_authority_pem = Pem("other.pem");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Transport> transport, NewHttpTransport(config));
  EXPECT_THAT(transport->Send(HttpRequest{}),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::An<std::string>()));
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpsTransportTest, WithoutAClientCertificateTheServerRefuses) {
  const RawTlsOptions tls = ServerTls(/*require_client_certificate=*/true);
  RawHttpServer server(Ok, &tls);
  ClientConfig config;
  config.server = server.url();
  config.certificate_authority_pem = Pem("ca.pem");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Transport> transport, NewHttpTransport(config));
  EXPECT_THAT(transport->Send(HttpRequest{}),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::An<std::string>()));
}

TEST_F(HttpsTransportTest, InsecureSkipTlsVerifyAcceptsAnyServer) {
  const RawTlsOptions tls = ServerTls(/*require_client_certificate=*/false);
  RawHttpServer server(Ok, &tls);
  ClientConfig config;
  config.server = server.url();
  config.insecure_skip_tls_verify = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Transport> transport, NewHttpTransport(config));
  ASSERT_OK_AND_ASSIGN(HttpResponse response, transport->Send(HttpRequest{}));
  EXPECT_EQ(response.status, 200);
}

TEST_F(HttpsTransportTest, InsecureSkipTlsVerifyIsWarnedOfOncePerClient) {
  const RawTlsOptions tls = ServerTls(/*require_client_certificate=*/false);
  RawHttpServer server(Ok, &tls);
  std::vector<std::string> warnings;
  ClientConfig config;
  config.server = server.url();
  config.source = "kubeconfig /tmp/insecure";
  config.bearer_token = "t0k3n";
  config.insecure_skip_tls_verify = true;
  config.log = [&warnings](std::string_view line) { warnings.emplace_back(line); };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Transport> transport, NewHttpTransport(config));
  ASSERT_OK(transport->Send(HttpRequest{}));
  ASSERT_OK(transport->Send(HttpRequest{}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], AllOf(HasSubstr("insecure-skip-tls-verify"), HasSubstr(server.url()),
                                 HasSubstr("kubeconfig /tmp/insecure")));
  EXPECT_THAT(warnings[0], Not(HasSubstr("t0k3n")));
  // A second client warns again; a verifying one does not.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Transport> another, NewHttpTransport(config));
  ASSERT_OK(another->Send(HttpRequest{}));
  EXPECT_EQ(warnings.size(), 2u);
  config.insecure_skip_tls_verify = false;
  config.certificate_authority_pem = Pem("ca.pem");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Transport> verifying, NewHttpTransport(config));
  ASSERT_OK(verifying->Send(HttpRequest{}));
  EXPECT_EQ(warnings.size(), 2u);
}

}  // namespace
}  // namespace wavepool::kube
