// A whole simulated cluster in one test process, for the controller's integration and fault
// tests: the embedded test API server (pod deletion confirmed only by the kubelet, as on a real
// cluster), the wavepool.dev CRDs, a SimulatedKubelet and SimulatedNodeAgents for N nodes x G
// GPUs (heartbeats on the real clock), and an in-process ControllerManager with short timings
// that a test can stop, restart or double.
//
//   ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(/*nodes=*/2, /*gpus_per_node=*/8));
//   ASSERT_OK(cluster->CreateJobFromExample("vgg16-foreground.yaml").status());
//   ASSERT_OK(cluster->CreateJob(BackgroundJob("bg")).status());
//   ASSERT_OK_AND_ASSIGN(auto job, cluster->WaitForJob("vgg16", PhaseIs(JobPhase::kRunning)));
//   EXPECT_THAT(cluster->PodsOfJob("vgg16"), SizeIs(8));
//   ASSERT_OK(cluster->FailPod("default", job.status.placement[0].pod));
//   ASSERT_OK(cluster->NodeDown("node-1"));
//   ASSERT_OK(cluster->RestartController());
//
// Nodes are "node-0" .. "node-<N-1>" (AddNode adds more); GPU UUIDs are
// SimulatedNodeAgents::GpuUuid(node, index), "GPU-node-0-3". Everything runs on the real clock:
// waits poll the API server until a condition holds and return an error carrying the last state
// seen after a generous timeout, a safety net rather than a timing assertion.
//
// Thread-compatible: one test thread drives it (the pieces it starts run their own threads).
// The destructor stops the controller, the agents, the kubelets and then the server, and removes
// the server's data directory when there is one.
#ifndef WAVEPOOL_TESTS_SUPPORT_CLUSTER_TEST_CLUSTER_H_
#define WAVEPOOL_TESTS_SUPPORT_CLUSTER_TEST_CLUSTER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/cluster/simulated_kubelet.h"
#include "tests/support/cluster/simulated_node_agent.h"
#include "tests/support/temp_dir.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/manager.h"
#include "wavepool/kube/client.h"

namespace wavepool::testing {

// What a wait is given when the test names none: long enough for a loaded machine, never a
// statement about speed.
inline constexpr std::chrono::seconds kDefaultWaitTimeout{90};

using JobPredicate = std::function<bool(const api::TrainingJob&)>;

// status.phase == `phase`.
JobPredicate PhaseIs(api::JobPhase phase);
// The condition `type` has `status` ("True", "False", "Unknown"); with a reason when not empty.
JobPredicate ConditionIs(std::string_view type, std::string_view status,
                         std::string_view reason = "");

// A Foreground TrainingJob `name` in namespace default: resnet50, data parallel on `gpus` GPUs
// (global batch 32 x gpus), 100000 steps. JSON, to adjust before CreateJob.
nlohmann::json ForegroundJob(std::string_view name, std::int64_t gpus);
// A Background TrainingJob `name`: resnet50 on one GPU, batch 32, checkpoint /checkpoints/<name>.
nlohmann::json BackgroundJob(std::string_view name);

class TestCluster {
 public:
  struct Options {
    int nodes = 2;  // "node-0" .. "node-<nodes-1>"
    std::int64_t gpus_per_node = 8;
    std::int64_t gpu_memory_bytes = std::int64_t{80} << 30;  // H100 80 GB
    std::chrono::nanoseconds heartbeat_period = std::chrono::milliseconds(500);
    // Deletion requested -> the kubelet confirms the pod gone (SimulatedKubelet::Options).
    std::chrono::nanoseconds pod_stop_delay{0};
    bool start_controller = true;
    bool leader_election = false;
    int http_port = -1;                 // the controller's; 0 for an ephemeral port
    bool print_controller_log = false;  // to stderr as well as the log kept for messages
    // The server keeps its objects in a temporary directory (removed with the cluster), so that
    // they and the resourceVersion counter survive server().Restart().
    bool persistent = false;
  };

  // REQUIRES: options.nodes >= 1. Errors are the first piece's that failed to start.
  static absl::StatusOr<std::unique_ptr<TestCluster>> Start(Options options);
  // The default options with `nodes` x `gpus_per_node` GPUs.
  static absl::StatusOr<std::unique_ptr<TestCluster>> Start(int nodes, std::int64_t gpus_per_node);
  ~TestCluster();
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  apiserver::TestApiServer& server() { return *server_; }
  kube::Client& client() { return *client_; }  // the test's own client
  // The kubelet and agents that run `node`; REQUIRES: the node exists.
  SimulatedKubelet& KubeletOf(std::string_view node);
  SimulatedNodeAgents& AgentsOf(std::string_view node);
  std::vector<std::string> NodeNames() const;

  // The controller. ControllerOptions() are the short test timings StartController uses
  // (waiting requeue 1 s, restart backoff 1-2 s, heartbeat timeout 10 s, lease 2 s/1.5 s/0.25 s,
  // default image "wavepool/worker:test"); adjust a copy and pass it for other settings.
  controller::ManagerOptions ControllerOptions() const;
  absl::Status StartController();
  absl::Status StartController(controller::ManagerOptions options);
  void StopController();             // idempotent
  absl::Status RestartController();  // Stop, then Start with the options last used
  controller::ControllerManager* controller() { return controller_.get(); }  // null: stopped
  // Another replica, started, owned by the caller (leader-election tests). It must be destroyed
  // before this cluster.
  absl::StatusOr<std::unique_ptr<controller::ControllerManager>> NewController(
      controller::ManagerOptions options);
  // The controller log lines kept so far (the last 400), one per element.
  std::vector<std::string> ControllerLog() const ABSL_LOCKS_EXCLUDED(log_mu_);

  // Nodes. AddNode starts a kubelet and an agent for one more node. NodeDown: the node's Ready
  // condition turns Unknown (its pods freeze) and its agent stops heartbeating; NodeUp undoes it.
  absl::Status AddNode(std::string_view node, std::int64_t gpus);
  absl::Status NodeDown(std::string_view node);
  absl::Status NodeUp(std::string_view node);
  // Stops every kubelet and starts a new one for the same nodes, which looks at every pod afresh
  // (a simulated kubelet does not retry a status write that failed while the server was away).
  // REQUIRES: no node is down (a new kubelet starts with every node Ready).
  absl::Status RestartKubelets();

  // Jobs, created as given (the namespace defaults to "default"): from JSON, from one YAML or
  // JSON document, or from examples/<file>.
  absl::StatusOr<api::TrainingJob> CreateJob(nlohmann::json job);
  absl::StatusOr<api::TrainingJob> CreateJobFromYaml(std::string_view yaml);
  absl::StatusOr<api::TrainingJob> CreateJobFromExample(std::string_view file);
  absl::StatusOr<api::TrainingJob> GetJob(std::string_view name, std::string_view ns = "default");
  absl::Status DeleteJob(std::string_view name, std::string_view ns = "default");
  // Merge-patches the job's spec (e.g. {"suspend": true}).
  absl::Status PatchJobSpec(std::string_view name, const nlohmann::json& spec_patch,
                            std::string_view ns = "default");

  // Polls until the job satisfies `done`; DeadlineExceeded after `timeout` with the job's last
  // status (YAML) and the controller's last log lines in the message.
  absl::StatusOr<api::TrainingJob> WaitForJob(
      std::string_view name, const JobPredicate& done,
      std::chrono::nanoseconds timeout = kDefaultWaitTimeout, std::string_view ns = "default");
  // Polls until `done()`; DeadlineExceeded naming `what` after `timeout`.
  absl::Status WaitUntil(std::string_view what, const std::function<bool()>& done,
                         std::chrono::nanoseconds timeout = kDefaultWaitTimeout);

  // Pods. PodsOfJob: the job's pods (JobSelector), terminating ones included, sorted by name.
  std::vector<nlohmann::json> PodsOfJob(std::string_view job, std::string_view ns = "default");
  // The job's Services (JobSelector): its gangs' rendezvous Services, sorted by name.
  std::vector<nlohmann::json> ServicesOfJob(std::string_view job, std::string_view ns = "default");
  // Every controller-owned pod in every namespace (managed-by label).
  std::vector<nlohmann::json> OwnedPods();
  std::size_t OwnedPodCount() { return OwnedPods().size(); }
  // The pod fails (phase Failed, containers terminated with `exit_code`), on whichever kubelet
  // runs its node.
  absl::Status FailPod(std::string_view ns, std::string_view pod, std::int64_t exit_code = 1,
                       std::string_view reason = "Error");
  // Events whose involvedObject is the TrainingJob `job`.
  std::vector<nlohmann::json> EventsOf(std::string_view job, std::string_view ns = "default");
  // The ConfigMap, or NotFound.
  absl::StatusOr<nlohmann::json> GetConfigMap(std::string_view name,
                                              std::string_view ns = "default");

 private:
  struct Member;  // one kubelet + agents pair, for the nodes it was started with
  explicit TestCluster(Options options);
  absl::Status StartMember(std::vector<std::string> nodes, std::int64_t gpus);
  Member* MemberOf(std::string_view node);
  void Log(std::string_view line) ABSL_LOCKS_EXCLUDED(log_mu_);

  Options options_;
  TempDir data_dir_;  // the server's, when options_.persistent; outlives server_
  std::unique_ptr<apiserver::TestApiServer> server_;
  std::unique_ptr<kube::Client> client_;             // the test's and the simulated cluster's
  std::unique_ptr<kube::Client> controller_client_;  // the controller's own connection
  std::vector<std::unique_ptr<Member>> members_;
  controller::ManagerOptions controller_options_;
  std::unique_ptr<controller::ControllerManager> controller_;

  // The controllers' log callbacks run on their threads.
  mutable absl::Mutex log_mu_;
  std::deque<std::string> log_ ABSL_GUARDED_BY(log_mu_);
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CLUSTER_TEST_CLUSTER_H_
