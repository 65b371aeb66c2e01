// ControllerManager (controller/manager.h) against the embedded test API server and the
// simulated cluster: informers feed the work queue, workers reconcile, leader election lets one
// replica act, and the health, readiness and metrics endpoints answer over real HTTP.
#include "wavepool/controller/manager.h"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/api_server_scene.h"
#include "tests/support/cluster/simulated_node_agent.h"
#include "tests/support/eventually.h"
#include "tests/support/http_get.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/base/clock.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::HttpGet;
using ::wavepool::testing::HttpResponse;
using ::wavepool::testing::StatusIs;

// Reconciles so far, every outcome.
double ReconcileCount(ControllerMetrics& metrics) {
  std::istringstream text(metrics.Serialize());
  double total = 0;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("wavepool_controller_reconciles_total{", 0) == 0) {
      total += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return total;
}

// A pod with the controller's managed-by label (so the pod informer sees it), owned by the
// TrainingJob `owner` (a controller reference) or naming `annotated_job` in the job-name
// annotation; neither when both are empty.
json LabelledPod(const std::string& name, const std::string& owner,
                 const std::string& annotated_job) {
  json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"namespace": "default",
                   "labels": {"app.kubernetes.io/managed-by": "wavepool-controller"}},
      "spec": {"containers": [{"name": "worker", "image": "worker:1"}]}})");
  pod["metadata"]["name"] = name;
  if (!owner.empty()) {
    pod["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", "wavepool.dev/v1alpha1"},
                      {"kind", "TrainingJob"},
                      {"name", owner},
                      {"uid", "00000000-0000-0000-0000-000000000001"},
                      {"controller", true}}});
  }
  if (!annotated_job.empty()) {
    pod["metadata"]["annotations"] = {{std::string(kAnnotationJobName), annotated_job}};
  }
  return pod;
}

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::wavepool::testing::apiserver::TestApiServer::Options server_options;
    server_options.store.finish_pod_deletion_after_grace = false;  // the kubelet confirms
    kube::ClientConfig config;
    config.timeout = std::chrono::seconds(5);
    ASSERT_OK_AND_ASSIGN(scene_, StartApiServerScene(server_options, config));
    client_ = scene_.client.get();
  }

  static ManagerOptions Options() { return TestManagerOptions(); }

  // Options() with the periodic retry of a waiting job an hour away and no resync: within a
  // test, only an event requeues a waiting job.
  static ManagerOptions WaitingOptions() {
    ManagerOptions options = Options();
    options.reconciler.waiting_requeue = std::chrono::hours(1);
    options.resync_period = std::chrono::nanoseconds(0);
    return options;
  }

  std::unique_ptr<ControllerManager> StartManager(ManagerOptions options) {
    return StartTestManager(*client_, std::move(options));
  }

  // Creates JobManifest(name) on the server.
  absl::Status CreateJob(const std::string& name) {
    return client_->Create(api::kTrainingJobs, JobManifest(name)).status();
  }

  // The job's status.phase; "(gone)" when it cannot be read.
  std::string JobPhase(const std::string& name) const {
    absl::StatusOr<json> job = client_->Get(api::kTrainingJobs, "default", name);
    return job.ok() ? job->value("/status/phase"_json_pointer, "") : std::string("(gone)");
  }

  // `field` ("reason", "status") of the job's Placed condition; "" when it has none.
  std::string PlacedCondition(const std::string& name, const std::string& field) const {
    absl::StatusOr<json> job = client_->Get(api::kTrainingJobs, "default", name);
    if (!job.ok()) return std::string();
    for (const json& c : job->value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Placed") return c.value(field, "");
    }
    return std::string();
  }

  ApiServerScene scene_;
  kube::Client* client_ = nullptr;  // scene_'s
};

TEST_F(ManagerTest, BadOptionsAreInvalidArgumentNamingTheOption) {
  const auto create_error = [&](const std::function<void(ManagerOptions&)>& change) {
    ManagerOptions options = Options();
    change(options);
    return ControllerManager::Create(*client_, options).status();
  };
  EXPECT_THAT(create_error([](ManagerOptions& o) { o.workers = 0; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("workers")));
  EXPECT_THAT(create_error([](ManagerOptions& o) { o.http_port = 65536; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("http_port")));
  EXPECT_THAT(create_error([](ManagerOptions& o) {
                o.leader_elect = true;
                o.lease_name = "";
              }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lease_name")));
  EXPECT_THAT(create_error([](ManagerOptions& o) {
                o.leader_elect = true;
                o.lease_duration = std::chrono::seconds(5);  // not above the 10 s renew deadline
              }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lease_duration")));
  EXPECT_THAT(create_error(
                  [](ManagerOptions& o) { o.reconciler.start_timeout = std::chrono::seconds(-1); }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("start_timeout")));
  EXPECT_THAT(create_error([](ManagerOptions& o) {
                o.reconciler.heartbeat_timeout = std::chrono::seconds(0);
              }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("heartbeat_timeout")));
  ::wavepool::testing::SimulatedClock other;
  EXPECT_THAT(create_error([&other](ManagerOptions& o) { o.reconciler.clock = &other; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reconciler.clock")));
}

// What every job's pods or the Lease would carry is checked before anything reaches the server,
// naming the option and the flag.
TEST(ManagerOptionsValidation, NamesAndPodOptionsTheApiServerWouldRefuseAreRefused) {
  const auto validate = [](const std::function<void(ManagerOptions&)>& change) {
    ManagerOptions options;
    change(options);
    return ValidateManagerOptions(options);
  };
  EXPECT_OK(validate([](ManagerOptions&) {}));
  EXPECT_OK(validate([](ManagerOptions& o) { o.watch_namespace = "team-a"; }));
  EXPECT_THAT(validate([](ManagerOptions& o) { o.watch_namespace = "../secrets"; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--namespace")));
  EXPECT_THAT(validate([](ManagerOptions& o) { o.lease_namespace = "Wavepool_System"; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--lease-namespace")));
  EXPECT_THAT(validate([](ManagerOptions& o) { o.lease_name = "wavepool/controller"; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--lease-name")));
  // Without leader election there is no Lease.
  EXPECT_OK(validate([](ManagerOptions& o) {
    o.leader_elect = false;
    o.lease_name = "wavepool/controller";
  }));
  EXPECT_THAT(validate([](ManagerOptions& o) { o.reconciler.default_device = "h1000"; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--default-device"), HasSubstr("h1000"))));
  EXPECT_THAT(
      validate([](ManagerOptions& o) {
        o.reconciler.objects.background_priority_class = "Low_Priority";
      }),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--background-priority-class")));
  EXPECT_THAT(validate([](ManagerOptions& o) {
                o.reconciler.template_policy.allowed_host_path_prefixes = {"data"};
              }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--allow-host-path")));
}

// With leader election on and the Lease's namespace missing, the replica says so once, naming
// the namespace, and /readyz stays 503 with the same words until the namespace is created.
TEST_F(ManagerTest, LeaderElectionWithoutTheLeaseNamespaceIsNotReadyAndNamesIt) {
  ManagerOptions options = Options();
  options.leader_elect = true;
  options.lease_namespace = "wavepool-system";
  options.lease_duration = std::chrono::seconds(3);
  options.renew_deadline = std::chrono::seconds(2);
  options.retry_period = std::chrono::milliseconds(200);
  options.http_port = 0;
  options.http_address = "127.0.0.1";
  auto logged = std::make_shared<std::vector<std::string>>();
  auto log_mu = std::make_shared<std::mutex>();
  options.log = [logged, log_mu](std::string_view line) {
    std::lock_guard<std::mutex> lock(*log_mu);
    logged->emplace_back(line);
  };
  std::unique_ptr<ControllerManager> manager = StartManager(options);
  ASSERT_NE(manager, nullptr);
  const int port = manager->http_port();
  HttpResponse ready;
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<HttpResponse> answer = HttpGet(port, "/readyz");
    if (answer.ok()) ready = *std::move(answer);
    return ready.body.find("namespace wavepool-system does not exist") != std::string::npos;
  })) << ready.body;
  EXPECT_EQ(ready.status, 503);
  EXPECT_THAT(ready.body, HasSubstr("--lease-namespace"));
  EXPECT_FALSE(manager->IsLeader());
  ASSERT_OK_AND_ASSIGN(HttpResponse healthz, HttpGet(port, "/healthz"));
  EXPECT_EQ(healthz.status, 200);  // alive: restarting it would not help
  ASSERT_OK_AND_ASSIGN(ready, HttpGet(port, "/readyz"));
  EXPECT_EQ(ready.status, 503);
  {
    std::lock_guard<std::mutex> lock(*log_mu);
    int mentions = 0;
    for (const std::string& line : *logged) {
      mentions += line.find("namespace wavepool-system does not exist") != std::string::npos;
    }
    EXPECT_EQ(mentions, 1) << "said once, not on every probe";
  }

  ASSERT_OK(client_
                ->Create(kube::kNamespaces, json{{"apiVersion", "v1"},
                                                 {"kind", "Namespace"},
                                                 {"metadata", {{"name", "wavepool-system"}}}})
                .status());
  EXPECT_TRUE(Eventually([&] { return manager->IsLeader(); }));
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<HttpResponse> answer = HttpGet(port, "/readyz");
    return answer.ok() && answer->status == 200;
  }));
}

TEST_F(ManagerTest, HealthReadinessAndMetricsAnswerOverHttp) {
  ManagerOptions options = Options();
  options.http_port = 0;
  options.http_address = "127.0.0.1";
  std::unique_ptr<ControllerManager> manager = StartManager(options);
  ASSERT_NE(manager, nullptr);
  const int port = manager->http_port();
  ASSERT_GT(port, 0);
  ASSERT_OK_AND_ASSIGN(HttpResponse healthz, HttpGet(port, "/healthz"));
  EXPECT_EQ(healthz.status, 200);
  EXPECT_EQ(healthz.body, "ok");
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<HttpResponse> answer = HttpGet(port, "/readyz");
    return answer.ok() && answer->status == 200;
  }));
  ASSERT_OK_AND_ASSIGN(HttpResponse verbose, HttpGet(port, "/readyz?verbose=1"));
  EXPECT_EQ(verbose.body, "ok");
  ASSERT_OK_AND_ASSIGN(HttpResponse metrics, HttpGet(port, "/metrics"));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("wavepool_controller_leader 1"));
  EXPECT_THAT(metrics.body, HasSubstr("wavepool_controller_queue_depth"));
  EXPECT_THAT(metrics.body, HasSubstr("wavepool_controller_jobs{phase=\"Pending\"}"));
  EXPECT_THAT(metrics.body, HasSubstr("process_resident_memory_bytes"));
  ASSERT_OK_AND_ASSIGN(HttpResponse nothing, HttpGet(port, "/nothing"));
  EXPECT_EQ(nothing.status, 404);
  manager->Stop();
  // Nobody listens any more.
  EXPECT_THAT(HttpGet(port, "/healthz"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connect")));
}

TEST_F(ManagerTest, HttpPortInUseFailsStart) {
  ManagerOptions options = Options();
  options.http_port = 0;
  options.http_address = "127.0.0.1";
  std::unique_ptr<ControllerManager> first = StartManager(options);
  ASSERT_NE(first, nullptr);
  options.http_port = first->http_port();
  ASSERT_OK_AND_ASSIGN(auto second, ControllerManager::Create(*client_, options));
  EXPECT_THAT(second->Start(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("listen")));
}

TEST_F(ManagerTest, PodEventEnqueuesItsOwningJob) {
  std::unique_ptr<ControllerManager> manager = StartManager(Options());
  ASSERT_NE(manager, nullptr);
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));
  EXPECT_EQ(ReconcileCount(manager->metrics()), 0);  // no jobs yet
  // Neither owner nor annotation: nothing to enqueue. Then one pod event for an owned pod and
  // one for an annotated pod: one reconcile each (their jobs do not exist; nothing to do).
  ASSERT_OK(client_->Create(kube::kPods, LabelledPod("stray", "", "")).status());
  ASSERT_OK(client_->Create(kube::kPods, LabelledPod("owned", "ghost", "")).status());
  EXPECT_TRUE(Eventually([&] { return ReconcileCount(manager->metrics()) >= 1; }));
  ASSERT_OK(client_->Create(kube::kPods, LabelledPod("annotated", "", "phantom")).status());
  EXPECT_TRUE(Eventually([&] { return ReconcileCount(manager->metrics()) >= 2; }));
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));
  EXPECT_EQ(ReconcileCount(manager->metrics()), 2);
}

TEST_F(ManagerTest, ReconcilesACreatedJobToPods) {
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes, StartSimulatedNodes(*client_, {"node-a"}, 4));
  std::unique_ptr<ControllerManager> manager = StartManager(Options());
  ASSERT_NE(manager, nullptr);
  ASSERT_OK(CreateJob("tiny"));
  // The planner decides how many GPUs the tiny model uses; every placed rank gets a pod, and
  // the simulated kubelet runs it.
  json status;
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<json> job = client_->Get(api::kTrainingJobs, "default", "tiny");
    if (job.ok()) status = job->value("status", json::object());
    return status.value("phase", "") == "Running";
  })) << "job status: "
      << status.dump();
  kube::ListOptions selector;
  selector.label_selector = "wavepool.dev/job=tiny";
  ASSERT_OK_AND_ASSIGN(kube::ObjectList pods, client_->List(kube::kPods, "default", selector));
  ASSERT_TRUE(status["placement"].is_array());
  EXPECT_THAT(pods.items, SizeIs(status["placement"].size()));
  EXPECT_THAT(pods.items, Not(IsEmpty()));
  ASSERT_OK_AND_ASSIGN(json plan, client_->Get(kube::kConfigMaps, "default", "tiny-plan"));
  EXPECT_TRUE(plan["data"].contains("plan.json"));
  EXPECT_TRUE(manager->IsLeader());
}

// A job that waits for GPUs is placed as soon as a deleted job's pods are gone, long before its
// own periodic retry (an hour here) and with no resync: the pod deletion requeues it.
TEST_F(ManagerTest, WaitingJobIsRequeuedWhenGpusAreFreed) {
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes, StartSimulatedNodes(*client_, {"node-a"}, 1));
  ManagerOptions options = WaitingOptions();
  std::unique_ptr<ControllerManager> manager = StartManager(options);
  ASSERT_NE(manager, nullptr);
  // The node's one GPU goes to the first job; the second waits for it.
  ASSERT_OK(CreateJob("first"));
  ASSERT_TRUE(Eventually([&] { return JobPhase("first") == "Running"; })) << JobPhase("first");
  ASSERT_OK(CreateJob("second"));
  ASSERT_TRUE(Eventually([&] {
    return PlacedCondition("second", "reason") == kNotPlaceableReason;
  })) << PlacedCondition("second", "reason");
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));

  ASSERT_OK(client_->Delete(api::kTrainingJobs, "default", "first"));
  EXPECT_TRUE(Eventually([&] { return JobPhase("second") == "Running"; })) << JobPhase("second");
}

// Deleting a job re-checks the jobs waiting for GPUs once the deleted job's own reconcile has
// dropped what it reserved or nominated, even when it had no pods whose deletion would say so:
// here a suspended job, whose deletion brings one reconcile of its own and one of the waiter.
TEST_F(ManagerTest, DeletedJobRequeuesTheWaitingJobs) {
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes, StartSimulatedNodes(*client_, {"node-a"}, 1));
  ManagerOptions options = WaitingOptions();
  std::unique_ptr<ControllerManager> manager = StartManager(options);
  ASSERT_NE(manager, nullptr);
  ASSERT_OK(CreateJob("first"));
  ASSERT_TRUE(Eventually([&] { return JobPhase("first") == "Running"; })) << JobPhase("first");
  json suspended = JobManifest("suspended");
  suspended["spec"]["suspend"] = true;
  ASSERT_OK(client_->Create(api::kTrainingJobs, suspended).status());
  ASSERT_TRUE(Eventually([&] { return JobPhase("suspended") == "Suspended"; }));
  ASSERT_OK(CreateJob("second"));
  ASSERT_TRUE(Eventually([&] { return JobPhase("second") == "Planned"; })) << JobPhase("second");
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));
  const double before = ReconcileCount(manager->metrics());

  ASSERT_OK(client_->Delete(api::kTrainingJobs, "default", "suspended"));
  EXPECT_TRUE(Eventually([&] { return ReconcileCount(manager->metrics()) >= before + 2; }))
      << ReconcileCount(manager->metrics()) - before << " reconciles after the deletion";
  EXPECT_EQ(JobPhase("second"), "Planned");  // still waiting: the suspended job held no GPUs
}

// A clock whose wall time moves only when the test steps it, and whose monotonic time and waits are
// the real clock's: the manager's informers, work queue and retries run as in production while
// every wall-time decision (heartbeat ages, condition times) is the test's. Safe for concurrent
// use.
class SteppedWallClock final : public Clock {
 public:
  explicit SteppedWallClock(WallTime start) : wall_(start) {}

  MonotonicTime Now() const override { return RealClock().Now(); }
  WallTime WallNow() const override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return wall_;
  }
  void SleepFor(std::chrono::nanoseconds d) override { RealClock().SleepFor(d); }
  bool WaitUntil(absl::Mutex& mu, MonotonicTime deadline, const absl::Condition& done) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return RealClock().WaitUntil(mu, deadline, done);
  }

  void StepWall(std::chrono::seconds d) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    wall_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  WallTime wall_ ABSL_GUARDED_BY(mu_);
};

// A job that waits because the only free GPUs are on a node whose heartbeat went stale is placed
// as soon as that heartbeat moves again, not at its periodic retry (an hour here). Staleness is
// decided on the clock the manager was given (ManagerOptions::clock reaches the reconciler): in
// real time the test takes well under the 60 s heartbeat timeout.
TEST_F(ManagerTest, WaitingJobIsRequeuedWhenAHeartbeatIsFreshAgain) {
  const WallTime wall_start(std::chrono::hours(24 * 20000));
  SteppedWallClock controller_clock(wall_start);
  ::wavepool::testing::SimulatedClock agent_clock;
  ::wavepool::testing::SimulatedNodeAgents::Options agent_options;
  agent_options.clock = &agent_clock;
  agent_options.wall_start = wall_start;
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes,
                       StartSimulatedNodes(*client_, {"node-a", "node-b"}, 1, agent_options));
  ManagerOptions options = WaitingOptions();
  options.reconciler.heartbeat_timeout = std::chrono::seconds(60);
  options.clock = &controller_clock;
  std::unique_ptr<ControllerManager> manager = StartManager(options);
  ASSERT_NE(manager, nullptr);
  const auto placed_node = [&](const std::string& name) {
    absl::StatusOr<json> job = client_->Get(api::kTrainingJobs, "default", name);
    if (!job.ok()) return std::string();
    return job->value("/status/placement/0/node"_json_pointer, std::string());
  };
  // Both nodes fresh: the first job (planned on one GPU) takes one of them.
  ASSERT_OK(CreateJob("first"));
  ASSERT_TRUE(Eventually([&] { return !placed_node("first").empty(); }));
  // Its pod runs before the clocks move: the kubelet's late update would otherwise have the job
  // looked at after the step but before the busy node's next heartbeat arrives.
  ASSERT_TRUE(Eventually([&] { return JobPhase("first") == "Running"; }));
  const std::string busy = placed_node("first");
  const std::string idle = busy == "node-a" ? "node-b" : "node-a";
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));

  // Two minutes on: only the busy node's agent beat meanwhile, the idle one is stale, and the
  // second job waits.
  controller_clock.StepWall(std::chrono::seconds(120));
  agent_clock.Advance(std::chrono::seconds(120));
  ASSERT_OK(nodes.agents->Heartbeat(busy));
  ASSERT_OK(CreateJob("second"));
  ASSERT_TRUE(Eventually([&] { return PlacedCondition("second", "status") == "False"; }))
      << client_->Get(api::kTrainingJobs, "default", "second")->dump(1) << "\n"
      << client_->Get(api::kTrainingJobs, "default", "first")->dump(1);
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));
  EXPECT_EQ(placed_node("second"), "");

  // The idle node's agent beats again: the waiting job goes there at once.
  controller_clock.StepWall(std::chrono::seconds(10));
  agent_clock.Advance(std::chrono::seconds(10));
  ASSERT_OK(nodes.agents->Heartbeat(idle));
  EXPECT_TRUE(Eventually([&] { return placed_node("second") == idle; })) << placed_node("second");
}

TEST_F(ManagerTest, OnlyTheLeaseHolderReconcilesAndAStandbyTakesOver) {
  ManagerOptions options = Options();
  options.leader_elect = true;
  options.lease_name = "wavepool-controller";
  options.lease_duration = std::chrono::seconds(3);
  options.renew_deadline = std::chrono::seconds(2);
  options.retry_period = std::chrono::milliseconds(200);
  options.identity = "replica-1";
  std::unique_ptr<ControllerManager> first = StartManager(options);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(Eventually([&] { return first->IsLeader(); }));
  options.identity = "replica-2";
  std::unique_ptr<ControllerManager> second = StartManager(options);
  ASSERT_NE(second, nullptr);

  ASSERT_OK(client_->Create(kube::kPods, LabelledPod("owned", "ghost", "")).status());
  EXPECT_TRUE(Eventually([&] { return ReconcileCount(first->metrics()) >= 1; }));
  ASSERT_TRUE(first->WaitForIdle(std::chrono::seconds(10)));
  EXPECT_FALSE(second->IsLeader());
  EXPECT_EQ(ReconcileCount(second->metrics()), 0);  // its caches are warm, its workers idle
  ASSERT_OK_AND_ASSIGN(json lease, client_->Get(kube::kLeases, "default", "wavepool-controller"));
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-1");

  first->Stop();  // releases the Lease
  EXPECT_FALSE(first->IsLeader());
  ASSERT_TRUE(Eventually([&] { return second->IsLeader(); }));
  ASSERT_OK(CreateJob("after"));
  EXPECT_TRUE(Eventually([&] { return ReconcileCount(second->metrics()) >= 1; }));
  EXPECT_THAT(second->metrics().Serialize(), HasSubstr("wavepool_controller_leader 1"));
  EXPECT_THAT(first->metrics().Serialize(), HasSubstr("wavepool_controller_leader 0"));
}

}  // namespace
}  // namespace wavepool::controller
