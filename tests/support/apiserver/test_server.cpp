// TestApiServer: an ObjectStore, the ApiHandler over it and the HTTP server, rebuilt together on
// Restart() so that no connection outlives the store it was served from.
#include "tests/support/apiserver/test_server.h"

#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/api_handler.h"
#include "tests/support/apiserver/http_server.h"

namespace wavepool::testing::apiserver {
namespace {

class TestApiServerImpl final : public TestApiServer {
 public:
  explicit TestApiServerImpl(Options options) : options_(std::move(options)) {}

  ~TestApiServerImpl() override {
    std::vector<std::thread> restarts;
    {
      std::lock_guard<std::mutex> lock(restart_mu_);
      closing_ = true;
      restarts.swap(restart_threads_);
    }
    for (std::thread& thread : restarts) thread.join();
    std::lock_guard<std::mutex> lock(mu_);
    StopServingLocked();
  }

  absl::Status Begin(int port) {
    std::lock_guard<std::mutex> lock(mu_);
    return StartLocked(port);
  }

  // Opens the store and serves it on `port`.
  absl::Status StartLocked(int port) {
    absl::StatusOr<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(options_.store);
    if (!store.ok()) return store.status();
    store_ = *std::move(store);
    ApiHandler::Control control;
    // The hooks run on connection threads, which a Restart() holding mu_ joins: they reach the
    // store without mu_ (the handler, and so the store, outlive every connection thread).
    control.drop_watches = [store = store_.get()] { store->DropWatches(); };
    control.compact = [store = store_.get()] { store->Compact(); };
    control.restart = [this] { RestartInBackground(); };
    handler_ = std::make_unique<ApiHandler>(
        *store_, ApiHandler::Options{options_.default_watch_timeout, options_.bookmark_interval},
        std::move(control));
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
    std::lock_guard<std::mutex> lock(mu_);
    return absl::StrCat("http://", options_.address, ":", port_);
  }

  ObjectStore& store() override {
    std::lock_guard<std::mutex> lock(mu_);
    return *store_;
  }

  void DropWatches() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (store_ != nullptr) store_->DropWatches();
  }

  void Compact() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (store_ != nullptr) store_->Compact();
  }

  absl::Status Restart() override {
    std::lock_guard<std::mutex> lock(mu_);
    StopServingLocked();
    return StartLocked(port_);
  }

  std::string Kubeconfig() const override {
    const std::string server = url();
    return absl::StrCat(
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: wavepool-test\n"
        "  cluster:\n"
        "    server: ",
        server,
        "\n"
        "contexts:\n"
        "- name: wavepool-test\n"
        "  context:\n"
        "    cluster: wavepool-test\n"
        "    user: wavepool-test\n"
        "    namespace: default\n"
        "current-context: wavepool-test\n"
        "preferences: {}\n"
        "users:\n"
        "- name: wavepool-test\n"
        "  user: {}\n");
  }

 private:
  // The server first, so that no handler still uses the store when it goes.
  void StopServingLocked() {
    if (http_ != nullptr) http_->Stop();
    http_.reset();
    handler_.reset();
    store_.reset();
  }

  // POST /wavepool-test/restart runs on a connection thread, which the restart's stop joins:
  // the restart runs on a thread of its own.
  void RestartInBackground() {
    std::lock_guard<std::mutex> lock(restart_mu_);
    if (closing_) return;
    restart_threads_.emplace_back([this] { (void)Restart(); });
  }

  const Options options_;
  mutable std::mutex mu_;
  std::unique_ptr<ObjectStore> store_;   // guarded by mu_
  std::unique_ptr<ApiHandler> handler_;  // guarded by mu_
  std::unique_ptr<HttpServer> http_;     // guarded by mu_
  int port_ = 0;                         // guarded by mu_

  std::mutex restart_mu_;
  bool closing_ = false;                      // guarded by restart_mu_
  std::vector<std::thread> restart_threads_;  // guarded by restart_mu_
};

}  // namespace

absl::StatusOr<std::unique_ptr<TestApiServer>> TestApiServer::Start(const Options& options) {
  auto server = std::make_unique<TestApiServerImpl>(options);
  if (absl::Status status = server->Begin(options.port); !status.ok()) return status;
  return server;
}

}  // namespace wavepool::testing::apiserver
