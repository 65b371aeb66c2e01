#include "tests/support/cluster/simulated_kubelet.h"

#include <chrono>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cluster/cluster_test.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/resource.h"

namespace wavepool::testing {
namespace {

using ::testing::Eq;

nlohmann::json BoundPod(const std::string& name, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"nodeName", node},
            {"restartPolicy", "Never"},
            {"containers", {{{"name", "worker"}, {"image", "wavepool/worker:1"}}}}}}};
}

class SimulatedKubeletTest : public ClusterTest {
 protected:
  SimulatedKubelet::Options Options() {
    SimulatedKubelet::Options options;
    options.clock = &clock_;
    options.wall_start = WallStart();
    options.gpus_per_node = 4;
    return options;
  }

  void StartKubelet(SimulatedKubelet::Options options) {
    ASSERT_OK_AND_ASSIGN(kubelet_,
                         SimulatedKubelet::Start(*client_, {"node-0", "node-1"}, options));
  }

  nlohmann::json GetPod(const std::string& name) {
    absl::StatusOr<nlohmann::json> pod = client_->Get(kube::kPods, "default", name);
    return pod.ok() ? *pod : nlohmann::json();
  }

  std::string Phase(const std::string& name) {
    const nlohmann::json pod = GetPod(name);
    if (!pod.is_object() || !pod.contains("status")) return "";
    return pod["status"].value("phase", "");
  }

  std::string NodeReady(const std::string& node) {
    absl::StatusOr<nlohmann::json> json = client_->Get(kube::kNodes, "", node);
    if (!json.ok()) return "";
    for (const nlohmann::json& c : (*json)["status"]["conditions"]) {
      if (c["type"] == "Ready") return c["status"].get<std::string>();
    }
    return "";
  }

  std::unique_ptr<SimulatedKubelet> kubelet_;
};

TEST_F(SimulatedKubeletTest, RegistersReadyNodesWithGpuCapacityAndLabels) {
  StartKubelet(Options());
  for (const std::string name : {"node-0", "node-1"}) {
    ASSERT_OK_AND_ASSIGN(nlohmann::json json, client_->Get(kube::kNodes, "", name));
    ASSERT_OK_AND_ASSIGN(kube::Node node, kube::Node::FromJson(json));
    EXPECT_THAT(node.metadata.labels["kubernetes.io/hostname"], Eq(name));
    EXPECT_THAT(node.metadata.labels["wavepool.dev/managed"], Eq("true"));
    EXPECT_THAT(node.capacity["nvidia.com/gpu"], Eq("4"));
    EXPECT_THAT(node.allocatable["nvidia.com/gpu"], Eq("4"));
    EXPECT_THAT(NodeReady(name), Eq("True"));
  }
}

TEST_F(SimulatedKubeletTest, BoundPodGoesPendingRunningSucceededOnTheClock) {
  SimulatedKubelet::Options options = Options();
  options.start_delay = std::chrono::seconds(5);
  options.run_time = std::chrono::seconds(60);
  StartKubelet(options);
  ASSERT_OK(client_->Create(kube::kPods, BoundPod("w-0", "node-0")).status());
  // Nothing moves before the clock does: the server's Pending stands.
  EXPECT_THAT(Phase("w-0"), Eq("Pending"));

  ASSERT_TRUE(
      AdvanceUntil(clock_, std::chrono::seconds(1), [&] { return Phase("w-0") == "Running"; }));
  ASSERT_OK_AND_ASSIGN(kube::Pod running, kube::Pod::FromJson(GetPod("w-0")));
  ASSERT_THAT(running.status.container_statuses.size(), Eq(1u));
  EXPECT_TRUE(running.status.container_statuses[0].ready);
  EXPECT_THAT(running.status.container_statuses[0].state.phase,
              Eq(kube::ContainerState::Phase::kRunning));
  const nlohmann::json status = GetPod("w-0")["status"];
  EXPECT_THAT(status["podIP"].get<std::string>(), ::testing::StartsWith("10.244.0."));
  // At least start_delay of simulated time passed before the pod started.
  ASSERT_OK_AND_ASSIGN(auto started, api::ParseRfc3339(status["startTime"].get<std::string>()));
  EXPECT_GE(started - WallStart(), std::chrono::seconds(5));

  ASSERT_TRUE(
      AdvanceUntil(clock_, std::chrono::seconds(5), [&] { return Phase("w-0") == "Succeeded"; }));
  const nlohmann::json terminated =
      GetPod("w-0")["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_THAT(terminated["exitCode"].get<int>(), Eq(0));
  EXPECT_THAT(terminated["reason"].get<std::string>(), Eq("Completed"));
  ASSERT_OK_AND_ASSIGN(auto finished,
                       api::ParseRfc3339(terminated["finishedAt"].get<std::string>()));
  ASSERT_OK_AND_ASSIGN(auto started_at,
                       api::ParseRfc3339(terminated["startedAt"].get<std::string>()));
  EXPECT_THAT(started_at, Eq(started));
  EXPECT_GE(finished - started, std::chrono::seconds(60));
}

TEST_F(SimulatedKubeletTest, FailPodGivesFailedWithTheExitCode) {
  StartKubelet(Options());
  ASSERT_OK(client_->Create(kube::kPods, BoundPod("w-0", "node-1")).status());
  ASSERT_TRUE(Eventually([&] { return Phase("w-0") == "Running"; }));

  ASSERT_OK(kubelet_->FailPod("default", "w-0", 137, "OOMKilled"));
  ASSERT_TRUE(Eventually([&] { return Phase("w-0") == "Failed"; }));
  ASSERT_OK_AND_ASSIGN(kube::Pod pod, kube::Pod::FromJson(GetPod("w-0")));
  ASSERT_THAT(pod.status.container_statuses.size(), Eq(1u));
  const kube::ContainerState& state = pod.status.container_statuses[0].state;
  EXPECT_THAT(state.phase, Eq(kube::ContainerState::Phase::kTerminated));
  EXPECT_THAT(state.exit_code, Eq(137));
  EXPECT_THAT(state.reason, Eq("OOMKilled"));
  EXPECT_FALSE(pod.status.container_statuses[0].ready);

  // A terminal pod cannot fail again; unknown pods and pods of other nodes are refused.
  EXPECT_THAT(kubelet_->FailPod("default", "w-0", 1, "Error"),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));
  EXPECT_TRUE(kube::IsNotFound(kubelet_->FailPod("default", "nope", 1, "Error")));
  ASSERT_OK(client_->Create(kube::kPods, BoundPod("elsewhere", "node-9")).status());
  EXPECT_THAT(kubelet_->FailPod("default", "elsewhere", 1, "Error"),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));
}

TEST_F(SimulatedKubeletTest, SucceedPodCompletesARunningPodWithExitCodeZero) {
  StartKubelet(Options());  // no run_time: pods run until told
  ASSERT_OK(client_->Create(kube::kPods, BoundPod("w-0", "node-0")).status());
  ASSERT_TRUE(Eventually([&] { return Phase("w-0") == "Running"; }));
  ASSERT_OK(kubelet_->SucceedPod("default", "w-0"));
  ASSERT_TRUE(Eventually([&] { return Phase("w-0") == "Succeeded"; }));
  const nlohmann::json terminated =
      GetPod("w-0")["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_THAT(terminated["exitCode"].get<int>(), Eq(0));
  EXPECT_THAT(terminated["reason"].get<std::string>(), Eq("Completed"));
}

TEST_F(SimulatedKubeletTest, NodeDownMarksTheNodeAndFreezesItsPods) {
  StartKubelet(Options());
  ASSERT_OK(kubelet_->NodeDown("node-1"));
  EXPECT_THAT(NodeReady("node-1"), Eq("Unknown"));
  EXPECT_THAT(NodeReady("node-0"), Eq("True"));
  ASSERT_OK(client_->Create(kube::kPods, BoundPod("w-1", "node-1")).status());
  EXPECT_THAT(kubelet_->FailPod("default", "w-1", 1, "Error"),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));

  ASSERT_OK(kubelet_->NodeUp("node-1"));
  EXPECT_THAT(NodeReady("node-1"), Eq("True"));
  EXPECT_TRUE(Eventually([&] { return Phase("w-1") == "Running"; }));
  EXPECT_THAT(kubelet_->NodeDown("node-7"), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST_F(SimulatedKubeletTest, ConfirmsGracefulDeletionOnceContainersStop) {
  StartKubelet(Options());  // stop_delay 0: containers obey SIGTERM at once
  ASSERT_OK(client_->Create(kube::kPods, BoundPod("w-0", "node-0")).status());
  ASSERT_TRUE(Eventually([&] { return Phase("w-0") == "Running"; }));
  // The server keeps the pod terminating for its 30 s grace period until the kubelet confirms.
  ASSERT_OK(client_->Delete(kube::kPods, "default", "w-0"));
  EXPECT_TRUE(Eventually([&] { return GetPod("w-0").is_null(); }));
}

TEST_F(SimulatedKubeletTest, ContainerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  SimulatedKubelet::Options options = Options();
  options.stop_delay = std::nullopt;
  StartKubelet(options);
  ASSERT_OK(client_->Create(kube::kPods, BoundPod("w-0", "node-0")).status());
  ASSERT_TRUE(Eventually([&] { return Phase("w-0") == "Running"; }));
  kube::DeleteOptions grace;
  grace.grace_period_seconds = 20;
  ASSERT_OK(client_->Delete(kube::kPods, "default", "w-0", grace));
  EXPECT_FALSE(GetPod("w-0").is_null());  // no simulated time has passed
  EXPECT_TRUE(
      AdvanceUntil(clock_, std::chrono::seconds(2), [&] { return GetPod("w-0").is_null(); }));
}

TEST_F(SimulatedKubeletTest, RefusesBadNodeLists) {
  EXPECT_THAT(SimulatedKubelet::Start(*client_, {}, Options()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(SimulatedKubelet::Start(*client_, {"a", "a"}, Options()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  SimulatedKubelet::Options negative = Options();
  negative.start_delay = std::chrono::seconds(-1);
  EXPECT_THAT(SimulatedKubelet::Start(*client_, {"a"}, negative).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

}  // namespace
}  // namespace wavepool::testing
