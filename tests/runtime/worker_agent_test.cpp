// wavepool-worker with a real node agent (wavepool-agent on simulated GPUs): registration with the
// pod's identity, launch groups and iterations reaching the agent's metrics, a background task
// preempted by SIGTERM and resumed on another GPU, and a background task that finds no agent.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/exec_test_support.h"
#include "tests/support/child_process.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/free_port.h"
#include "tests/support/http_get.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/agent_session.h"
#include "wavepool/runtime/launch_pacer.h"

namespace wavepool::runtime {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::ChildProcess;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::FreePort;
using ::wavepool::testing::HttpGet;
using ::wavepool::testing::HttpResponse;
using ::wavepool::testing::OutputFiles;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

class WorkerWithAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-worker-agent"));
    dir_ = temp_dir_.path();
    metrics_port_ = FreePort();
    agent_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{WAVEPOOL_AGENT_BIN, "--dir", dir_ + "/agent", "--devices",
                                 "simulated:2", "--mps", "off", "--hostname", "node-a",
                                 "--metrics-address", "127.0.0.1", "--metrics-port",
                                 std::to_string(metrics_port_), "--no-publish", "--trust-register"},
        OutputFiles(dir_, "agent"));
    ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(dir_ + "/agent/agent.sock"); },
                           std::chrono::seconds(30)))
        << agent_->err();
    absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel("mlp_tiny");
    ASSERT_TRUE(graph.ok());
    planner::PlanRequest request;
    request.global_batch = 16;
    absl::StatusOr<api::Plan> plan = testing::PlanFor(*graph, request, 400, 0.05, 5);
    ASSERT_TRUE(plan.ok()) << plan.status();
    plan_ = dir_ + "/plan.json";
    ASSERT_OK(WriteFile(plan_, api::ToJson(*plan).dump(2)));
  }
  void TearDown() override {
    foreground_.reset();
    agent_.reset();
  }

  // The agent's /metrics page; "" while it cannot be read.
  std::string Metrics() const {
    absl::StatusOr<HttpResponse> scrape = HttpGet(metrics_port_, "/metrics");
    return scrape.ok() ? scrape->body : std::string();
  }

  std::unique_ptr<ChildProcess> Worker(const std::string& name, const std::string& role, int gpu,
                                       std::vector<std::string> extra) {
    std::vector<std::string> args = {WAVEPOOL_WORKER_BIN, "--plan",      plan_, "--agent-dir",
                                     dir_ + "/agent",     "--log-every", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<ChildProcess>(
        args, OutputFiles(dir_, name + std::to_string(gpu) + std::to_string(++started_),
                          {{"WAVEPOOL_ROLE", role},
                           {"WAVEPOOL_NAMESPACE", "team-a"},
                           {"WAVEPOOL_JOB", name},
                           {"WAVEPOOL_POD_NAME", name + "-g0-0"},
                           {"WAVEPOOL_GPU_INDEX", std::to_string(gpu)}}));
  }

  // The test's own foreground session on GPU 0 (slowdown limit 1.1), its op groups reported as
  // taking 1 ms alone.
  void ConnectForeground() {
    agent::RegisterRequest identity;
    identity.namespace_name = "team-a";
    identity.job = identity.pod = "fg";
    identity.role = agent::Role::kForeground;
    identity.max_foreground_slowdown = 1.1;
    ASSERT_OK_AND_ASSIGN(foreground_,
                         AgentSession::Connect(dir_ + "/agent", identity, std::chrono::seconds(5)));
    for (int i = 0; i < 5; ++i) {
      ASSERT_NO_FATAL_FAILURE(ReportForeground(std::chrono::milliseconds(1)));
    }
  }

  // Twenty of the foreground's op groups, each taking `duration`.
  void ReportForeground(std::chrono::microseconds duration) {
    for (std::uint32_t group = 0; group < 20; ++group) {
      absl::StatusOr<LaunchTicket> ticket = foreground_->Begin(ForwardGroup(group));
      ASSERT_OK(ticket.status());
      foreground_->End(*ticket, duration);
    }
  }

  // Whether `background` prints `line` within 60 s while the foreground's op groups take 5 ms, five
  // times their time alone: past the advisor's patience, the agent recommends a smaller batch.
  bool SaysWhileTheForegroundIsSlow(ChildProcess& background, const std::string& line) {
    return Eventually(
        [&] {
          ReportForeground(std::chrono::milliseconds(5));
          return background.out().find(line) != std::string::npos;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(20));
  }

  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
  std::string plan_;
  int metrics_port_ = 0;
  int started_ = 0;
  std::unique_ptr<ChildProcess> agent_;
  std::unique_ptr<AgentSession> foreground_;  // ConnectForeground
};

TEST_F(WorkerWithAgent, AForegroundWorkerRegistersWithItsPodsIdentityAndReportsItsSteps) {
  auto worker = Worker("train", "Foreground", 1, {"--steps", "400"});
  const std::string task =
      "{hostname=\"node-a\",gpu=\"1\",job=\"train\",namespace=\"team-a\",pod=\"train-g0-0\","
      "role=\"foreground\"}";
  // While it trains, the agent knows the task by the identity the pod's environment gave, and
  // its iterations and launch groups arrive.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string metrics = Metrics();
        return metrics.find("wavepool_task_samples_total" + task) != std::string::npos &&
               metrics.find("wavepool_task_launch_credit_limit" + task + " 2") != std::string::npos;
      },
      std::chrono::seconds(60)))
      << Metrics();
  ASSERT_EQ(worker->Wait(), 0) << worker->err();
  EXPECT_THAT(worker->out(), ::testing::Not(HasSubstr("unpaced")));
}

TEST_F(WorkerWithAgent, APreemptedBackgroundTaskResumesOnAnotherGpu) {
  auto first =
      Worker("sweep", "Background", 0, {"--steps", "400", "--checkpoint-dir", dir_ + "/ck"});
  ASSERT_TRUE(Eventually([&] { return first->out().find("step 5/400") != std::string::npos; },
                         std::chrono::seconds(60)))
      << first->err();
  first->Signal(SIGTERM);  // what the kubelet does to a preempted pod
  ASSERT_EQ(first->Wait(), 143) << first->err();
  EXPECT_THAT(first->err(), HasSubstr("checkpointed"));
  auto second =
      Worker("sweep", "Background", 1, {"--steps", "400", "--checkpoint-dir", dir_ + "/ck"});
  ASSERT_EQ(second->Wait(), 0) << second->err();
  EXPECT_THAT(second->out(), HasSubstr("resumed from " + dir_ + "/ck at step "));
  EXPECT_THAT(second->out(), HasSubstr("done: 400 steps"));
}

// The agent's smaller batch recommendation reaches a background worker, which then trains each
// step in slices of that size.
TEST_F(WorkerWithAgent, ABackgroundWorkerTrainsInSlicesOfTheBatchTheAgentRecommends) {
  ASSERT_NO_FATAL_FAILURE(ConnectForeground());
  auto background = Worker("sweep", "Background", 0, {"--steps", "1000000"});
  ASSERT_TRUE(Eventually([&] { return background->out().find("step 5/") != std::string::npos; },
                         std::chrono::seconds(60)))
      << background->err();
  const std::string followed = "each step's 16 samples train in slices of at most 8";
  EXPECT_TRUE(SaysWhileTheForegroundIsSlow(*background, followed))
      << background->out().substr(0, 2000) << Metrics();
  EXPECT_THAT(background->out(), HasSubstr("following the node agent (the foreground stays over "
                                           "its slowdown limit)"));
  // It keeps training, in slices.
  const std::size_t said = background->out().find(followed);
  EXPECT_TRUE(Eventually([&] { return background->out().find("step ", said) != std::string::npos; },
                         std::chrono::seconds(30)));
  background->Signal(SIGTERM);
  EXPECT_EQ(background->Wait(), 143) << background->err();
}

// Tick-tock's waves cannot train a step in slices: its background worker says that it does not
// follow the recommendation rather than ignoring it in silence.
TEST_F(WorkerWithAgent, ABackgroundTickTockWorkerSaysItCannotFollowTheRecommendation) {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel("mlp_tiny");
  ASSERT_OK(graph.status());
  planner::PlanRequest request;
  request.global_batch = 16;
  request.strategy = api::Strategy::kDataParallel;
  request.tick_tock = api::Toggle::kOn;
  ASSERT_OK_AND_ASSIGN(api::Plan plan, testing::PlanFor(*graph, request, 400, 0.05, 5));
  ASSERT_EQ(plan.strategy, api::Strategy::kTickTock);
  ASSERT_OK(WriteFile(plan_, api::ToJson(plan).dump(2)));
  ASSERT_NO_FATAL_FAILURE(ConnectForeground());
  auto background = Worker("sweep", "Background", 0, {"--steps", "1000000"});
  ASSERT_TRUE(Eventually([&] { return background->out().find("step 5/") != std::string::npos; },
                         std::chrono::seconds(60)))
      << background->err();
  EXPECT_TRUE(SaysWhileTheForegroundIsSlow(
      *background, "but a TickTock plan cannot train its steps in slices: they train whole"))
      << background->out().substr(0, 2000) << Metrics();
  background->Signal(SIGTERM);
  EXPECT_EQ(background->Wait(), 143) << background->err();
}

// The launch-group contract between a foreground and a background worker on one GPU
// (AgentSession, launch_pacer.h): while a foreground all-reduce runs, a background launch waits;
// it runs once the pause is lowered; a stop request ends its wait without running it.
TEST_F(WorkerWithAgent, ABackgroundLaunchWaitsWhileAForegroundAllReduceRuns) {
  auto identity = [](agent::Role role, const std::string& pod) {
    agent::RegisterRequest request;
    request.namespace_name = "team-a";
    request.job = pod;
    request.pod = pod;
    request.role = role;
    return request;
  };
  ASSERT_OK_AND_ASSIGN(
      auto foreground,
      AgentSession::Connect(dir_ + "/agent", identity(agent::Role::kForeground, "fg"),
                            std::chrono::seconds(5)));
  ASSERT_OK_AND_ASSIGN(
      auto background,
      AgentSession::Connect(dir_ + "/agent", identity(agent::Role::kBackground, "bg"),
                            std::chrono::seconds(5)));
  for (const bool stop : {false, true}) {
    std::atomic<bool> inside{false}, release{false}, ran{false};
    std::thread all_reduce([&] {
      ASSERT_OK(foreground->Run(AllReduceGroup(0), [&] {
        inside = true;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }));
    });
    ASSERT_TRUE(Eventually([&] { return inside.load(); }, std::chrono::seconds(10)));
    absl::Status launched;
    std::thread launch([&] { launched = background->Run(ForwardGroup(3), [&] { ran = true; }); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(ran.load()) << "a background launch ran while the foreground held the pause";
    if (stop) {
      background->Stop();  // what SIGTERM does
      launch.join();
      EXPECT_TRUE(absl::IsCancelled(launched)) << launched;
      EXPECT_FALSE(ran.load());
    }
    release = true;
    all_reduce.join();
    if (!stop) {
      launch.join();
      EXPECT_OK(launched);
      EXPECT_TRUE(ran.load());
    }
  }
}

// A worker whose node agent is not there: a 3-step mlp_tiny plan in a directory of its own.
class WorkerWithoutAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-worker-noagent"));
    dir_ = temp_dir_.path();
    absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel("mlp_tiny");
    ASSERT_TRUE(graph.ok());
    planner::PlanRequest request;
    request.global_batch = 8;
    absl::StatusOr<api::Plan> plan = testing::PlanFor(*graph, request, 3, 0.05, 5);
    ASSERT_TRUE(plan.ok());
    plan_ = dir_ + "/plan.json";
    ASSERT_OK(WriteFile(plan_, api::ToJson(*plan).dump()));
  }

  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
  std::string plan_;
};

TEST_F(WorkerWithoutAgent, ABackgroundTaskNeverRunsUnpacedAForegroundTaskDoes) {
  for (const std::string role : {"Background", "Foreground"}) {
    ChildProcess worker(
        {WAVEPOOL_WORKER_BIN, "--plan", plan_, "--agent-dir", dir_, "--agent-timeout", "0.5"},
        OutputFiles(dir_, role, {{"WAVEPOOL_ROLE", role}}));
    const int code = worker.Wait();
    if (role == "Background") {
      EXPECT_EQ(code, 4) << worker.err();  // Unavailable
      EXPECT_THAT(worker.err(), HasSubstr(dir_ + "/agent.sock"));
    } else {
      EXPECT_EQ(code, 0) << worker.err();
      EXPECT_THAT(worker.out(), HasSubstr("training unpaced"));
    }
  }
}

TEST_F(WorkerWithoutAgent, SigtermWhileWaitingForTheAgentStopsAtOnce) {
  // An agent socket that hangs up on every connection: the worker retries until its timeout.
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, (dir_ + "/agent.sock").c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  const auto hang_up = [&] {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd >= 0) close(fd);
    return fd >= 0;
  };
  ChildProcess worker(
      {WAVEPOOL_WORKER_BIN, "--plan", plan_, "--agent-dir", dir_, "--agent-timeout", "600"},
      OutputFiles(dir_, "worker", {{"WAVEPOOL_ROLE", "Background"}}));
  ASSERT_TRUE(Eventually(hang_up, std::chrono::seconds(60)));  // it is retrying
  worker.Signal(SIGTERM);
  EXPECT_TRUE(Eventually(
      [&] {
        hang_up();
        return !worker.Running();
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(worker.Wait(), 143) << worker.err();  // WorkerExit::kStopped
  EXPECT_THAT(worker.err(), HasSubstr("stopped while waiting for the node agent"));
  close(listener);
}

}  // namespace
}  // namespace wavepool::runtime
