// The fixture of the simulated cluster's own tests (the kubelet, the agents, the CRDs): an
// embedded test API server, a client, a simulated clock, and waits that poll real time generously
// (never timing assertions). Tests start the kubelets and agents they examine themselves; the
// controller's tests use TestCluster (test_cluster.h), which starts everything.
//
// Thread-compatible, as a GoogleTest fixture.
#ifndef WAVEPOOL_TESTS_SUPPORT_CLUSTER_CLUSTER_TEST_H_
#define WAVEPOOL_TESTS_SUPPORT_CLUSTER_CLUSTER_TEST_H_

#include <chrono>
#include <functional>
#include <memory>

#include "gtest/gtest.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/cluster/cluster_server.h"
#include "tests/support/eventually.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/kube/client.h"

namespace wavepool::testing {

// Advances `clock` by `step` between checks until `done()` holds (or Eventually's timeout of real
// time passes).
inline bool AdvanceUntil(SimulatedClock& clock, std::chrono::nanoseconds step,
                         const std::function<bool()>& done) {
  return Eventually([&] {
    if (done()) return true;
    clock.Advance(step);
    return false;
  });
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, apiserver::TestApiServer::Start(ClusterServerOptions()));
    kube::ClientConfig config;
    config.server = server_->url();
    ASSERT_OK_AND_ASSIGN(client_, kube::Client::Connect(config));
  }

  // 2026-05-01T10:00:00Z: timestamps the simulated cluster writes start here.
  static std::chrono::system_clock::time_point WallStart() {
    return *api::ParseRfc3339("2026-05-01T10:00:00Z");
  }

  std::unique_ptr<apiserver::TestApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  SimulatedClock clock_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CLUSTER_CLUSTER_TEST_H_
