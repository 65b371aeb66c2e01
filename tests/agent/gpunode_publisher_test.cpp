// The agent's GPUNode publisher against the embedded test API server: the object created on the
// first publish from an agent on simulated GPUs (owned by its Node), the heartbeat advancing on a
// simulated clock, tasks appearing and vanishing, a node without NVML saying so, conflicts with
// another writer, and the API server going away and coming back. The GPUNode CRD is the project's
// own (crds/), so the test server refuses every status the real API server would refuse.
#include "wavepool/agent/gpunode_publisher.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/gpunode_crd.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/eventually.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/peer_identity.h"
#include "wavepool/agent/placement_records.h"
#include "wavepool/agent/simulated_gpu.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::agent {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::SimulatedClock;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
namespace apiserver = ::wavepool::testing::apiserver;

constexpr char kNode[] = "gpu-node-1";
constexpr std::chrono::seconds kCatchUp(20);  // A safety net for the publisher's thread.

// A TrainingJob CRD without a status subresource, which keeps whatever spec and status it is
// given: the PlacementRecords tests create a job already carrying the controller's placement.
nlohmann::json StatusAsCreatedTrainingJobCrd() {
  const nlohmann::json preserved = {{"type", "object"},
                                    {"x-kubernetes-preserve-unknown-fields", true}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", "trainingjobs.wavepool.dev"}}},
          {"spec",
           {{"group", "wavepool.dev"},
            {"scope", "Namespaced"},
            {"names",
             {{"plural", "trainingjobs"},
              {"singular", "trainingjob"},
              {"kind", "TrainingJob"},
              {"listKind", "TrainingJobList"}}},
            {"versions",
             {{{"name", "v1alpha1"},
               {"served", true},
               {"storage", true},
               {"schema",
                {{"openAPIV3Schema",
                  {{"type", "object"},
                   {"properties", {{"spec", preserved}, {"status", preserved}}}}}}}}}}}}};
}

class GpuNodePublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartServer(0);
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-gpunode"));
    dir_ = temp_dir_.path();
    agent_clock_ = MakeRealClock();
    runner_ = MakeSystemCommandRunner();
  }
  void TearDown() override {
    publisher_.reset();
    agent_.reset();
  }

  void StartServer(int port) {
    apiserver::TestApiServer::Options options;
    options.port = port;
    ASSERT_OK_AND_ASSIGN(server_, apiserver::TestApiServer::Start(options));
    kube::ClientConfig config;
    config.server = server_->url();
    config.timeout = std::chrono::seconds(5);
    ASSERT_OK_AND_ASSIGN(client_, kube::Client::Connect(config));
    RegisterGpuNodeCrd();
  }
  void RegisterGpuNodeCrd() {
    ASSERT_OK_AND_ASSIGN(nlohmann::json crd, gpunode_testing::ProjectGpuNodeCrd());
    ASSERT_OK(client_->Create(kube::kCustomResourceDefinitions, crd).status());
  }

  void StartAgent(GpuDevicesPtr devices) {
    AgentOptions options;
    options.directory = dir_;
    options.hostname = kNode;
    options.version = "1.2.3";
    options.mps.mode = MpsMode::kOff;
    options.trust_register = true;  // workers are this test's own threads
    ASSERT_OK_AND_ASSIGN(
        agent_, Agent::Start(options, std::move(devices), agent_clock_.get(), runner_.get()));
  }
  void StartSimulatedAgent(std::uint32_t gpus) {
    SimulatedGpuOptions options;
    options.gpus = gpus;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SimulatedGpus> devices,
                         SimulatedGpus::Create(*agent_clock_, options));
    StartAgent(std::move(devices));
  }

  GpuNodePublisherOptions Options() {
    GpuNodePublisherOptions options;
    options.node_name = kNode;
    options.agent_version = "1.2.3";
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    return options;
  }
  void MakePublisher(GpuNodePublisherOptions options) {
    Agent* agent = agent_.get();
    ASSERT_OK_AND_ASSIGN(publisher_, GpuNodePublisher::Create(
                                         std::move(options), client_.get(),
                                         [agent] { return agent->Status(); }, &clock_));
  }

  absl::StatusOr<api::GpuNode> Read() {
    return kube::TypedClient<api::GpuNode>(client_.get()).Get("", kNode);
  }

  void Register(SessionId session, const std::string& pod, Role role, std::uint32_t gpu) {
    RegisterRequest request;
    request.namespace_name = "team-a";
    request.job = role == Role::kForeground ? "train" : "sweep";
    request.pod = pod;
    request.role = role;
    request.gpu_index = gpu;
    // The worker's own sealed gate segment, as AgentClient sends it with Register.
    ASSERT_OK_AND_ASSIGN(OwnSegment own, LaunchGate::CreateWorkerSegment());
    request.worker_segment = own.fd;
    PeerCredentials peer;
    peer.pid = getpid();
    ASSERT_OK(agent_->OnRegister(session, peer, request).status());
  }

  TempDir temp_dir_;  // removed after everything below
  std::string dir_;   // temp_dir_.path()
  ClockPtr agent_clock_;
  CommandRunnerPtr runner_;
  SimulatedClock clock_;
  std::unique_ptr<apiserver::TestApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<GpuNodePublisher> publisher_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(GpuNodePublisherTest, FirstPublishCreatesGpuNodeOwnedByItsNode) {
  ASSERT_OK_AND_ASSIGN(
      nlohmann::json node,
      client_->Create(kube::kNodes,
                      {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kNode}}}}));
  StartSimulatedAgent(2);
  MakePublisher(Options());
  ASSERT_OK(publisher_->Publish().status());

  ASSERT_OK_AND_ASSIGN(api::GpuNode gpunode, Read());
  EXPECT_EQ(gpunode.spec.node_name, kNode);
  EXPECT_EQ(gpunode.metadata.labels["wavepool.dev/node"], kNode);
  ASSERT_THAT(gpunode.metadata.owner_references, SizeIs(1));
  EXPECT_EQ(gpunode.metadata.owner_references[0].kind, "Node");
  EXPECT_EQ(gpunode.metadata.owner_references[0].uid, node["metadata"]["uid"]);
  const AgentStatus agent = agent_->Status();
  ASSERT_THAT(gpunode.status.gpus, SizeIs(2));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(gpunode.status.gpus[i].index, i);
    EXPECT_EQ(gpunode.status.gpus[i].uuid, agent.gpus[i].info.uuid);
    EXPECT_EQ(gpunode.status.gpus[i].model, agent.gpus[i].info.name);
    EXPECT_EQ(gpunode.status.gpus[i].memory_bytes,
              static_cast<std::int64_t>(agent.gpus[i].info.memory_total_bytes));
    EXPECT_THAT(gpunode.status.gpus[i].tasks, IsEmpty());
  }
  EXPECT_EQ(gpunode.status.agent_version, "1.2.3");
  EXPECT_EQ(gpunode.status.heartbeat_time, "2026-05-01T10:00:00Z");
  const api::Condition* ready = api::FindCondition(gpunode.status.conditions, "Ready");
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, api::ConditionStatus::kTrue);
  EXPECT_EQ(ready->reason, "GPUsReported");

  // The owner reference lets the garbage collector remove the GPUNode with its Node.
  ASSERT_OK(client_->Delete(kube::kNodes, "", kNode));
  EXPECT_THAT(Read().status(), StatusIs(absl::StatusCode::kNotFound, HasSubstr(kNode)));
}

TEST_F(GpuNodePublisherTest, WithoutANodeObjectTheGpuNodeIsCreatedUnowned) {
  StartSimulatedAgent(1);
  MakePublisher(Options());
  ASSERT_OK(publisher_->Publish().status());
  ASSERT_OK_AND_ASSIGN(api::GpuNode gpunode, Read());
  EXPECT_THAT(gpunode.metadata.owner_references, IsEmpty());
  EXPECT_THAT(gpunode.status.gpus, SizeIs(1));
}

TEST_F(GpuNodePublisherTest, HeartbeatAdvancesEveryInterval) {
  StartSimulatedAgent(1);
  MakePublisher(Options());
  publisher_->Start();
  ASSERT_TRUE(Eventually([&] { return publisher_->State().publishes == 1; }, kCatchUp));
  ASSERT_OK_AND_ASSIGN(api::GpuNode first, Read());
  EXPECT_EQ(first.status.heartbeat_time, "2026-05-01T10:00:00Z");
  // Nothing is published before the interval has passed on the clock.
  clock_.Advance(std::chrono::seconds(9));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(publisher_->State().publishes, 1);
  clock_.Advance(std::chrono::seconds(1));  // 10 s: the interval
  ASSERT_TRUE(Eventually([&] { return publisher_->State().publishes == 2; }, kCatchUp));
  ASSERT_OK_AND_ASSIGN(api::GpuNode second, Read());
  EXPECT_EQ(second.status.heartbeat_time, "2026-05-01T10:00:10Z");
  // Ready did not flip, so its transition time stays at the first publish.
  EXPECT_EQ(api::FindCondition(second.status.conditions, "Ready")->last_transition_time,
            "2026-05-01T10:00:00Z");
  publisher_->Stop();
}

TEST_F(GpuNodePublisherTest, TasksAppearWithTheirRoleAndVanishWhenTheyEnd) {
  StartSimulatedAgent(2);
  MakePublisher(Options());
  Register(1, "train-0", Role::kForeground, 0);
  Register(2, "sweep-0", Role::kBackground, 0);
  Register(3, "train-1", Role::kForeground, 1);
  ASSERT_OK_AND_ASSIGN(api::GpuNode with_tasks, publisher_->Publish());
  ASSERT_THAT(with_tasks.status.gpus[0].tasks, SizeIs(2));
  ASSERT_THAT(with_tasks.status.gpus[1].tasks, SizeIs(1));
  const api::GpuTask& foreground = with_tasks.status.gpus[0].tasks[0];
  EXPECT_EQ(foreground.namespace_, "team-a");
  EXPECT_EQ(foreground.job, "train");
  EXPECT_EQ(foreground.pod, "train-0");
  EXPECT_EQ(foreground.role, api::Role::kForeground);
  EXPECT_EQ(foreground.pid, getpid());
  EXPECT_EQ(with_tasks.status.gpus[0].tasks[1].pod, "sweep-0");
  EXPECT_EQ(with_tasks.status.gpus[0].tasks[1].role, api::Role::kBackground);

  agent_->OnClosed(2, /*said_goodbye=*/true);
  agent_->OnClosed(3, /*said_goodbye=*/false);
  ASSERT_OK(publisher_->Publish().status());
  ASSERT_OK_AND_ASSIGN(api::GpuNode after, Read());
  ASSERT_THAT(after.status.gpus[0].tasks, SizeIs(1));
  EXPECT_EQ(after.status.gpus[0].tasks[0].pod, "train-0");
  EXPECT_THAT(after.status.gpus[1].tasks, IsEmpty());
}

TEST_F(GpuNodePublisherTest, IterationReportsShowUpAsTaskProgress) {
  StartSimulatedAgent(1);
  MakePublisher(Options());
  Register(1, "train-0", Role::kForeground, 0);
  Register(2, "sweep-0", Role::kBackground, 0);
  ASSERT_OK_AND_ASSIGN(api::GpuNode before, publisher_->Publish());
  ASSERT_THAT(before.status.gpus[0].tasks, SizeIs(2));
  EXPECT_FALSE(before.status.gpus[0].tasks[0].progress.has_value());  // no iteration yet
  EXPECT_FALSE(before.status.gpus[0].tasks[1].progress.has_value());

  ASSERT_OK(agent_->OnReport(1, ReportIteration{41, 0.5, 32}));
  ASSERT_OK(agent_->OnReport(1, ReportIteration{42, 0.25, 32}));  // the last one counts
  ASSERT_OK(agent_->OnReport(2, ReportIteration{7, 2.0, 64}));
  // A rejected report (negative seconds) changes nothing.
  EXPECT_THAT(agent_->OnReport(2, ReportIteration{8, -1.0, 64}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seconds")));
  const double slowdown = agent_->Status().gpus[0].tasks[0].foreground_slowdown;
  ASSERT_OK(publisher_->Publish().status());
  ASSERT_OK_AND_ASSIGN(api::GpuNode after, Read());  // as the controller reads it
  ASSERT_THAT(after.status.gpus[0].tasks, SizeIs(2));
  const std::optional<api::TrainingProgress>& fg = after.status.gpus[0].tasks[0].progress;
  ASSERT_TRUE(fg.has_value());
  EXPECT_EQ(fg->step, 42);
  EXPECT_DOUBLE_EQ(fg->iteration_seconds, 0.25);
  EXPECT_DOUBLE_EQ(fg->samples_per_second, 128.0);  // 32 samples / 0.25 s
  EXPECT_DOUBLE_EQ(fg->foreground_slowdown, slowdown);
  EXPECT_GT(fg->foreground_slowdown, 0);
  const std::optional<api::TrainingProgress>& bg = after.status.gpus[0].tasks[1].progress;
  ASSERT_TRUE(bg.has_value());
  EXPECT_EQ(bg->step, 7);
  EXPECT_DOUBLE_EQ(bg->iteration_seconds, 2.0);
  EXPECT_DOUBLE_EQ(bg->samples_per_second, 32.0);  // 64 samples / 2 s
  EXPECT_DOUBLE_EQ(bg->foreground_slowdown, 0);    // bg tasks are not judged against solo
}

TEST_F(GpuNodePublisherTest, NodeWithoutNvmlSaysSoInsteadOfFailing) {
  const absl::Status nvml = absl::UnavailableError(
      "dlopen libnvidia-ml.so.1: libnvidia-ml.so.1: cannot open shared object file");
  StartAgent(MakeNoGpuDevices("no GPUs: " + std::string(nvml.message())));
  GpuNodePublisherOptions options = Options();
  options.no_gpu_reason = NoGpuReasonFor(nvml);
  MakePublisher(options);
  ASSERT_OK(publisher_->Publish().status());
  ASSERT_OK_AND_ASSIGN(api::GpuNode gpunode, Read());
  EXPECT_THAT(gpunode.status.gpus, IsEmpty());
  EXPECT_THAT(gpunode.status.message, HasSubstr("libnvidia-ml.so.1"));
  const api::Condition* ready = api::FindCondition(gpunode.status.conditions, "Ready");
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, api::ConditionStatus::kFalse);
  EXPECT_EQ(ready->reason, "NVMLUnavailable");
  EXPECT_THAT(ready->message, HasSubstr("no GPUs: dlopen"));
}

TEST_F(GpuNodePublisherTest, ConflictWithAnotherWriterIsReadAgainAndRetried) {
  StartSimulatedAgent(1);
  MakePublisher(Options());
  ASSERT_OK(publisher_->Publish().status());
  // Another writer bumps the object: the publisher's resourceVersion is stale now.
  ASSERT_OK_AND_ASSIGN(nlohmann::json object, client_->Get(api::kGpuNodes, "", kNode));
  object["metadata"]["annotations"]["example.com/owner"] = "someone-else";
  ASSERT_OK(client_->Update(api::kGpuNodes, object).status());

  clock_.Advance(std::chrono::seconds(10));
  ASSERT_OK_AND_ASSIGN(api::GpuNode written, publisher_->Publish());
  EXPECT_EQ(written.status.heartbeat_time, "2026-05-01T10:00:10Z");
  EXPECT_EQ(written.metadata.annotations["example.com/owner"], "someone-else");
  EXPECT_EQ(publisher_->State().publishes, 2);
  EXPECT_EQ(publisher_->State().failures, 0);
}

TEST_F(GpuNodePublisherTest, ConflictBeyondTheRetriesIsAbortedAndTheNextPublishSucceeds) {
  StartSimulatedAgent(1);
  GpuNodePublisherOptions options = Options();
  options.max_conflict_retries = 0;
  MakePublisher(options);
  ASSERT_OK(publisher_->Publish().status());
  ASSERT_OK_AND_ASSIGN(nlohmann::json object, client_->Get(api::kGpuNodes, "", kNode));
  object["metadata"]["labels"]["example.com/pool"] = "a";
  ASSERT_OK(client_->Update(api::kGpuNodes, object).status());
  EXPECT_THAT(publisher_->Publish().status(),
              StatusIs(absl::StatusCode::kAborted, HasSubstr(kNode)));
  EXPECT_EQ(publisher_->State().consecutive_failures, 1);
  ASSERT_OK(publisher_->Publish().status());  // read again after the conflict
  EXPECT_EQ(publisher_->State().consecutive_failures, 0);
}

TEST_F(GpuNodePublisherTest, RecoversWhenTheApiServerComesBack) {
  StartSimulatedAgent(1);
  GpuNodePublisherOptions options = Options();
  MakePublisher(options);
  ASSERT_OK(publisher_->Publish().status());
  const std::string url = server_->url();
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  server_.reset();  // down: connections are refused

  publisher_->Start();  // publishes at once, fails, backs off 1 s, 2 s, ...
  ASSERT_TRUE(Eventually([&] { return publisher_->State().consecutive_failures >= 1; }, kCatchUp));
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(Eventually([&] { return publisher_->State().consecutive_failures >= 2; }, kCatchUp));
  EXPECT_EQ(publisher_->State().last_error.code(), absl::StatusCode::kUnavailable);

  // Back, empty (no data directory): the GPUNode is gone and is created again.
  apiserver::TestApiServer::Options again;
  again.port = port;
  ASSERT_OK_AND_ASSIGN(server_, apiserver::TestApiServer::Start(again));
  RegisterGpuNodeCrd();
  ASSERT_TRUE(Eventually(
      [&] {
        clock_.Advance(std::chrono::seconds(2));  // past the 2 s backoff
        return publisher_->State().publishes >= 2;
      },
      kCatchUp));
  publisher_->Stop();
  ASSERT_OK_AND_ASSIGN(api::GpuNode gpunode, Read());
  EXPECT_THAT(gpunode.status.gpus, SizeIs(1));
  EXPECT_EQ(publisher_->State().consecutive_failures, 0);
  std::lock_guard<std::mutex> lock(log_mu_);
  EXPECT_THAT(log_.back(), HasSubstr("published again after"));
}

// A task whose names the API server would refuse (invalid UTF-8, a namespace that breaks the
// CRD's pattern) is left out and logged; the node's other tasks and its heartbeat go on.
TEST_F(GpuNodePublisherTest, AdversarialTaskNamesNeverStopTheHeartbeat) {
  StartSimulatedAgent(1);
  Register(1, "train-0", Role::kForeground, 0);
  Agent* agent = agent_.get();
  auto snapshot = [agent] {
    AgentStatus status = agent->Status();
    TaskStatus bad_utf8 = status.gpus[0].tasks[0];
    bad_utf8.pod = "sweep-\xff";
    TaskStatus bad_namespace = status.gpus[0].tasks[0];
    bad_namespace.namespace_name = "Team_B";
    status.gpus[0].tasks.push_back(bad_utf8);
    status.gpus[0].tasks.push_back(bad_namespace);
    return status;
  };
  ASSERT_OK_AND_ASSIGN(publisher_,
                       GpuNodePublisher::Create(Options(), client_.get(), snapshot, &clock_));
  publisher_->Start();
  ASSERT_TRUE(Eventually([&] { return publisher_->State().publishes == 1; }, kCatchUp));
  clock_.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(Eventually([&] { return publisher_->State().publishes == 2; }, kCatchUp));
  publisher_->Stop();
  EXPECT_EQ(publisher_->State().failures, 0);
  ASSERT_OK_AND_ASSIGN(api::GpuNode gpunode, Read());
  ASSERT_THAT(gpunode.status.gpus[0].tasks, SizeIs(1));
  EXPECT_EQ(gpunode.status.gpus[0].tasks[0].pod, "train-0");
  std::lock_guard<std::mutex> lock(log_mu_);
  EXPECT_THAT(log_, Contains(HasSubstr("left out: task.pod: not valid UTF-8: \"sweep-\\xff\"")));
  EXPECT_THAT(log_, Contains(HasSubstr("left out: task.namespace")));
}

// A foreground's allocator reports can claim a wave above the GPU's memory, whose headroom is
// negative; the CRD requires headroomBytes >= 0, so publishing it as is would have the API server
// refuse the node's whole status, and with it the heartbeat.
TEST_F(GpuNodePublisherTest, AdversarialAPeakAboveTheGpusMemoryNeverStopsTheHeartbeat) {
  StartSimulatedAgent(1);
  Agent* agent = agent_.get();
  auto snapshot = [agent] {
    AgentStatus status = agent->Status();
    MemoryWave wave;
    wave.period = Seconds(0.5);
    wave.peak_bytes = status.gpus[0].info.memory_total_bytes + (100ull << 30);
    wave.trough_bytes = 1ull << 30;
    wave.headroom_bytes = -(100ll << 30);
    status.gpus[0].memory_wave = wave;
    return status;
  };
  ASSERT_OK_AND_ASSIGN(publisher_,
                       GpuNodePublisher::Create(Options(), client_.get(), snapshot, &clock_));
  publisher_->Start();
  ASSERT_TRUE(Eventually(
      [&] { return publisher_->State().publishes + publisher_->State().failures >= 1; }, kCatchUp));
  publisher_->Stop();
  EXPECT_OK(publisher_->State().last_error);
  EXPECT_EQ(publisher_->State().failures, 0);
  ASSERT_OK_AND_ASSIGN(api::GpuNode gpunode, Read());
  ASSERT_TRUE(gpunode.status.gpus[0].memory_wave.has_value());
  EXPECT_EQ(gpunode.status.gpus[0].memory_wave->headroom_bytes, 0);
}

// An exception from the JSON library inside a publish is a failed publish, not the end of the
// publishing thread (nor of the agent).
TEST_F(GpuNodePublisherTest, AdversarialAThrowingPublishIsAFailureAndTheLoopGoesOn) {
  StartSimulatedAgent(1);
  Agent* agent = agent_.get();
  std::atomic<int> calls{0};
  auto snapshot = [agent, &calls] {
    if (calls++ == 0) {
      (void)nlohmann::json("bad \xff").dump();  // throws type_error 316: invalid UTF-8
    }
    return agent->Status();
  };
  ASSERT_OK_AND_ASSIGN(publisher_,
                       GpuNodePublisher::Create(Options(), client_.get(), snapshot, &clock_));
  publisher_->Start();
  ASSERT_TRUE(Eventually([&] { return publisher_->State().failures == 1; }, kCatchUp));
  EXPECT_THAT(publisher_->State().last_error,
              StatusIs(absl::StatusCode::kInternal, HasSubstr("invalid UTF-8")));
  ASSERT_TRUE(Eventually(
      [&] {
        clock_.Advance(std::chrono::seconds(1));  // past the 1 s backoff
        return publisher_->State().publishes >= 1;
      },
      kCatchUp));
  publisher_->Stop();
  ASSERT_OK_AND_ASSIGN(api::GpuNode gpunode, Read());
  EXPECT_THAT(gpunode.status.gpus, SizeIs(1));
}

// A pod of this node, as the controller creates it, for the pod source.
nlohmann::json ManagedPod(const std::string& name, const std::string& node) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "default"},
        {"labels",
         {{"app.kubernetes.io/managed-by", "wavepool-controller"},
          {"wavepool.dev/role", "Background"},
          {"wavepool.dev/job", "sweep"}}},
        {"annotations", {{"wavepool.dev/gpu-uuids", "GPU-x"}}}}},
      {"spec", {{"nodeName", node}, {"containers", {{{"name", "worker"}, {"image", "busybox"}}}}}}};
}

TEST_F(GpuNodePublisherTest, ThePodSourceFindsThisNodesManagedPodsByUid) {
  ASSERT_OK_AND_ASSIGN(nlohmann::json mine,
                       client_->Create(kube::kPods, ManagedPod("sweep-0", kNode)));
  ASSERT_OK_AND_ASSIGN(nlohmann::json other,
                       client_->Create(kube::kPods, ManagedPod("sweep-1", "another-node")));
  nlohmann::json unmanaged = ManagedPod("rogue", kNode);
  unmanaged["metadata"]["labels"].erase("app.kubernetes.io/managed-by");
  ASSERT_OK_AND_ASSIGN(unmanaged, client_->Create(kube::kPods, unmanaged));
  KubePodSourceOptions options;
  options.node_name = kNode;
  ASSERT_OK_AND_ASSIGN(PodSourcePtr pods, MakeKubePodSource(client_.get(), options, &clock_));
  ASSERT_OK_AND_ASSIGN(PodRecord found, pods->FindByUid(mine["metadata"]["uid"]));
  EXPECT_EQ(found.name, "sweep-0");
  EXPECT_EQ(found.namespace_name, "default");
  ASSERT_OK_AND_ASSIGN(WorkerIdentity identity, IdentityOfPod(found));
  EXPECT_EQ(identity.role, Role::kBackground);
  EXPECT_EQ(identity.job, "sweep");
  EXPECT_THAT(pods->FindByUid(other["metadata"]["uid"]).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(kNode)));
  EXPECT_THAT(pods->FindByUid(unmanaged["metadata"]["uid"]).status(),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  // A pod created after the last listing is found once min_relist has passed.
  ASSERT_OK_AND_ASSIGN(nlohmann::json later,
                       client_->Create(kube::kPods, ManagedPod("sweep-2", kNode)));
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_OK_AND_ASSIGN(found, pods->FindByUid(later["metadata"]["uid"]));
  EXPECT_EQ(found.name, "sweep-2");
  EXPECT_THAT(MakeKubePodSource(client_.get(), KubePodSourceOptions{}, &clock_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node_name")));
}

TEST_F(GpuNodePublisherTest, PlacementRecordsReadThePodsTrainingJob) {
  // Without a status subresource the status is stored as created: the controller's record.
  ASSERT_OK(
      client_->Create(kube::kCustomResourceDefinitions, StatusAsCreatedTrainingJobCrd()).status());
  api::TrainingJob job;
  job.metadata.namespace_ = "default";
  job.metadata.name = "sweep";
  job.spec.role = api::Role::kBackground;
  job.status.placement = {{"sweep-0", kNode, {"GPU-x"}}};
  const kube::ResourceType& trainingjobs = api::kTrainingJobs;
  ASSERT_OK_AND_ASSIGN(nlohmann::json stored, client_->Create(trainingjobs, api::ToJson(job)));
  nlohmann::json pod = ManagedPod("sweep-0", kNode);
  pod["metadata"]["ownerReferences"] = {{{"apiVersion", "wavepool.dev/v1alpha1"},
                                         {"kind", "TrainingJob"},
                                         {"name", "sweep"},
                                         {"uid", stored["metadata"]["uid"]},
                                         {"controller", true}}};
  ASSERT_OK_AND_ASSIGN(pod, client_->Create(kube::kPods, pod));
  KubePodSourceOptions options;
  options.node_name = kNode;
  ASSERT_OK_AND_ASSIGN(PodSourcePtr pods, MakeKubePodSource(client_.get(), options, &clock_));
  ASSERT_OK_AND_ASSIGN(PodRecord found, pods->FindByUid(pod["metadata"]["uid"]));
  ASSERT_TRUE(found.controller_owner.has_value());
  EXPECT_EQ(found.controller_owner->name, "sweep");
  ASSERT_OK_AND_ASSIGN(WorkerIdentity identity, IdentityOfPod(found));
  ASSERT_OK_AND_ASSIGN(PlacementRecordsPtr placements,
                       MakeKubePlacementRecords(client_.get(), kNode));
  EXPECT_OK(placements->Confirm(found, identity));
  ASSERT_OK(client_->Delete(trainingjobs, "default", "sweep"));
  EXPECT_THAT(placements->Confirm(found, identity),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("is gone")));
  EXPECT_THAT(MakeKubePlacementRecords(client_.get(), "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node_name")));
}

}  // namespace
}  // namespace wavepool::agent
