// The scene of the tests that run against the embedded test API server (KubeCluster,
// ControllerManager, the wavepool-controller binary): the server with wavepool's CRDs and a
// client, simulated nodes (kubelet and GPU node agents), a manager started on it, and a
// TrainingJob manifest.
#ifndef WAVEPOOL_TESTS_CONTROLLER_API_SERVER_SCENE_H_
#define WAVEPOOL_TESTS_CONTROLLER_API_SERVER_SCENE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/cluster/simulated_kubelet.h"
#include "tests/support/cluster/simulated_node_agent.h"
#include "wavepool/controller/manager.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/config.h"

namespace wavepool::controller {

// The test API server with the TrainingJob and GPUNode CRDs registered, and a client of it.
// Members are destroyed client first, then the server.
struct ApiServerScene {
  std::unique_ptr<::wavepool::testing::apiserver::TestApiServer> server;
  std::unique_ptr<kube::Client> client;
};

// Starts the server with `options` and connects a client configured as `config` (its server
// field is the started server's URL). The server's, connection's or CRD registration's error.
absl::StatusOr<ApiServerScene> StartApiServerScene(
    const ::wavepool::testing::apiserver::TestApiServer::Options& options = {},
    kube::ClientConfig config = {});

// A kubelet running the pods bound to `nodes` and their GPU node agents, `gpus` H100s each.
// Members are destroyed agents first, then the kubelet; `client` outlives both.
struct SimulatedNodes {
  std::unique_ptr<::wavepool::testing::SimulatedKubelet> kubelet;
  std::unique_ptr<::wavepool::testing::SimulatedNodeAgents> agents;
};

// Starts the kubelet (default options) and the agents (with `agent_options`) for `nodes`;
// the first start error.
absl::StatusOr<SimulatedNodes> StartSimulatedNodes(
    kube::Client& client, const std::vector<std::string>& nodes, std::int64_t gpus,
    ::wavepool::testing::SimulatedNodeAgents::Options agent_options = {});

// Manager options for tests against the scene: no leader election, no HTTP server, 2 workers,
// logs dropped, the worker image "worker:1".
ManagerOptions TestManagerOptions();

// A ControllerManager on `client`, started and its caches synced (failures are test failures);
// nullptr when it could not be created.
std::unique_ptr<ControllerManager> StartTestManager(kube::Client& client, ManagerOptions options);

// A Foreground TrainingJob `name` in namespace "default": mlp_tiny on 2 GPUs, a global batch of
// 8, 20 steps of SGD.
nlohmann::json JobManifest(const std::string& name);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_TESTS_CONTROLLER_API_SERVER_SCENE_H_
