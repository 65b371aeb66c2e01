// The scene of the tests against the embedded test API server (api_server_scene.h).
#include "tests/controller/api_server_scene.h"

#include <chrono>
#include <string_view>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cluster/crds.h"
#include "tests/support/status_matchers.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::controller {

using ::wavepool::testing::SimulatedKubelet;
using ::wavepool::testing::SimulatedNodeAgents;
using ::wavepool::testing::apiserver::TestApiServer;

absl::StatusOr<ApiServerScene> StartApiServerScene(const TestApiServer::Options& options,
                                                   kube::ClientConfig config) {
  ApiServerScene scene;
  WAVEPOOL_ASSIGN_OR_RETURN(scene.server, TestApiServer::Start(options));
  config.server = scene.server->url();
  WAVEPOOL_ASSIGN_OR_RETURN(scene.client, kube::Client::Connect(config));
  WAVEPOOL_RETURN_IF_ERROR(::wavepool::testing::RegisterWavepoolCrds(*scene.client));
  return scene;
}

absl::StatusOr<SimulatedNodes> StartSimulatedNodes(kube::Client& client,
                                                   const std::vector<std::string>& nodes,
                                                   std::int64_t gpus,
                                                   SimulatedNodeAgents::Options agent_options) {
  SimulatedNodes started;
  WAVEPOOL_ASSIGN_OR_RETURN(started.kubelet, SimulatedKubelet::Start(client, nodes, {}));
  WAVEPOOL_ASSIGN_OR_RETURN(
      started.agents, SimulatedNodeAgents::Start(client, SimulatedNodeAgents::Uniform(nodes, gpus),
                                                 std::move(agent_options)));
  return started;
}

ManagerOptions TestManagerOptions() {
  ManagerOptions options;
  options.leader_elect = false;
  options.http_port = -1;
  options.workers = 2;
  options.identity = "test";
  options.lease_namespace = "default";
  options.log = [](std::string_view) {};
  options.reconciler.objects.default_image = "worker:1";
  return options;
}

std::unique_ptr<ControllerManager> StartTestManager(kube::Client& client, ManagerOptions options) {
  absl::StatusOr<std::unique_ptr<ControllerManager>> manager =
      ControllerManager::Create(client, std::move(options));
  EXPECT_THAT(manager.status(), ::wavepool::testing::IsOk());
  if (!manager.ok()) return nullptr;
  EXPECT_THAT((*manager)->Start(), ::wavepool::testing::IsOk());
  EXPECT_TRUE((*manager)->WaitForSync(std::chrono::seconds(20)));
  return *std::move(manager);
}

nlohmann::json JobManifest(const std::string& name) {
  nlohmann::json manifest = nlohmann::json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "TrainingJob",
    "metadata": {"namespace": "default"},
    "spec": {"role": "Foreground", "model": {"name": "mlp_tiny"}, "globalBatchSize": 8,
             "gpus": 2, "steps": 20, "optimizer": "SGD", "learningRate": 0.05}})");
  manifest["metadata"]["name"] = name;
  return manifest;
}

}  // namespace wavepool::controller
