// The test API server as one object: an ObjectStore served over HTTP on a loopback port, with the
// fault-injection knobs that fault tests use. Tests embed it; wavepool-test-apiserver
// (apiserver_main.cpp) runs the same thing standalone.
//
//   ASSERT_OK_AND_ASSIGN(auto server, TestApiServer::Start({}));
//   kube::ClientConfig config{.server = server->url()};
//
// Safe for concurrent use; the destructor stops serving and closes every connection.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_TEST_SERVER_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_TEST_SERVER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/apiserver/rbac.h"

namespace wavepool::testing::apiserver {

class TestApiServer {
 public:
  struct Options {
    std::string address = "127.0.0.1";
    int port = 0;  // 0: any free port (url() tells which)
    ObjectStore::Options store;
    // How long a watch without a timeoutSeconds stays open, and how often an idle watch that
    // asked for bookmarks gets one.
    std::chrono::seconds default_watch_timeout{1800};
    std::chrono::milliseconds bookmark_interval{1000};
    // kAlwaysAllow: every request, with or without a token, as before authentication existed
    // here (a token that was never issued still gets 401). kRbac: only requests with a token
    // (401 otherwise), allowed by the stored RBAC objects (403 otherwise); AdminToken() may do
    // everything.
    AuthorizationMode authorization_mode = AuthorizationMode::kAlwaysAllow;
    // Serve HTTPS (tls_front.h) on `port` instead of plain HTTP: kubectl, helm and other
    // client-go programs send a kubeconfig's token only to an https:// server. The certificate is
    // made at start; Kubeconfig() carries it as the cluster's CA.
    bool tls = false;
  };

  static absl::StatusOr<std::unique_ptr<TestApiServer>> Start(const Options& options);
  virtual ~TestApiServer() = default;

  // "http://127.0.0.1:<port>", or "https://127.0.0.1:<port>" with options.tls.
  virtual std::string url() const = 0;
  // The plain HTTP address behind the TLS port with options.tls (the same as url() without it):
  // for clients that speak only plain HTTP; tokens are checked there all the same.
  virtual std::string http_url() const = 0;

  virtual ObjectStore& store() = 0;

  // Cuts every open watch connection mid-stream (the client sees a broken connection).
  virtual void DropWatches() = 0;
  // Forgets the watch history: watches and continue tokens from before now get 410 Expired.
  virtual void Compact() = 0;
  // Stops serving, closes every connection, reopens the store (from options.store.data_dir when
  // set, so objects and the resourceVersion counter survive; empty otherwise) and serves again on
  // the same port.
  virtual absl::Status Restart() = 0;

  // A kubeconfig whose current context points at url() (namespace "default"; with options.tls,
  // the certificate as certificate-authority-data), with AdminToken() as its user's token under
  // kRbac (no credentials under kAlwaysAllow).
  virtual std::string Kubeconfig() const = 0;
  // The same with `token` as its user's token (a ServiceAccount's, from the TokenRequest API).
  virtual std::string KubeconfigWithToken(const std::string& token) const = 0;

  // The bearer token of user "wavepool-test-admin" in group system:masters; valid for the
  // server's life, restarts included.
  virtual std::string AdminToken() const = 0;

  // Every request answered 401 or 403 so far, oldest first: the Forbidden message, or why a token
  // was refused ("unknown token: GET /api/v1/pods"). What a test checks to know that no client
  // was refused anything, whatever the clients log.
  virtual std::vector<std::string> Refusals() const = 0;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_TEST_SERVER_H_
