// TestApiServer: an ObjectStore, the ApiHandler over it and the HTTP server, rebuilt together on
// Restart() so that no connection outlives the store it was served from.
#include "tests/support/apiserver/test_server.h"

#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tests/support/apiserver/api_handler.h"
#include "tests/support/apiserver/http_server.h"
#include "tests/support/apiserver/tls_front.h"
#include "tests/support/apiserver/tokens.h"

namespace wavepool::testing::apiserver {
namespace {

class TestApiServerImpl final : public TestApiServer {
 public:
  explicit TestApiServerImpl(Options options) : options_(std::move(options)) {}

  ~TestApiServerImpl() override {
    tls_.reset();  // its connections first: they relay to the HTTP server
    std::vector<std::thread> restarts;
    {
      absl::MutexLock lock(&restart_mu_);
      closing_ = true;
      restarts.swap(restart_threads_);
    }
    for (std::thread& thread : restarts) thread.join();
    absl::MutexLock lock(&mu_);
    StopServingLocked();
  }

  absl::Status Begin(int port) {
    absl::MutexLock lock(&mu_);
    if (!options_.tls) return StartLocked(port);
    // The plain server on any free port, the TLS port in front of it.
    if (absl::Status status = StartLocked(0); !status.ok()) return status;
    absl::StatusOr<std::unique_ptr<TlsFront>> tls = TlsFront::Start(options_.address, port, port_);
    if (!tls.ok()) return tls.status();
    tls_ = *std::move(tls);
    return absl::OkStatus();
  }

  // Opens the store and serves it on `port`.
  absl::Status StartLocked(int port) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StatusOr<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(options_.store);
    if (!store.ok()) return store.status();
    store_ = *std::move(store);
    ApiHandler::Control control;
    // The hooks run on connection threads, which a Restart() holding mu_ joins: they reach the
    // store without mu_ (the handler, and so the store, outlive every connection thread).
    control.drop_watches = [store = store_.get()] { store->DropWatches(); };
    control.compact = [store = store_.get()] { store->Compact(); };
    control.restart = [this] { RestartInBackground(); };
    ApiHandler::Options handler_options;
    handler_options.default_watch_timeout = options_.default_watch_timeout;
    handler_options.bookmark_interval = options_.bookmark_interval;
    handler_options.authorization_mode = options_.authorization_mode;
    handler_options.tokens = &tokens_;
    handler_options.on_refused = [this](const std::string& what) {
      absl::MutexLock lock(&refusals_mu_);
      refusals_.push_back(what);
    };
    handler_ = std::make_unique<ApiHandler>(*store_, handler_options, std::move(control));
    absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
        options_.address, port,
        [handler = handler_.get()](const HttpRequest& request, HttpResponder& responder) {
          handler->Handle(request, responder);
        });
    if (!http.ok()) return http.status();
    http_ = *std::move(http);
    port_ = http_->port();
    return absl::OkStatus();
  }

  std::string url() const override {
    if (tls_ != nullptr) return absl::StrCat("https://", options_.address, ":", tls_->port());
    return http_url();
  }

  std::string http_url() const override {
    absl::MutexLock lock(&mu_);
    return absl::StrCat("http://", options_.address, ":", port_);
  }

  ObjectStore& store() override {
    absl::MutexLock lock(&mu_);
    return *store_;
  }

  void DropWatches() override {
    absl::MutexLock lock(&mu_);
    if (store_ != nullptr) store_->DropWatches();
  }

  void Compact() override {
    absl::MutexLock lock(&mu_);
    if (store_ != nullptr) store_->Compact();
  }

  absl::Status Restart() override {
    absl::MutexLock lock(&mu_);
    StopServingLocked();
    return StartLocked(port_);
  }

  std::string Kubeconfig() const override {
    return KubeconfigWithToken(
        options_.authorization_mode == AuthorizationMode::kRbac ? tokens_.admin_token() : "");
  }

  std::string AdminToken() const override { return tokens_.admin_token(); }

  std::vector<std::string> Refusals() const override {
    absl::MutexLock lock(&refusals_mu_);
    return refusals_;
  }

  std::string KubeconfigWithToken(const std::string& token) const override {
    const std::string server = url();
    const std::string ca = tls_ == nullptr ? std::string()
                                           : absl::StrCat("    certificate-authority-data: ",
                                                          absl::Base64Escape(tls_->ca_pem()), "\n");
    const std::string user =
        token.empty() ? "  user: {}\n" : absl::StrCat("  user:\n    token: ", token, "\n");
    return absl::StrCat(
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: wavepool-test\n"
        "  cluster:\n"
        "    server: ",
        server, "\n", ca,
        "contexts:\n"
        "- name: wavepool-test\n"
        "  context:\n"
        "    cluster: wavepool-test\n"
        "    user: wavepool-test\n"
        "    namespace: default\n"
        "current-context: wavepool-test\n"
        "preferences: {}\n"
        "users:\n"
        "- name: wavepool-test\n",
        user);
  }

 private:
  // The server first, so that no handler still uses the store when it goes.
  void StopServingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (http_ != nullptr) http_->Stop();
    http_.reset();
    handler_.reset();
    store_.reset();
  }

  // POST /wavepool-test/restart runs on a connection thread, which the restart's stop joins:
  // the restart runs on a thread of its own.
  void RestartInBackground() {
    absl::MutexLock lock(&restart_mu_);
    if (closing_) return;
    restart_threads_.emplace_back([this] { (void)Restart(); });
  }

  const Options options_;
  // Outlives every handler: tokens stay valid across Restart().
  TokenRegistry tokens_;
  // With options.tls, set once by Begin(); relays to port_, which Restart() keeps.
  std::unique_ptr<TlsFront> tls_;
  mutable absl::Mutex refusals_mu_;
  std::vector<std::string> refusals_ ABSL_GUARDED_BY(refusals_mu_);
  mutable absl::Mutex mu_;
  std::unique_ptr<ObjectStore> store_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ApiHandler> handler_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HttpServer> http_ ABSL_GUARDED_BY(mu_);
  int port_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex restart_mu_;
  bool closing_ ABSL_GUARDED_BY(restart_mu_) = false;
  std::vector<std::thread> restart_threads_ ABSL_GUARDED_BY(restart_mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<TestApiServer>> TestApiServer::Start(const Options& options) {
  auto server = std::make_unique<TestApiServerImpl>(options);
  if (absl::Status status = server->Begin(options.port); !status.ok()) return status;
  return server;
}

}  // namespace wavepool::testing::apiserver
