// A background worker that bypasses its launch gate, end to end: the agent on simulated GPUs, a
// foreground that holds the background pause, an honest background that obeys it, and a cheating
// background whose process keeps its kernels running on the GPU anyway (the simulated GPU runs
// whatever a process submits; the gate is cooperative). The agent must flag the cheat in its
// metrics, in its GPUNode's BackgroundCheating condition and with a Warning Event on the pod,
// and clear the flag once the process stops.
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/gpunode_crd.h"
#include "tests/agent/metrics_test_util.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/eventually.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/client/gate_layout.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gpunode_publisher.h"
#include "wavepool/agent/simulated_gpu.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/resource.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::agent {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::SimulatedClock;
using ::wavepool::testing::TempDir;
namespace apiserver = ::wavepool::testing::apiserver;

constexpr char kNode[] = "gpu-node-1";
constexpr char kNamespace[] = "team-a";
// Pids as the agent sees them; the simulated GPU reports utilisation under the same pids.
constexpr std::int32_t kCheaterPid = 3'000'001;
constexpr std::int32_t kHonestPid = 3'000'002;

class CheatAdversarialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, apiserver::TestApiServer::Start({}));
    kube::ClientConfig config;
    config.server = server_->url();
    config.timeout = std::chrono::seconds(5);
    ASSERT_OK_AND_ASSIGN(client_, kube::Client::Connect(config));
    ASSERT_OK_AND_ASSIGN(nlohmann::json crd, gpunode_testing::ProjectGpuNodeCrd());
    ASSERT_OK(client_->Create(kube::kCustomResourceDefinitions, crd).status());
    // The pods' namespace, where their Events go.
    ASSERT_OK(client_
                  ->Create(kube::kNamespaces, {{"apiVersion", "v1"},
                                               {"kind", "Namespace"},
                                               {"metadata", {{"name", kNamespace}}}})
                  .status());
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-cheat"));
    dir_ = temp_dir_.path();
    clock_ = MakeRealClock();
    runner_ = MakeSystemCommandRunner();
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SimulatedGpus> devices,
                         SimulatedGpus::Create(*clock_, SimulatedGpuOptions{}));
    sim_ = devices.get();

    AgentOptions options;
    options.directory = dir_;
    options.hostname = kNode;
    options.mps.mode = MpsMode::kOff;
    options.trust_register = true;  // the workers are this test's, under made-up pids
    options.sample_period = std::chrono::milliseconds(10);
    options.control_period = std::chrono::milliseconds(20);
    options.telemetry_period = std::chrono::milliseconds(100);  // the simulated sample window
    options.cheat.flag_after = 3;
    options.cheat.drain = std::chrono::milliseconds(50);
    options.cheat.quiet_period = std::chrono::milliseconds(500);
    // The agent owns the devices; the test keeps driving them through `sim_`.
    ASSERT_OK_AND_ASSIGN(agent_,
                         Agent::Start(options, std::move(devices), clock_.get(), runner_.get()));
    GpuNodePublisherOptions publisher;
    publisher.node_name = kNode;
    publisher.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    Agent* agent = agent_.get();
    ASSERT_OK_AND_ASSIGN(publisher_, GpuNodePublisher::Create(
                                         publisher, client_.get(),
                                         [agent] { return agent->Status(); }, &publisher_clock_));
  }
  void TearDown() override {
    publisher_.reset();
    agent_.reset();  // and the simulated GPUs with it
  }

  // Registers a worker of pod `pod` under `pid` and returns its own gate segment.
  OwnSegment Register(SessionId session, const std::string& pod, Role role, std::int32_t pid) {
    RegisterRequest request;
    request.namespace_name = kNamespace;
    request.job = role == Role::kForeground ? "train" : pod;
    request.pod = pod;
    request.role = role;
    request.gpu_index = 0;
    absl::StatusOr<OwnSegment> own = LaunchGate::CreateWorkerSegment();
    EXPECT_OK(own.status());
    if (!own.ok()) return {};
    request.worker_segment = own->fd;
    PeerCredentials peer;
    peer.pid = pid;
    EXPECT_OK(agent_->OnRegister(session, peer, request).status());
    return *std::move(own);
  }

  std::optional<TaskStatus> Task(const std::string& pod) const {
    for (const GpuStatus& gpu : agent_->Status().gpus) {
      for (const TaskStatus& task : gpu.tasks) {
        if (task.pod == pod) return task;
      }
    }
    return std::nullopt;
  }

  std::optional<double> Metric(const std::string& name, const std::string& pod) {
    for (const auto& sample : metrics_testing::ParseSamples(agent_->metrics().ExpositionText())) {
      if (sample.name != name) continue;
      auto found = sample.labels.find("pod");
      if (pod.empty() || (found != sample.labels.end() && found->second == pod)) {
        return sample.value;
      }
    }
    return std::nullopt;
  }

  std::vector<nlohmann::json> PodEvents(const std::string& pod) {
    std::vector<nlohmann::json> events;
    absl::StatusOr<kube::ObjectList> list = client_->List(kube::kEvents, kNamespace);
    if (!list.ok()) return events;
    for (const nlohmann::json& event : list->items) {
      if (event["involvedObject"].value("name", "") == pod &&
          event["involvedObject"].value("kind", "") == "Pod") {
        events.push_back(event);
      }
    }
    return events;
  }

  TempDir temp_dir_;  // removed after everything below
  std::string dir_;   // temp_dir_.path()
  ClockPtr clock_;
  CommandRunnerPtr runner_;
  SimulatedClock publisher_clock_;
  std::unique_ptr<apiserver::TestApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  SimulatedGpus* sim_ = nullptr;  // owned by agent_
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<GpuNodePublisher> publisher_;
  std::mutex log_mu_;
  std::vector<std::string> log_;  // the publisher's and its event recorder's; log_mu_
};

TEST_F(CheatAdversarialTest, AdversarialBackgroundRunningWhilePausedIsFlaggedAndCleared) {
  OwnSegment foreground = Register(1, "train-0", Role::kForeground, getpid());
  Register(2, "sweep-cheat", Role::kBackground, kCheaterPid);
  Register(3, "sweep-honest", Role::kBackground, kHonestPid);
  ASSERT_NE(foreground.mapping, nullptr);
  // The foreground enters a sensitive op group and holds the background pause, for good.
  static_cast<WorkerSegment*>(foreground.mapping->data())->hold.store(1);
  ASSERT_TRUE(Eventually([&] { return agent_->Status().gpus[0].background_held; }));

  // The foreground trains; the honest background waits; the cheater's process launches anyway.
  ASSERT_OK_AND_ASSIGN(SimulatedTaskId train,
                       sim_->AddTask(0, {Role::kForeground, getpid(), StreamPriority::kHigh}));
  ASSERT_OK_AND_ASSIGN(SimulatedTaskId cheat,
                       sim_->AddTask(0, {Role::kBackground, kCheaterPid, StreamPriority::kLow}));
  ASSERT_OK(sim_->AddTask(0, {Role::kBackground, kHonestPid, StreamPriority::kLow}).status());
  const OpGroupSpec minute_long{std::chrono::seconds(60), 0.5, std::chrono::milliseconds(5)};
  ASSERT_OK(sim_->Submit(train, minute_long).status());
  ASSERT_OK(sim_->Submit(cheat, minute_long).status());

  // The metric.
  ASSERT_TRUE(Eventually([&] { return Metric("wavepool_task_cheating", "sweep-cheat") == 1.0; }));
  EXPECT_EQ(Metric("wavepool_task_cheating", "sweep-honest"), 0.0);
  EXPECT_EQ(Metric("wavepool_agent_cheating_detections_total", ""), 1.0);
  // The foreground runs as much as the cheater and is never judged: it has no cheating series.
  EXPECT_EQ(Metric("wavepool_task_cheating", "train-0"), std::nullopt);
  const std::optional<TaskStatus> cheater = Task("sweep-cheat");
  ASSERT_TRUE(cheater.has_value());
  EXPECT_TRUE(cheater->cheating);
  EXPECT_THAT(cheater->cheating_reason, HasSubstr("held it paused"));
  EXPECT_FALSE(Task("sweep-honest")->cheating);
  EXPECT_FALSE(Task("train-0")->cheating);

  // The GPUNode condition names the cheating pod, and only it.
  ASSERT_OK_AND_ASSIGN(api::GpuNode flagged, publisher_->Publish());
  const api::Condition* condition =
      api::FindCondition(flagged.status.conditions, kGpuNodeBackgroundCheating);
  ASSERT_NE(condition, nullptr);
  EXPECT_EQ(condition->status, api::ConditionStatus::kTrue);
  EXPECT_EQ(condition->reason, kReasonLaunchesOutsideGate);
  EXPECT_THAT(condition->message, HasSubstr("team-a/sweep-cheat (GPU 0)"));
  EXPECT_THAT(condition->message, Not(HasSubstr("sweep-honest")));
  EXPECT_THAT(CheatingPods(flagged.status), ElementsAre("team-a/sweep-cheat"));
  // What was written is what the API server keeps.
  ASSERT_OK_AND_ASSIGN(api::GpuNode stored,
                       kube::TypedClient<api::GpuNode>(client_.get()).Get("", kNode));
  EXPECT_THAT(CheatingPods(stored.status), ElementsAre("team-a/sweep-cheat"));

  // The Warning Event on the pod, once, however often the node publishes meanwhile.
  ASSERT_TRUE(Eventually([&] { return !PodEvents("sweep-cheat").empty(); }));
  ASSERT_OK(publisher_->Publish().status());
  ASSERT_OK(publisher_->Publish().status());
  std::vector<nlohmann::json> events = PodEvents("sweep-cheat");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], kReasonLaunchesOutsideGate);
  EXPECT_EQ(events[0]["count"], 1);
  EXPECT_EQ(events[0]["involvedObject"]["namespace"], kNamespace);
  EXPECT_THAT(events[0]["message"].get<std::string>(), HasSubstr("held it paused"));
  EXPECT_TRUE(PodEvents("sweep-honest").empty());
  EXPECT_TRUE(PodEvents("train-0").empty());
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    EXPECT_THAT(log_, Contains(HasSubstr("background pod team-a/sweep-cheat on GPU 0 cheats")));
  }

  // The cheater's process stops using the GPU: after the quiet period the flag clears.
  ASSERT_OK(sim_->RemoveTask(cheat));
  ASSERT_TRUE(Eventually([&] { return Metric("wavepool_task_cheating", "sweep-cheat") == 0.0; }));
  EXPECT_FALSE(Task("sweep-cheat")->cheating);
  EXPECT_EQ(Metric("wavepool_agent_cheating_detections_total", ""), 1.0);
  ASSERT_OK_AND_ASSIGN(api::GpuNode cleared, publisher_->Publish());
  condition = api::FindCondition(cleared.status.conditions, kGpuNodeBackgroundCheating);
  ASSERT_NE(condition, nullptr);
  EXPECT_EQ(condition->status, api::ConditionStatus::kFalse);
  EXPECT_EQ(condition->reason, kReasonNoCheating);
  EXPECT_THAT(CheatingPods(cleared.status), ::testing::IsEmpty());
}

TEST(BackgroundCheatingCondition, NamesFlaggedPodsWithinTheCrdsMessageLimit) {
  AgentStatus snapshot;
  snapshot.gpus.resize(1);
  for (int i = 0; i < 400; ++i) {
    TaskStatus task;
    task.namespace_name = kNamespace;
    task.pod = "sweep-" + std::to_string(i);
    task.role = Role::kBackground;
    task.cheating = i % 2 == 0;
    task.cheating_reason = std::string(200, 'x');  // 200 flagged: ~46000 characters
    snapshot.gpus[0].tasks.push_back(task);
  }
  const api::GpuNodeStatus status = MakeGpuNodeStatus(snapshot, {});
  const api::Condition* condition =
      api::FindCondition(status.conditions, kGpuNodeBackgroundCheating);
  ASSERT_NE(condition, nullptr);
  EXPECT_EQ(condition->status, api::ConditionStatus::kTrue);
  EXPECT_LE(condition->message.size(), 32768u);
  EXPECT_THAT(condition->message, HasSubstr(" more"));
  const std::vector<std::string> pods = CheatingPods(status);
  ASSERT_FALSE(pods.empty());
  EXPECT_LT(pods.size(), 200u);
  EXPECT_EQ(pods[0], "team-a/sweep-0");
  EXPECT_EQ(pods[1], "team-a/sweep-2");  // only flagged pods

  for (TaskStatus& task : snapshot.gpus[0].tasks) task.cheating = false;
  const api::GpuNodeStatus honest = MakeGpuNodeStatus(snapshot, {});
  condition = api::FindCondition(honest.conditions, kGpuNodeBackgroundCheating);
  ASSERT_NE(condition, nullptr);
  EXPECT_EQ(condition->status, api::ConditionStatus::kFalse);
  EXPECT_EQ(condition->reason, kReasonNoCheating);
  EXPECT_TRUE(CheatingPods(honest).empty());
}

}  // namespace
}  // namespace wavepool::agent
