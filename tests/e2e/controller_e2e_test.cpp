// End to end as an operator meets it: the real `wavepool-controller` binary as a child process,
// the real kubectl (1.32 from /usr/bin, 1.33 from the tools directory) applying crds/ and
// examples/, and a simulated cluster (kubelet and node agents, one node of 8 H100s) in this
// process. The API server is the embedded TestApiServer rather than the wavepool-test-apiserver
// binary: the simulated kubelet and agents run in this process anyway, and embedding it needs
// no port discovery or second child to clean up; the controller and kubectl still reach it only
// over HTTP through a kubeconfig, as they would a real cluster.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/cluster/cluster_server.h"
#include "tests/support/cluster/simulated_kubelet.h"
#include "tests/support/cluster/simulated_node_agent.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/http_get.h"
#include "tests/support/kubectl.h"
#include "tests/support/spawn.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/api/training_job.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/resource.h"

namespace wavepool::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr std::chrono::seconds kTimeout(120);    // a safety net, never a statement about speed
constexpr std::chrono::milliseconds kPoll(100);  // each poll runs kubectl or an HTTP GET
const std::string kSource = WAVEPOOL_SOURCE_DIR;
const std::string kNode = "node-0";

// GET http://127.0.0.1:<port><path>: "<status code> <body>", or "" when the connection fails.
std::string StatusAndBody(int port, const std::string& path) {
  absl::StatusOr<HttpResponse> response = HttpGet(port, path);
  return response.ok() ? std::to_string(response->status) + " " + response->body : "";
}

class ControllerE2eTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (::access(GetParam().c_str(), X_OK) != 0) GTEST_SKIP() << "no kubectl at " << GetParam();
    ASSERT_OK_AND_ASSIGN(server_, apiserver::TestApiServer::Start(ClusterServerOptions()));
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-controller-e2e"));
    dir_ = temp_dir_.path();
    ASSERT_OK(WriteFile(dir_ + "/kubeconfig", server_->Kubeconfig()));
    kube::ClientConfig config;
    config.server = server_->url();
    ASSERT_OK_AND_ASSIGN(client_, kube::Client::Connect(config));
  }

  void TearDown() override {
    if (controller_pid_ > 0) KillChild(controller_pid_);
    agents_.reset();
    kubelet_.reset();
    server_.reset();
  }

  KubectlResult Kubectl(const std::vector<std::string>& args) {
    return KubectlRunner(GetParam(), dir_).Run(args);
  }

  // What an operator does first: the CRDs, the controller's namespace; then the nodes join.
  void InstallAndStartNodes() {
    const KubectlResult crds = Kubectl({"apply", "-f", kSource + "/crds/"});
    ASSERT_EQ(crds.exit_code, 0) << crds;
    const KubectlResult ns = Kubectl({"create", "namespace", "wavepool-system"});
    ASSERT_EQ(ns.exit_code, 0) << ns;
    SimulatedKubelet::Options kubelet_options;
    kubelet_options.gpus_per_node = 8;
    ASSERT_OK_AND_ASSIGN(kubelet_, SimulatedKubelet::Start(*client_, {kNode}, kubelet_options));
    SimulatedNodeAgents::Options agent_options;
    agent_options.heartbeat_period = std::chrono::seconds(1);
    ASSERT_OK_AND_ASSIGN(
        agents_, SimulatedNodeAgents::Start(*client_, SimulatedNodeAgents::Uniform({kNode}, 8),
                                            agent_options));
  }

  // Starts wavepool-controller with leader election and an ephemeral HTTP port, and reads the
  // port from the line it prints once started.
  void StartController() {
    const std::vector<std::string> args = {WAVEPOOL_CONTROLLER_BIN,
                                           "--kubeconfig=" + dir_ + "/kubeconfig",
                                           "--leader-elect=true",
                                           "--identity=e2e-controller",
                                           "--http-address=127.0.0.1",
                                           "--http-port=0",
                                           "--default-image=wavepool/worker:e2e"};
    SpawnOptions options;
    options.out = ChildStream::File(dir_ + "/controller.out");
    options.err = ChildStream::File(dir_ + "/controller.err");
    options.inherit_environment = false;  // an empty environment
    ASSERT_OK_AND_ASSIGN(controller_pid_, Spawn(args, options));
    std::smatch match;
    const std::regex http(R"(http 127\.0\.0\.1:(\d+))");
    ASSERT_TRUE(Eventually(
        [&] {
          const std::string out = ReadFileOrEmpty(dir_ + "/controller.out");
          if (!std::regex_search(out, match, http)) return false;
          http_port_ = std::stoi(match[1].str());
          return true;
        },
        kTimeout, kPoll))
        << ControllerOutput();
  }

  std::string ControllerOutput() {
    return "controller stdout:\n" + ReadFileOrEmpty(dir_ + "/controller.out") +
           "\ncontroller stderr:\n" + ReadFileOrEmpty(dir_ + "/controller.err");
  }

  // The `kubectl get tj` row of `name`, words split on blanks; empty when absent.
  std::vector<std::string> TjRow(const std::string& name) {
    const KubectlResult get = Kubectl({"get", "tj"});
    for (const std::vector<std::string>& row : TableWords(get.out)) {
      if (!row.empty() && row[0] == name) return row;
    }
    return {};
  }

  // Reports `step` and `slowdown` for every pod of the job on its GPUs, as the agent does.
  void PublishProgress(const std::string& job_name, std::int64_t step, double slowdown) {
    ASSERT_OK_AND_ASSIGN(nlohmann::json json,
                         client_->Get(api::kTrainingJobs, "default", job_name));
    ASSERT_OK_AND_ASSIGN(api::TrainingJob job, api::TrainingJob::FromJson(json));
    ASSERT_OK_AND_ASSIGN(api::GpuNodeStatus status, agents_->PublishedStatus(kNode));
    for (const api::PodPlacement& placement : job.status.placement) {
      for (const api::GpuStatus& gpu : status.gpus) {
        if (gpu.uuid != placement.gpu_uuids.at(0)) continue;
        api::GpuTask task;
        task.namespace_ = "default";
        task.job = job_name;
        task.pod = placement.pod;
        task.role = api::Role::kForeground;
        task.pid = 100 + gpu.index;
        task.progress = api::TrainingProgress{step, 100, 0.2, slowdown};
        ASSERT_OK(agents_->SetTasks(kNode, gpu.index, {task}));
      }
    }
  }

  std::unique_ptr<apiserver::TestApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<SimulatedKubelet> kubelet_;
  std::unique_ptr<SimulatedNodeAgents> agents_;
  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
  pid_t controller_pid_ = -1;
  int http_port_ = -1;
};

TEST_P(ControllerE2eTest, ExamplesRunUnderTheControllerBinaryAndDeleteCleanly) {
  ASSERT_NO_FATAL_FAILURE(InstallAndStartNodes());
  ASSERT_NO_FATAL_FAILURE(StartController());
  EXPECT_THAT(StatusAndBody(http_port_, "/healthz"), Eq("200 ok")) << ControllerOutput();
  ASSERT_TRUE(
      Eventually([&] { return StatusAndBody(http_port_, "/readyz") == "200 ok"; }, kTimeout, kPoll))
      << StatusAndBody(http_port_, "/readyz") << "\n"
      << ControllerOutput();

  // Both examples fit one node of 8 x 80 GiB: vgg16 on all 8 GPUs, resnet50 next to it.
  const KubectlResult apply = Kubectl({"apply", "-f", kSource + "/examples/vgg16-foreground.yaml",
                                       "-f", kSource + "/examples/resnet50-background.yaml"});
  ASSERT_EQ(apply.exit_code, 0) << apply;
  ASSERT_TRUE(Eventually(
      [&] {
        const std::vector<std::string> fg = TjRow("vgg16"), bg = TjRow("resnet50-background");
        return fg.size() > 2 && fg[2] == "Running" && bg.size() > 2 && bg[2] == "Running";
      },
      kTimeout, kPoll))
      << Kubectl({"get", "tj", "-o", "yaml"}) << ControllerOutput();

  const KubectlResult table = Kubectl({"get", "tj"});
  ASSERT_EQ(table.exit_code, 0) << table;
  ASSERT_FALSE(TableWords(table.out).empty());
  EXPECT_THAT(TableWords(table.out)[0],
              ElementsAre("NAME", "ROLE", "PHASE", "GPUS", "STRATEGY", "ITER", "SLOWDOWN", "AGE"));
  const KubectlResult strategy =
      Kubectl({"get", "tj", "vgg16", "-o", "jsonpath={.status.plan.strategy}"});
  ASSERT_EQ(strategy.exit_code, 0) << strategy;
  ASSERT_FALSE(strategy.out.empty()) << "status.plan.strategy is set once planned";

  // Progress the agent publishes shows in the Iter and Slowdown columns.
  ASSERT_NO_FATAL_FAILURE(PublishProgress("vgg16", 42, 1.05));
  std::vector<std::string> row;
  ASSERT_TRUE(Eventually(
      [&] {
        row = TjRow("vgg16");
        return row.size() == 8 && row[5] == "42";
      },
      kTimeout, kPoll))
      << table.out;
  // GPUS is what the plan uses (at most spec.gpus: 8).
  const KubectlResult plan_gpus = Kubectl({"get", "tj", "vgg16", "-o", "jsonpath={.status.gpus}"});
  ASSERT_EQ(plan_gpus.exit_code, 0) << plan_gpus;
  ASSERT_FALSE(plan_gpus.out.empty()) << "status.gpus is set once planned";
  EXPECT_GE(std::stoi(plan_gpus.out), 1);
  EXPECT_LE(std::stoi(plan_gpus.out), 8);
  EXPECT_THAT(row, ElementsAre("vgg16", "Foreground", "Running", plan_gpus.out, strategy.out, "42",
                               "1.05", ::testing::_));
  const std::vector<std::string> bg_row = TjRow("resnet50-background");
  ASSERT_GE(bg_row.size(), 4u) << Kubectl({"get", "tj"}).out;
  EXPECT_THAT(std::vector<std::string>(bg_row.begin(), bg_row.begin() + 4),
              ElementsAre("resnet50-background", "Background", "Running", "1"));
  // -o wide: RESTARTS shows 0 (not a blank) for a job that never restarted; MAXGPUS is spec.gpus.
  const KubectlResult wide = Kubectl({"get", "tj", "vgg16", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide;
  const auto wide_rows = TableWords(wide.out);
  ASSERT_THAT(wide_rows, SizeIs(2)) << wide.out;
  EXPECT_THAT(wide_rows[0].back(), Eq("MAXGPUS")) << wide.out;
  EXPECT_THAT(std::vector<std::string>(wide_rows[1].end() - 2, wide_rows[1].end()),
              ElementsAre("0", "8"))
      << wide.out;

  const KubectlResult pods = Kubectl({"get", "pods", "-l", "wavepool.dev/job=vgg16"});
  ASSERT_EQ(pods.exit_code, 0) << pods;
  const auto pod_rows = TableWords(pods.out);
  ASSERT_THAT(pod_rows, SizeIs(9)) << pods.out;  // header + 8 ranks
  for (std::size_t i = 1; i < pod_rows.size(); ++i) {
    EXPECT_THAT(pod_rows[i][0], HasSubstr("vgg16-g")) << pods.out;
    EXPECT_THAT(pod_rows[i][2], Eq("Running")) << pods.out;
  }

  const KubectlResult del = Kubectl({"delete", "tj", "vgg16", "resnet50-background"});
  ASSERT_EQ(del.exit_code, 0) << del;
  ASSERT_TRUE(Eventually(
      [&] {
        const KubectlResult left =
            Kubectl({"get", "pods", "-l", "app.kubernetes.io/managed-by=wavepool-controller", "-o",
                     "name"});
        return left.exit_code == 0 && left.out.empty();
      },
      kTimeout, kPoll))
      << Kubectl({"get", "pods", "-A"});

  // SIGTERM; SIGKILL (not an exit) if it is still running after kTimeout.
  const std::optional<int> status = StopChild(controller_pid_, kTimeout);
  controller_pid_ = -1;
  ASSERT_TRUE(status.has_value()) << ControllerOutput();
  ASSERT_TRUE(WIFEXITED(*status)) << ControllerOutput();
  EXPECT_THAT(WEXITSTATUS(*status), Eq(0)) << ControllerOutput();
}

// An operator who skipped `kubectl create namespace wavepool-system`: the controller says so on
// stderr, naming the namespace, and stays unready (not crashing) until the namespace exists.
TEST_P(ControllerE2eTest, MissingLeaseNamespaceIsNamedAndKeepsTheControllerUnready) {
  const KubectlResult crds = Kubectl({"apply", "-f", kSource + "/crds/"});
  ASSERT_EQ(crds.exit_code, 0) << crds;
  ASSERT_NO_FATAL_FAILURE(StartController());
  std::string ready;
  ASSERT_TRUE(Eventually(
      [&] {
        ready = StatusAndBody(http_port_, "/readyz");
        return ready.find("namespace wavepool-system does not exist") != std::string::npos;
      },
      kTimeout, kPoll))
      << ready << "\n"
      << ControllerOutput();
  EXPECT_THAT(ready, HasSubstr("503"));
  EXPECT_THAT(ReadFileOrEmpty(dir_ + "/controller.err"),
              HasSubstr("namespace wavepool-system does not exist"));
  EXPECT_THAT(StatusAndBody(http_port_, "/healthz"), Eq("200 ok"));

  const KubectlResult ns = Kubectl({"create", "namespace", "wavepool-system"});
  ASSERT_EQ(ns.exit_code, 0) << ns;
  EXPECT_TRUE(
      Eventually([&] { return StatusAndBody(http_port_, "/readyz") == "200 ok"; }, kTimeout, kPoll))
      << StatusAndBody(http_port_, "/readyz") << "\n"
      << ControllerOutput();
}

INSTANTIATE_TEST_SUITE_P(Kubectl, ControllerE2eTest,
                         ::testing::Values("/usr/bin/kubectl", std::string(WAVEPOOL_SOURCE_DIR) +
                                                                   "/.tools/bin/kubectl"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.index == 0 ? std::string("Kubectl132")
                                                   : std::string("Kubectl133");
                         });

}  // namespace
}  // namespace wavepool::testing
