// The embedded test API server as every simulated-cluster test starts it.
//
// Thread-compatible free function.
#ifndef WAVEPOOL_TESTS_SUPPORT_CLUSTER_CLUSTER_SERVER_H_
#define WAVEPOOL_TESTS_SUPPORT_CLUSTER_CLUSTER_SERVER_H_

#include "tests/support/apiserver/test_server.h"

namespace wavepool::testing {

// The test API server's options for a simulated cluster: only the simulated kubelet confirms a
// graceful pod deletion, as on a real cluster, so that the store does not finish it by itself.
inline apiserver::TestApiServer::Options ClusterServerOptions() {
  apiserver::TestApiServer::Options options;
  options.store.finish_pod_deletion_after_grace = false;
  return options;
}

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CLUSTER_CLUSTER_SERVER_H_
