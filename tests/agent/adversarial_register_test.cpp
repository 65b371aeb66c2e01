// A hostile or buggy tenant against the agent's registration: each worker's identity comes from
// its process (a PeerIdentity; here a fixed table by pid, as the cgroup and pod lookup would
// give), so registering as Foreground from a background pod, under another job's name, for a
// second slot beyond the pod's GPUs, with invalid UTF-8 or a bad namespace, or with every
// connection the agent serves, is refused, and the agent, the foreground's credits and its
// other tenants carry on.
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/peer_process.h"
#include "tests/agent/socket_test_util.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/client/agent_client.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/peer_identity.h"
#include "wavepool/agent/simulated_gpu.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::wavepool::agent::testing::RawClient;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::IsOkAndHolds;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;

constexpr std::chrono::seconds kCatchUp(20);  // A safety net for the agent's threads.
constexpr pid_t kForegroundPid = 1001;
constexpr pid_t kBackgroundPid = 1002;

class FixedIdentity final : public PeerIdentity {
 public:
  absl::StatusOr<WorkerIdentity> Resolve(pid_t pid) override {
    absl::MutexLock lock(&mu);
    if (hold_next) {
      // As a lookup waiting for an API server that does not answer: until Release (bounded, so
      // that a broken agent fails the test instead of hanging it).
      hold_next = false;
      holding = true;
      mu.AwaitWithTimeout(absl::Condition(&released), absl::Seconds(60));
      holding = false;
    }
    auto it = workers.find(pid);
    if (it == workers.end()) return absl::NotFoundError("no pod of this node runs it");
    return it->second;
  }
  void Set(pid_t pid, WorkerIdentity identity) {
    absl::MutexLock lock(&mu);
    workers[pid] = std::move(identity);
  }
  // The next Resolve waits until Release.
  void HoldNext() {
    absl::MutexLock lock(&mu);
    hold_next = true;
    released = false;
  }
  bool Holding() {
    absl::MutexLock lock(&mu);
    return holding;
  }
  void Release() {
    absl::MutexLock lock(&mu);
    released = true;
  }

 private:
  absl::Mutex mu;
  std::map<pid_t, WorkerIdentity> workers ABSL_GUARDED_BY(mu);
  bool hold_next ABSL_GUARDED_BY(mu) = false;
  bool holding ABSL_GUARDED_BY(mu) = false;
  bool released ABSL_GUARDED_BY(mu) = true;
};

class AdversarialRegister : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-adv"));
    dir_ = temp_dir_.path();
    clock_ = MakeRealClock();
    runner_ = MakeSystemCommandRunner();
    SimulatedGpuOptions gpus;
    gpus.gpus = 2;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SimulatedGpus> devices,
                         SimulatedGpus::Create(*clock_, gpus));
    AgentOptions options;
    options.directory = dir_;
    options.hostname = "node-a";
    options.version = "test";
    options.mps.mode = MpsMode::kOff;
    options.identity = &identity_;
    ASSERT_OK_AND_ASSIGN(agent_,
                         Agent::Start(options, std::move(devices), clock_.get(), runner_.get()));
    uuids_ = {agent_->Status().gpus[0].info.uuid, agent_->Status().gpus[1].info.uuid};
    identity_.Set(kForegroundPid, Identity("team-a", "train", "train-0", Role::kForeground, {0}));
    identity_.Set(kBackgroundPid, Identity("team-b", "sweep", "sweep-0", Role::kBackground, {0}));
  }
  void TearDown() override {
    identity_.Release();
    agent_.reset();
  }

  WorkerIdentity Identity(const std::string& ns, const std::string& job, const std::string& pod,
                          Role role, const std::vector<int>& gpus) {
    WorkerIdentity identity;
    identity.namespace_name = ns;
    identity.job = job;
    identity.pod = pod;
    identity.role = role;
    for (int gpu : gpus) identity.gpu_uuids.push_back(uuids_[static_cast<std::size_t>(gpu)]);
    return identity;
  }
  static RegisterRequest Request(const WorkerIdentity& as, std::uint32_t gpu = 0) {
    RegisterRequest request;
    request.namespace_name = as.namespace_name;
    request.job = as.job;
    request.pod = as.pod;
    request.role = as.role;
    request.gpu_index = gpu;
    // The worker's own sealed gate segment, as AgentClient sends it with Register.
    request.worker_segment = LaunchGate::CreateWorkerSegment().value().fd;
    return request;
  }
  absl::StatusOr<Registered> Register(SessionId session, pid_t pid, const RegisterRequest& r) {
    return agent_->OnRegister(session, PeerCredentials{pid, 0, 0}, r);
  }
  WorkerIdentity Foreground() {
    return Identity("team-a", "train", "train-0", Role::kForeground, {0});
  }
  WorkerIdentity Background() {
    return Identity("team-b", "sweep", "sweep-0", Role::kBackground, {0});
  }
  std::string Rejected(const char* role) {
    return absl::StrCat(
        "wavepool_agent_registrations_total{hostname=\"node-a\",result=\"rejected\","
        "role=\"",
        role, "\"} ");
  }
  // The foreground and the background, registered honestly, on GPU 0.
  void RegisterBoth() {
    ASSERT_OK_AND_ASSIGN(Registered fg, Register(1, kForegroundPid, Request(Foreground())));
    EXPECT_EQ(fg.credit_limit, 2u);
    ASSERT_OK_AND_ASSIGN(Registered bg, Register(2, kBackgroundPid, Request(Background())));
    EXPECT_EQ(bg.credit_limit, 1u);  // beside a foreground
  }
  // The GPU's tasks are the honest two, with their credits.
  void ExpectHonestTasksOnly() {
    const std::vector<TaskStatus> tasks = agent_->Status().gpus[0].tasks;
    ASSERT_THAT(tasks, SizeIs(2));
    for (const TaskStatus& task : tasks) {
      if (task.role == Role::kForeground) {
        EXPECT_EQ(task.pod, "train-0");
        EXPECT_EQ(task.credit_limit, 2u);
      } else {
        EXPECT_EQ(task.pod, "sweep-0");
        EXPECT_EQ(task.credit_limit, 1u);
      }
    }
  }

  TempDir temp_dir_;  // removed after everything below
  std::string dir_;   // temp_dir_.path()
  ClockPtr clock_;
  CommandRunnerPtr runner_;
  FixedIdentity identity_;
  std::unique_ptr<Agent> agent_;
  std::vector<std::string> uuids_;
};

TEST_F(AdversarialRegister,
       ForegroundClaimFromABackgroundPodIsRefusedAndTheForegroundKeepsItsCredits) {
  RegisterBoth();
  RegisterRequest forged = Request(Background());
  forged.role = Role::kForeground;
  EXPECT_THAT(Register(3, kBackgroundPid, forged),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("Register.role: \"Foreground\" is not the identity of process "
                                 "1002 (its pod's is \"Background\")")));
  ExpectHonestTasksOnly();
  EXPECT_THAT(agent_->metrics().ExpositionText(), HasSubstr(Rejected("foreground") + "1"));
}

TEST_F(AdversarialRegister, AnotherJobsIdentityIsRefusedNamingTheField) {
  RegisterBoth();
  // The background pod calls itself the foreground job's pod, field by field.
  RegisterRequest forged = Request(Foreground());
  forged.role = Role::kBackground;
  EXPECT_THAT(Register(3, kBackgroundPid, forged),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Register.namespace")));
  forged.namespace_name = "team-b";
  EXPECT_THAT(Register(4, kBackgroundPid, forged),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Register.job")));
  forged.job = "sweep";
  EXPECT_THAT(Register(5, kBackgroundPid, forged),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Register.pod")));
  // A process that is no pod's worker cannot register at all.
  EXPECT_THAT(Register(6, 4242, Request(Background())),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("cannot tell who process")));
  ExpectHonestTasksOnly();
  EXPECT_THAT(agent_->metrics().ExpositionText(), HasSubstr(Rejected("background") + "4"));
}

TEST_F(AdversarialRegister, APodCannotTakeASecondSlotBeyondItsGpus) {
  RegisterBoth();
  // Another process of the background pod (assigned GPU 0 only).
  identity_.Set(2002, Background());
  EXPECT_THAT(Register(3, 2002, Request(Background(), 0)),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("one slot per GPU")));
  EXPECT_THAT(Register(4, 2002, Request(Background(), 1)),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("is not assigned to pod")));
  ExpectHonestTasksOnly();
  EXPECT_THAT(agent_->Status().gpus[1].tasks, SizeIs(0));
  // A pod assigned both GPUs holds one slot on each, no more.
  identity_.Set(3001, Identity("team-c", "wide", "wide-0", Role::kBackground, {0, 1}));
  identity_.Set(3002, Identity("team-c", "wide", "wide-0", Role::kBackground, {0, 1}));
  identity_.Set(3003, Identity("team-c", "wide", "wide-0", Role::kBackground, {0, 1}));
  WorkerIdentity wide = Identity("team-c", "wide", "wide-0", Role::kBackground, {0, 1});
  EXPECT_OK(Register(5, 3001, Request(wide, 0)).status());
  EXPECT_OK(Register(6, 3002, Request(wide, 1)).status());
  EXPECT_THAT(Register(7, 3003, Request(wide, 1)),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("holds 2 slot(s)")));
  // The slot of a worker that left is the pod's again.
  agent_->OnClosed(6, /*said_goodbye=*/true);
  EXPECT_OK(Register(8, 3003, Request(wide, 1)).status());
}

TEST_F(AdversarialRegister, InvalidUtf8AndABadNamespaceAreRefusedAndTheAgentCarriesOn) {
  RegisterBoth();
  RegisterRequest bad = Request(Background());
  bad.namespace_name = "Team_B";
  EXPECT_THAT(Register(3, kBackgroundPid, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Register.namespace: must be a Kubernetes namespace")));
  bad = Request(Background());
  bad.pod = "sweep-\xC3\x28";
  EXPECT_THAT(Register(4, kBackgroundPid, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Register.pod: not valid UTF-8: \"sweep-\\xc3(\"")));
  ExpectHonestTasksOnly();
  // The agent still serves: its status (what the GPUNode publishes) has only valid names, and a
  // valid registration on the other GPU goes through.
  identity_.Set(5001, Identity("team-d", "other", "other-0", Role::kForeground, {1}));
  EXPECT_OK(
      Register(5, 5001, Request(Identity("team-d", "other", "other-0", Role::kForeground, {1}), 1))
          .status());
  EXPECT_THAT(agent_->Status().gpus[1].tasks, SizeIs(1));
}

TEST_F(AdversarialRegister, OnePeerCannotHoldEveryConnection) {
  identity_.Set(getpid(), Foreground());
  // Another process opens 256 connections and holds those the agent did not refuse: the agent's
  // connections per pod (or process).
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<PeerProcess> holder,
      PeerProcess::Start({"hold", "--socket", agent_->socket_path(), "--connections", "256"}));
  EXPECT_THAT(holder->ReadLine(kCatchUp), IsOkAndHolds("16"));

  // With the peer's connections held, the foreground still registers, with its credits.
  AgentClient::Options options;
  options.socket_path = agent_->socket_path();
  options.registration = Request(Foreground());
  options.log = [](std::string_view) {};
  absl::StatusOr<std::unique_ptr<AgentClient>> foreground = AgentClient::Connect(options);
  holder->CloseStdin();
  EXPECT_EQ(holder->Wait(kCatchUp), 0);
  ASSERT_OK(foreground.status());
  EXPECT_EQ((*foreground)->registration().credit_limit, 2u);
  (*foreground)->Close();
  EXPECT_TRUE(Eventually([&] { return agent_->Status().gpus[0].tasks.empty(); }, kCatchUp));
}

TEST_F(AdversarialRegister, ReportsThatGoBackInTimeAreRefusedAndKeepNothing) {
  RegisterBoth();
  ASSERT_OK(agent_->OnReport(1, ReportMemory{{{1000, 10, 20}, {2000, 11, 20}}}));
  // A second report starting before the first one's last sample (equal times are in order).
  EXPECT_THAT(agent_->OnReport(1, ReportMemory{{{1500, 12, 20}, {3000, 13, 20}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ReportMemory.samples[0].time_ns: 1500 < the task's previous "
                                 "sample's time_ns 2000")));
  ASSERT_OK(agent_->OnReport(1, ReportMemory{{{2000, 14, 20}}}));
  // A reader that read up to a time gets each later sample once, none repeated.
  const std::vector<MemorySample> kept = agent_->TaskMemorySamples(0, kForegroundPid, 0);
  ASSERT_THAT(kept, SizeIs(3));
  EXPECT_EQ(kept.back().allocated_bytes, 14u);
  EXPECT_THAT(agent_->TaskMemorySamples(0, kForegroundPid, 2000), SizeIs(0));

  // Each wave keeps its own order; the waves may interleave.
  ASSERT_OK(agent_->OnReport(1, ReportWaveMemory{{{0, 5000, 1}, {1, 1000, 1}}}));
  ASSERT_OK(agent_->OnReport(1, ReportWaveMemory{{{1, 2000, 1}, {0, 5000, 1}}}));
  EXPECT_THAT(agent_->OnReport(1, ReportWaveMemory{{{1, 3000, 1}, {0, 4000, 1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ReportWaveMemory.samples[1].time_ns: 4000 < the task's "
                                 "previous sample's time_ns 5000 of wave 0")));
  ASSERT_OK(
      agent_->OnReport(1, ReportWaveMemory{{{1, 2500, 1}}}));  // the refused 3000 was not kept
}

TEST_F(AdversarialRegister, AHugeIterationTimeIsRefusedAndTheTaskKeepsItsProgress) {
  RegisterBoth();
  ASSERT_OK(agent_->OnReport(1, ReportIteration{1, 0.5, 64}));
  // Finite, but two such reports would make the task's iteration-time sum infinite.
  EXPECT_THAT(agent_->OnReport(1, ReportIteration{2, 1e308, 64}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("iteration seconds")));
  for (const TaskStatus& task : agent_->Status().gpus[0].tasks) {
    if (task.role != Role::kForeground) continue;
    ASSERT_TRUE(task.last_iteration.has_value());
    EXPECT_EQ(task.last_iteration->iteration, 1u);
  }
}

TEST_F(AdversarialRegister, AWorkerWhoseIdentityLookupHangsStallsNoOtherWorker) {
  identity_.Set(getpid(), Foreground());
  AgentClient::Options options;
  options.socket_path = agent_->socket_path();
  options.registration = Request(Foreground());
  options.flush_interval = std::chrono::milliseconds(1);
  options.log = [](std::string_view) {};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AgentClient> foreground, AgentClient::Connect(options));

  // A process the identity source cannot answer for (an API server that hangs on its pod
  // listing) registers.
  identity_.HoldNext();
  RawClient stuck(agent_->socket_path());
  ASSERT_TRUE(stuck.SendWithDescriptors(Request(Background())));
  ASSERT_TRUE(Eventually([&] { return identity_.Holding(); }, kCatchUp));

  // Meanwhile the registered foreground's reports still reach the agent, and its goodbye closes
  // its session.
  ASSERT_OK(foreground->ReportIteration({1, 0.25, 64}));
  EXPECT_TRUE(Eventually(
      [&] {
        const std::vector<TaskStatus> tasks = agent_->Status().gpus[0].tasks;
        return tasks.size() == 1 && tasks[0].last_iteration.has_value();
      },
      kCatchUp));
  EXPECT_TRUE(identity_.Holding());
  foreground->Close();
  EXPECT_TRUE(Eventually([&] { return agent_->Status().gpus[0].tasks.empty(); }, kCatchUp));

  // Once the lookup answers, the stuck worker gets its answer: this process is the foreground's.
  identity_.Release();
  ASSERT_OK_AND_ASSIGN(Frame answer, stuck.Receive());
  ASSERT_TRUE(std::holds_alternative<ErrorReply>(answer.message));
  EXPECT_EQ(std::get<ErrorReply>(answer.message).code, absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::get<ErrorReply>(answer.message).message, HasSubstr("Register.role"));
}

}  // namespace
}  // namespace wavepool::agent
