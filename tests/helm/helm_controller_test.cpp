// The chart's controller and agent under exactly the chart's RBAC: the test API server with
// --authorization-mode=RBAC, `helm install` as admin, a ServiceAccount token per component from
// `kubectl create token`, and the real wavepool-controller and wavepool-agent binaries started
// with the container args the chart rendered for its Deployment and DaemonSet. A TrainingJob then
// runs end to end (planned, Plan ConfigMap, pods created and Running under the simulated kubelet,
// status and conditions written, Events recorded) with no request refused. The same run with one
// permission taken out of the rendered controller ClusterRole fails visibly, naming the
// Forbidden, which shows that a permission the chart lacked would fail the first test.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/helm/helm_fixture.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/child_process.h"
#include "tests/support/cluster/simulated_kubelet.h"
#include "tests/support/eventually.h"
#include "tests/support/spawn.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/yaml.h"
#include "wavepool/kube/client.h"

namespace wavepool::testing::helm {
namespace {

using apiserver::TestApiServer;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::chrono::seconds kTimeout(120);  // a safety net, never a statement about speed
constexpr std::chrono::milliseconds kPoll(200);
constexpr std::chrono::seconds kStopGrace(5);
constexpr char kNode[] = "gpu-node-0";
constexpr int kGpus = 8;
constexpr char kJob[] = "vgg16";
constexpr char kJobNamespace[] = "default";

// The string at JSON pointer `pointer` of `j` ("" when absent; other values as JSON text).
std::string At(const json& j, const std::string& pointer) {
  const json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return "";
  const json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

bool ContainsIgnoringCase(const std::string& text, const std::string& word) {
  return absl::StrContains(absl::AsciiStrToLower(text), absl::AsciiStrToLower(word));
}

// Options for a program run as a container would be: its output in <scratch>/<name>.out and
// .err, nothing on stdin, and `env` as its whole environment.
SpawnOptions ContainerOptions(const std::string& scratch, const std::string& name,
                              std::map<std::string, std::string> env) {
  SpawnOptions options = OutputFiles(scratch, name, std::move(env));
  options.in = ChildStream::File("/dev/null");
  options.inherit_environment = false;
  return options;
}

// The args of the only container of the pod template of `workload` (a Deployment or DaemonSet).
std::vector<std::string> ContainerArgs(const json& workload) {
  return Args(workload["spec"]["template"]["spec"]["containers"][0]);
}

// `args` with every `--flag=...` replaced by `--flag=value`; fails the test when the chart does
// not render the flag (the replacement would then silently add a flag the chart lacks).
std::vector<std::string> Replace(std::vector<std::string> args, const std::string& flag,
                                 const std::string& value) {
  bool found = false;
  for (std::string& a : args) {
    if (absl::StartsWith(a, flag + "=")) {
      a = flag + "=" + value;
      found = true;
    }
  }
  EXPECT_TRUE(found) << "the chart renders no " << flag;
  return args;
}

class HelmControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(HelmBinary().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no helm at " << HelmBinary() << " (scripts/install-kube-tools)";
    }
    if (::access(ToolsKubectl().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no kubectl at " << ToolsKubectl();
    }
    ASSERT_FALSE(scratch_.path().empty());
    TestApiServer::Options options;
    options.authorization_mode = apiserver::AuthorizationMode::kRbac;
    options.tls = true;  // helm and kubectl send credentials to https:// servers only
    options.store.finish_pod_deletion_after_grace = false;  // the simulated kubelet confirms
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start(options));
    admin_kubeconfig_ = scratch_.Write("admin-kubeconfig", server_->Kubeconfig());
    const CommandResult standins =
        Kubectl({"apply", "-f", SourcePath("tests/helm/testdata/standin-crds.yaml")});
    ASSERT_EQ(standins.exit_code, 0) << standins;
  }

  // The controller and the agent end as a pod's containers do: SIGTERM, then SIGKILL after a grace
  // period.
  void TearDown() override {
    if (controller_process_) controller_process_->Stop(kStopGrace);
    if (agent_process_) agent_process_->Stop(kStopGrace);
  }

  CommandResult Kubectl(std::vector<std::string> args) const {
    args.insert(args.begin(), ToolsKubectl());
    return scratch_.Run(args, admin_kubeconfig_);
  }
  CommandResult Helm(std::vector<std::string> args) const {
    args.insert(args.begin(), HelmBinary());
    return scratch_.Run(args, admin_kubeconfig_);
  }
  json GetJson(std::vector<std::string> what) const {
    what.insert(what.begin(), "get");
    what.insert(what.end(), {"-o", "json"});
    const CommandResult r = Kubectl(what);
    return r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json();
  }

  // helm install as admin, and the manifest helm installed (`helm get manifest`). The chart's
  // controller.defaultImage is set because the example job names no image; the PriorityClass is
  // left out as in helm_apiserver_test.cpp (the stand-in kind cannot take helm's patch).
  void Install() {
    const CommandResult install =
        Helm({"install", kRelease, ChartDir(), "-n", kNamespace, "--create-namespace",
              "--server-side=false", "--set",
              "backgroundPriorityClass.create=false,controller.defaultImage=wavepool/worker:e2e"});
    ASSERT_EQ(install.exit_code, 0) << install;
    const CommandResult manifest = Helm({"get", "manifest", kRelease, "-n", kNamespace});
    ASSERT_EQ(manifest.exit_code, 0) << manifest;
    ASSERT_OK_AND_ASSIGN(std::vector<api::YamlDocument> docs, api::ParseDocuments(manifest.out));
    for (api::YamlDocument& doc : docs) {
      if (!doc.value.is_null()) installed_.objects.push_back(std::move(doc.value));
    }
    controller_ = installed_.Find("Deployment", std::string(kRelease) + "-wavepool-controller");
    agent_ = installed_.Find("DaemonSet", std::string(kRelease) + "-wavepool-agent");
    ASSERT_TRUE(controller_.is_object()) << manifest.out;
    ASSERT_TRUE(agent_.is_object()) << manifest.out;
  }

  // Takes `verb` out of the rule for `resource` of the installed controller ClusterRole (what a
  // chart lacking that permission would have installed).
  void RemoveControllerPermission(const std::string& resource, const std::string& verb) {
    json& role = reduced_role_;
    if (role.is_null()) {
      role = installed_.Find("ClusterRole", std::string(kRelease) + "-wavepool-controller");
    }
    ASSERT_TRUE(role.is_object());
    bool removed = false;
    for (json& rule : role["rules"]) {
      if (rule["resources"] != json::array({resource})) continue;
      json& verbs = rule["verbs"];
      const auto before = verbs.size();
      verbs.erase(std::remove(verbs.begin(), verbs.end(), json(verb)), verbs.end());
      removed = verbs.size() < before;
    }
    ASSERT_TRUE(removed) << "the chart grants no " << verb << " on " << resource;
    const std::string file = scratch_.Write("reduced-clusterrole.json", role.dump());
    const CommandResult replace = Kubectl({"replace", "-f", file});
    ASSERT_EQ(replace.exit_code, 0) << replace;
  }

  // `kubectl create token` for the pod template's ServiceAccount, in a kubeconfig of its own.
  std::string TokenKubeconfig(const json& workload, const std::string& file) {
    const std::string account =
        workload["spec"]["template"]["spec"].value("serviceAccountName", "");
    EXPECT_FALSE(account.empty());
    const CommandResult token =
        Kubectl({"create", "token", account, "-n", kNamespace, "--duration=1h"});
    EXPECT_EQ(token.exit_code, 0) << token;
    return scratch_.Write(file, server_->KubeconfigWithToken(
                                    std::string(absl::StripTrailingAsciiWhitespace(token.out))));
  }

  // The node: the simulated kubelet registers it and runs the pods bound to it (as admin, as
  // the kubelet's own credentials would be on a cluster).
  void StartKubelet() {
    kube::ClientConfig config;
    config.server = server_->http_url();  // in this process: the plain port behind TLS
    config.bearer_token = server_->AdminToken();
    config.log = [](std::string_view) {};  // the plain-http token warning
    ASSERT_OK_AND_ASSIGN(kubelet_client_, kube::Client::Connect(config));
    SimulatedKubelet::Options options;
    options.gpus_per_node = kGpus;
    ASSERT_OK_AND_ASSIGN(kubelet_, SimulatedKubelet::Start(*kubelet_client_, {kNode}, options));
  }

  // wavepool-agent with the DaemonSet's args. Replaced, because there is no pod here:
  //  - $(NODE_NAME): the kubelet expands it from spec.nodeName (the downward API);
  //  - --dir: a hostPath volume, here a scratch directory;
  //  - --devices=auto finds no GPU on this machine: simulated:8;
  //  - --metrics-port: the pod's own network namespace; here 0 (any free port), so that nothing
  //    on this machine clashes;
  //  - --kubeconfig (added): the in-cluster configuration, i.e. the mounted ServiceAccount token,
  //    becomes a kubeconfig holding that ServiceAccount's token.
  void StartAgent() {
    std::vector<std::string> args = ContainerArgs(agent_);
    for (std::string& a : args) a = absl::StrReplaceAll(a, {{"$(NODE_NAME)", kNode}});
    const std::string dir = scratch_.path() + "/agent-dir";
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    args = Replace(args, "--dir", dir);
    args = Replace(args, "--devices", "simulated:" + std::to_string(kGpus));
    args = Replace(args, "--metrics-port", "0");
    args.push_back("--kubeconfig=" + TokenKubeconfig(agent_, "agent-kubeconfig"));
    args.insert(args.begin(), WAVEPOOL_AGENT_BIN);
    agent_process_ = std::make_unique<ChildProcess>(
        args, ContainerOptions(scratch_.path(), "agent", {{"NODE_NAME", kNode}}));
    ASSERT_OK(agent_process_->start_status());
  }

  // wavepool-controller with the Deployment's args. Replaced, because there is no pod here:
  //  - --http-port: the pod's own network namespace; here 0 (any free port);
  //  - --kubeconfig (added): the in-cluster configuration, as for the agent;
  //  - $POD_NAME (the Lease holder's identity, from the downward API) is set to a pod-like name.
  void StartController() {
    std::vector<std::string> args = Replace(ContainerArgs(controller_), "--http-port", "0");
    args.push_back("--kubeconfig=" + TokenKubeconfig(controller_, "controller-kubeconfig"));
    args.insert(args.begin(), WAVEPOOL_CONTROLLER_BIN);
    controller_process_ = std::make_unique<ChildProcess>(
        args, ContainerOptions(scratch_.path(), "controller",
                               {{"POD_NAME", "wp-wavepool-controller-0"}}));
    ASSERT_OK(controller_process_->start_status());
  }

  // Install, node, agent, controller, and the example job.
  // `removed`: (resource, verb) pairs taken out of the controller's ClusterRole first.
  void RunTheChart(const std::vector<std::pair<std::string, std::string>>& removed = {}) {
    ASSERT_NO_FATAL_FAILURE(Install());
    for (const auto& [resource, verb] : removed) {
      ASSERT_NO_FATAL_FAILURE(RemoveControllerPermission(resource, verb));
    }
    ASSERT_NO_FATAL_FAILURE(StartKubelet());
    ASSERT_NO_FATAL_FAILURE(StartAgent());
    // The agent's GPUNode, published under the agent's RBAC.
    ASSERT_TRUE(Eventually(
        [&] {
          const json node = GetJson({"gpunode", kNode});
          const json::json_pointer gpus("/status/gpus");
          return node.is_object() && node.contains(gpus) && node.at(gpus).size() == kGpus;
        },
        kTimeout, kPoll))
        << GetJson({"gpunode", kNode}).dump(2) << "\n"
        << Logs();
    ASSERT_NO_FATAL_FAILURE(StartController());
    const CommandResult job =
        Kubectl({"apply", "-f", SourcePath("examples/vgg16-foreground.yaml")});
    ASSERT_EQ(job.exit_code, 0) << job;
  }

  std::string Logs() const {
    std::string logs;
    if (controller_process_) {
      logs += "controller:\n" + controller_process_->out() + controller_process_->err() + "\n";
    }
    if (agent_process_) {
      logs += "agent:\n" + agent_process_->out() + agent_process_->err() + "\n";
    }
    return logs;
  }

  json Job() const { return GetJson({"trainingjob", kJob, "-n", kJobNamespace}); }
  std::vector<json> JobPods() const {
    const json pods =
        GetJson({"pods", "-n", kJobNamespace, "-l", std::string("wavepool.dev/job=") + kJob});
    if (!pods.is_object() || !pods.contains("items")) return {};
    return pods["items"].get<std::vector<json>>();
  }
  // The messages of the Events about the job (and its pods) in its namespace.
  std::string EventMessages() const {
    const json events = GetJson({"events", "-n", kJobNamespace});
    std::string text;
    if (!events.is_object() || !events.contains("items")) return text;
    for (const json& e : events["items"]) {
      text += e.value("reason", "") + ": " + e.value("message", "") + "\n";
    }
    return text;
  }

  Scratch scratch_;
  std::unique_ptr<TestApiServer> server_;
  std::string admin_kubeconfig_;
  Rendered installed_;
  json controller_, agent_;
  json reduced_role_;  // the controller ClusterRole as RemoveControllerPermission left it
  std::unique_ptr<kube::Client> kubelet_client_;
  std::unique_ptr<SimulatedKubelet> kubelet_;
  std::unique_ptr<ChildProcess> agent_process_, controller_process_;
};

TEST_F(HelmControllerTest, ChartRbacIsEnoughToRunAJobEndToEnd) {
  ASSERT_NO_FATAL_FAILURE(RunTheChart());
  json job;
  ASSERT_TRUE(Eventually(
      [&] {
        job = Job();
        return At(job, "/status/phase") == "Running";
      },
      kTimeout, kPoll))
      << job.dump(2) << "\n"
      << Logs() << EventMessages();
  // Planned, with its Plan ConfigMap; conditions written.
  EXPECT_NE(At(job, "/status/plan/strategy"), "") << job.dump(2);
  EXPECT_NE(At(job, "/status/conditions/0/type"), "") << job.dump(2);
  const json plan = GetJson({"configmap", std::string(kJob) + "-plan", "-n", kJobNamespace});
  ASSERT_TRUE(plan.is_object());
  EXPECT_TRUE(plan["data"].contains("plan.json"));
  // Placed: pods on the node, Running.
  const std::vector<json> pods = JobPods();
  ASSERT_FALSE(pods.empty());
  for (const json& pod : pods) {
    EXPECT_EQ(At(pod, "/spec/nodeName"), kNode);
    EXPECT_EQ(At(pod, "/status/phase"), "Running") << At(pod, "/metadata/name");
  }
  // Events recorded (the controller's Event writes are allowed), and the Lease held.
  EXPECT_TRUE(Eventually([&] { return !EventMessages().empty(); }, kTimeout, kPoll));
  const json lease = GetJson({"lease", "wavepool-controller", "-n", kNamespace});
  ASSERT_TRUE(lease.is_object()) << Logs();
  EXPECT_EQ(At(lease, "/spec/holderIdentity"), "wp-wavepool-controller-0");
  // A headless Service for the gang.
  const json services =
      GetJson({"services", "-n", kJobNamespace, "-l", std::string("wavepool.dev/job=") + kJob});
  ASSERT_TRUE(services.is_object());
  EXPECT_FALSE(services.value("items", json::array()).empty()) << services.dump(2);
  // No request of either component was refused on the way: none answered 401 or 403 (whatever
  // the components log), and neither logs a Forbidden.
  EXPECT_THAT(server_->Refusals(), ::testing::IsEmpty()) << Logs();
  EXPECT_TRUE(controller_process_->Running()) << Logs();
  EXPECT_TRUE(agent_process_->Running()) << Logs();
  EXPECT_FALSE(ContainsIgnoringCase(Logs(), "forbidden")) << Logs();
  EXPECT_FALSE(ContainsIgnoringCase(EventMessages(), "forbidden")) << EventMessages();

  // Deleting the job removes what it owned, still without a refusal.
  const CommandResult del = Kubectl({"delete", "trainingjob", kJob, "-n", kJobNamespace});
  ASSERT_EQ(del.exit_code, 0) << del;
  EXPECT_TRUE(Eventually([&] { return JobPods().empty(); }, kTimeout, kPoll)) << Logs();
  EXPECT_THAT(server_->Refusals(), ::testing::IsEmpty()) << Logs();
}

// Without pods create the job never gets its pods, and the refusal is named.
TEST_F(HelmControllerTest, WithoutPodsCreateTheJobGetsNoPodsAndTheForbiddenIsNamed) {
  ASSERT_NO_FATAL_FAILURE(RunTheChart({{"pods", "create"}}));
  const std::string forbidden =
      "pods is forbidden: User \"system:serviceaccount:wavepool-system:wp-wavepool-controller\" "
      "cannot create resource \"pods\" in API group \"\" in the namespace \"default\"";
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(Logs() + EventMessages(), forbidden); },
                         kTimeout, kPoll))
      << Logs() << EventMessages();
  EXPECT_THAT(server_->Refusals(), ::testing::Contains(forbidden));
  EXPECT_THAT(JobPods(), ::testing::IsEmpty());
  EXPECT_NE(At(Job(), "/status/phase"), "Running") << Job().dump(2);
}

// Without trainingjobs/status update and patch the job never gets a status.
TEST_F(HelmControllerTest, WithoutJobStatusWritesTheJobGetsNoStatusAndTheForbiddenIsNamed) {
  ASSERT_NO_FATAL_FAILURE(
      RunTheChart({{"trainingjobs/status", "update"}, {"trainingjobs/status", "patch"}}));
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string text = Logs() + EventMessages();
        return absl::StrContains(text, "trainingjobs.wavepool.dev \"vgg16\" is forbidden") &&
               absl::StrContains(text,
                                 "resource \"trainingjobs/status\" in API group "
                                 "\"wavepool.dev\" in the namespace \"default\"");
      },
      kTimeout, kPoll))
      << Logs() << EventMessages();
  EXPECT_EQ(At(Job(), "/status/phase"), "") << Job().dump(2);
  EXPECT_THAT(server_->Refusals(),
              ::testing::Contains(HasSubstr("cannot update resource \"trainingjobs/status\"")));
}

}  // namespace
}  // namespace wavepool::testing::helm
