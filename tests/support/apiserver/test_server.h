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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/support/apiserver/object_store.h"

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
  };

  static absl::StatusOr<std::unique_ptr<TestApiServer>> Start(const Options& options);
  virtual ~TestApiServer() = default;

  // "http://127.0.0.1:<port>".
  virtual std::string url() const = 0;

  virtual ObjectStore& store() = 0;

  // Cuts every open watch connection mid-stream (the client sees a broken connection).
  virtual void DropWatches() = 0;
  // Forgets the watch history: watches and continue tokens from before now get 410 Expired.
  virtual void Compact() = 0;
  // Stops serving, closes every connection, reopens the store (from options.store.data_dir when
  // set, so objects and the resourceVersion counter survive; empty otherwise) and serves again on
  // the same port.
  virtual absl::Status Restart() = 0;

  // A kubeconfig whose current context points at this server (namespace "default").
  virtual std::string Kubeconfig() const = 0;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_TEST_SERVER_H_
