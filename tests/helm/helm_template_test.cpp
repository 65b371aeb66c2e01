// helm lint and helm template of helm/wavepool, with the default values and with
// testdata/nondefault-values.yaml: the objects rendered and their key fields (probes, security
// contexts, the agent's host access, flags that exist in the binaries, the CRDs of crds/), and
// values the schema or the templates refuse.
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/helm/helm_fixture.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/yaml.h"

namespace wavepool::testing::helm {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

class HelmTemplateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(HelmBinary().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no helm at " << HelmBinary() << " (scripts/install-kube-tools)";
    }
    ASSERT_FALSE(scratch_.path().empty());
  }

  CommandResult Helm(std::vector<std::string> args) const {
    args.insert(args.begin(), HelmBinary());
    return scratch_.Run(args);
  }

  static std::string NonDefaultValues() {
    return SourcePath("tests/helm/testdata/nondefault-values.yaml");
  }

  Scratch scratch_;
};

json OnlyContainer(const json& workload) {
  const json& containers = workload["spec"]["template"]["spec"]["containers"];
  EXPECT_EQ(containers.size(), 1u) << workload["metadata"];
  return containers.empty() ? json::object() : containers[0];
}

// Every `--flag` the chart passes must be one the binary defines (CLI11 `"--flag"` in its main).
void ExpectFlagsDefinedIn(const std::vector<std::string>& args, const std::string& main_source) {
  const std::string source = ReadFileOrEmpty(SourcePath(main_source));
  ASSERT_FALSE(source.empty()) << main_source;
  for (const std::string& arg : args) {
    const std::string flag = arg.substr(0, arg.find('='));
    EXPECT_THAT(source, HasSubstr("\"" + flag + "\""))
        << flag << " is not a flag of " << main_source;
  }
}

std::set<std::string> Kinds(const Rendered& r) {
  std::set<std::string> kinds;
  for (const json& o : r.objects) kinds.insert(o["kind"].get<std::string>());
  return kinds;
}

TEST_F(HelmTemplateTest, LintStrictPassesWithDefaultAndNonDefaultValues) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"-f", NonDefaultValues()},
        std::vector<std::string>{"--set",
                                 "controller.replicas=1,controller.leaderElection.enabled=false,"
                                 "agent.privileged=false,backgroundPriorityClass.enabled=false"}}) {
    std::vector<std::string> args = {"lint", "--strict", ChartDir(), "-n", kNamespace};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult lint = Helm(args);
    EXPECT_EQ(lint.exit_code, 0) << lint;
    EXPECT_THAT(lint.out, HasSubstr("1 chart(s) linted, 0 chart(s) failed")) << lint;
    EXPECT_THAT(lint.out, Not(HasSubstr("[WARNING]"))) << lint;
    EXPECT_THAT(lint.out, Not(HasSubstr("[ERROR]"))) << lint;
  }
}

TEST_F(HelmTemplateTest, DefaultValuesRenderTheControllerAgentRbacAndCrds) {
  ASSERT_OK_AND_ASSIGN(Rendered r, Render(scratch_, ChartDir(), {}));
  EXPECT_THAT(Kinds(r),
              UnorderedElementsAre("PriorityClass", "ServiceAccount", "CustomResourceDefinition",
                                   "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                                   "Service", "DaemonSet", "Deployment"));
  for (const json& o : r.objects) {
    EXPECT_EQ(o["metadata"]["labels"].value("app.kubernetes.io/instance", ""), kRelease)
        << o["metadata"];
  }

  // The controller: two replicas on a Lease in the release namespace, probes, non-root.
  const json deployment = r.Find("Deployment", "wp-wavepool-controller");
  ASSERT_TRUE(deployment.is_object());
  EXPECT_EQ(deployment["metadata"]["namespace"], kNamespace);
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  const json pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "wp-wavepool-controller");
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  const json controller = OnlyContainer(deployment);
  const std::vector<std::string> args = Args(controller);
  EXPECT_THAT(FlagValues(args, "--leader-elect"), ElementsAre("true"));
  EXPECT_THAT(FlagValues(args, "--lease-namespace"), ElementsAre(kNamespace));
  EXPECT_THAT(FlagValues(args, "--lease-name"), ElementsAre("wavepool-controller"));
  EXPECT_THAT(FlagValues(args, "--http-port"), ElementsAre("8080"));
  EXPECT_THAT(FlagValues(args, "--heartbeat-timeout"), ElementsAre("60"));
  EXPECT_THAT(FlagValues(args, "--pod-start-timeout"), ElementsAre("600"));
  EXPECT_THAT(FlagValues(args, "--cheating-quarantine"), ElementsAre("600"));
  EXPECT_THAT(FlagValues(args, "--agent-dir"), ElementsAre("/var/run/wavepool"));
  EXPECT_THAT(FlagValues(args, "--agent-socket-gid"), IsEmpty());  // no socket group
  EXPECT_THAT(FlagValues(args, "--background-priority-class"), ElementsAre("wavepool-background"));
  EXPECT_THAT(FlagValues(args, "--background-grace-seconds"), ElementsAre("120"));
  EXPECT_THAT(FlagValues(args, "--namespace"), IsEmpty());      // every namespace
  EXPECT_THAT(FlagValues(args, "--default-image"), IsEmpty());  // jobs name their image
  ExpectFlagsDefinedIn(args, "controller/controller_main.cpp");
  EXPECT_EQ(controller["ports"][0]["name"], "http");
  EXPECT_EQ(controller["ports"][0]["containerPort"], 8080);
  EXPECT_EQ(controller["livenessProbe"]["httpGet"], json({{"path", "/healthz"}, {"port", "http"}}));
  EXPECT_EQ(controller["readinessProbe"]["httpGet"], json({{"path", "/readyz"}, {"port", "http"}}));
  const json sc = controller["securityContext"];
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
  EXPECT_EQ(sc["runAsNonRoot"], true);
  EXPECT_EQ(sc["capabilities"]["drop"], json({"ALL"}));
  EXPECT_FALSE(sc["capabilities"].contains("add"));
  EXPECT_EQ(sc["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_TRUE(controller["resources"]["requests"].contains("cpu"));
  EXPECT_TRUE(controller["resources"]["limits"].contains("memory"));
  EXPECT_EQ(controller["env"][0]["name"], "POD_NAME");  // the Lease's holder identity
  EXPECT_EQ(controller["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name");

  // The agent: managed nodes, host pid namespace, the host directory, GPU taints tolerated.
  const json daemonset = r.Find("DaemonSet", "wp-wavepool-agent");
  ASSERT_TRUE(daemonset.is_object());
  const json agent_pod = daemonset["spec"]["template"]["spec"];
  EXPECT_EQ(agent_pod["hostPID"], true);
  EXPECT_FALSE(agent_pod.contains("hostNetwork"));
  EXPECT_FALSE(agent_pod.contains("hostIPC"));
  EXPECT_EQ(agent_pod["nodeSelector"], json({{"wavepool.dev/managed", "true"}}));
  EXPECT_EQ(agent_pod["priorityClassName"], "system-node-critical");
  EXPECT_EQ(agent_pod["serviceAccountName"], "wp-wavepool-agent");
  EXPECT_THAT(agent_pod["tolerations"],
              Contains(json(
                  {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}})));
  const json agent = OnlyContainer(daemonset);
  const std::vector<std::string> agent_args = Args(agent);
  EXPECT_THAT(FlagValues(agent_args, "--node-name"), ElementsAre("$(NODE_NAME)"));
  EXPECT_THAT(FlagValues(agent_args, "--dir"), ElementsAre("/var/run/wavepool"));
  EXPECT_THAT(FlagValues(agent_args, "--metrics-port"), ElementsAre("9402"));
  EXPECT_THAT(FlagValues(agent_args, "--socket-group"), IsEmpty());
  EXPECT_THAT(FlagValues(agent_args, "--trust-register"), IsEmpty());
  for (const std::string& a : agent_args) EXPECT_NE(a, "--trust-register");
  ExpectFlagsDefinedIn(agent_args, "agent/agent_main.cpp");
  EXPECT_EQ(agent["env"][0], json::parse(R"({"name": "NODE_NAME",
      "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}})"));
  EXPECT_EQ(agent["securityContext"]["privileged"], true);
  EXPECT_EQ(agent["volumeMounts"][0],
            json({{"name", "agent-dir"}, {"mountPath", "/var/run/wavepool"}}));
  EXPECT_EQ(agent_pod["volumes"][0]["hostPath"],
            json({{"path", "/var/run/wavepool"}, {"type", "DirectoryOrCreate"}}));
  EXPECT_EQ(agent["volumeMounts"][1], json({{"name", "mps-shm"}, {"mountPath", "/dev/shm"}}));
  EXPECT_EQ(agent_pod["volumes"][1]["hostPath"],
            json({{"path", "/var/run/wavepool/mps/shm"}, {"type", "DirectoryOrCreate"}}));
  int host_paths = 0;
  for (const json& v : agent_pod["volumes"]) host_paths += v.contains("hostPath") ? 1 : 0;
  EXPECT_EQ(host_paths, 2) << "the agent's directory and the MPS shared memory are its only "
                              "host mounts";
  EXPECT_EQ(agent["ports"][0],
            json({{"name", "metrics"}, {"containerPort", 9402}, {"protocol", "TCP"}}));

  // The PriorityClass the controller names, and the metrics Services' ports.
  const json priority = r.Find("PriorityClass", "wavepool-background");
  ASSERT_TRUE(priority.is_object());
  EXPECT_LT(priority["value"].get<int>(), 0);
  EXPECT_EQ(priority["preemptionPolicy"], "Never");
  EXPECT_EQ(r.Find("Service", "wp-wavepool-controller-metrics")["spec"]["ports"][0]["targetPort"],
            "http");
  EXPECT_EQ(r.Find("Service", "wp-wavepool-agent-metrics")["spec"]["ports"][0]["targetPort"],
            "metrics");
}

TEST_F(HelmTemplateTest, CrdsAreThoseOfTheRepositoryKeptOnUninstall) {
  ASSERT_OK_AND_ASSIGN(Rendered r, Render(scratch_, ChartDir(), {}));
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(SourcePath("crds"))) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  ASSERT_EQ(files.size(), 2u);
  ASSERT_EQ(r.OfKind("CustomResourceDefinition").size(), files.size());
  for (const std::string& file : files) {
    ASSERT_OK_AND_ASSIGN(json source, api::YamlToJson(ReadFileOrEmpty(file)));
    const std::string name = source["metadata"]["name"];
    const json crd = r.Find("CustomResourceDefinition", name);
    ASSERT_TRUE(crd.is_object()) << name;
    EXPECT_EQ(crd["spec"], source["spec"]) << name << ": the chart's CRD differs from " << file;
    EXPECT_EQ(crd["metadata"]["annotations"]["helm.sh/resource-policy"], "keep") << name;
  }
  ASSERT_OK_AND_ASSIGN(Rendered off, Render(scratch_, ChartDir(), {"--set", "crds.enabled=false"}));
  EXPECT_THAT(off.OfKind("CustomResourceDefinition"), IsEmpty());
  ASSERT_OK_AND_ASSIGN(Rendered not_kept,
                       Render(scratch_, ChartDir(), {"--set", "crds.keep=false"}));
  for (const json& crd : not_kept.OfKind("CustomResourceDefinition")) {
    EXPECT_FALSE(
        crd["metadata"].value("annotations", json::object()).contains("helm.sh/resource-policy"));
  }
}

TEST_F(HelmTemplateTest, NonDefaultValuesReachTheFlagsAndTheOptionalObjects) {
  ASSERT_OK_AND_ASSIGN(const std::string chart, ChartWithTestDashboards(scratch_));
  ASSERT_OK_AND_ASSIGN(Rendered r, Render(scratch_, chart, {"-f", NonDefaultValues()}));
  EXPECT_THAT(r.OfKind("CustomResourceDefinition"), IsEmpty());

  const json deployment = r.Find("Deployment", "gpu-pool-controller");
  ASSERT_TRUE(deployment.is_object());
  EXPECT_EQ(deployment["spec"]["replicas"], 3);
  const json controller = OnlyContainer(deployment);
  EXPECT_EQ(controller["image"],
            "registry.example.com/wavepool/controller@sha256:"
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  const std::vector<std::string> args = Args(controller);
  ExpectFlagsDefinedIn(args, "controller/controller_main.cpp");
  EXPECT_THAT(FlagValues(args, "--lease-name"), ElementsAre("gpu-pool-leader"));
  EXPECT_THAT(FlagValues(args, "--namespace"), ElementsAre("research"));
  EXPECT_THAT(FlagValues(args, "--workers"), ElementsAre("8"));
  EXPECT_THAT(FlagValues(args, "--http-port"), ElementsAre("9090"));
  EXPECT_THAT(FlagValues(args, "--heartbeat-timeout"), ElementsAre("45"));
  EXPECT_THAT(FlagValues(args, "--pod-start-timeout"), ElementsAre("900"));
  EXPECT_THAT(FlagValues(args, "--cheating-quarantine"), ElementsAre("3600"));
  EXPECT_THAT(FlagValues(args, "--agent-socket-gid"), ElementsAre("2000"));
  EXPECT_THAT(FlagValues(args, "--default-device"), ElementsAre("a100"));
  EXPECT_THAT(FlagValues(args, "--default-image"),
              ElementsAre("registry.example.com/wavepool/worker:0.1.0"));
  EXPECT_THAT(FlagValues(args, "--agent-dir"), ElementsAre("/run/wavepool"));
  EXPECT_THAT(FlagValues(args, "--mps-dir"), ElementsAre("/run/nvidia-mps"));
  EXPECT_THAT(FlagValues(args, "--background-priority-class"), ElementsAre("research-background"));
  EXPECT_THAT(FlagValues(args, "--background-grace-seconds"), ElementsAre("300"));
  EXPECT_THAT(FlagValues(args, "--checkpoint-host-root"), ElementsAre("/mnt/checkpoints"));
  EXPECT_THAT(FlagValues(args, "--allow-template-field"),
              ElementsAre("spec.template.spec.containers[*].resources.limits[rdma/hca]",
                          "spec.template.spec.hostIPC"));
  EXPECT_THAT(FlagValues(args, "--allow-service-account"),
              ElementsAre("research/trainer", "data-reader"));
  EXPECT_THAT(FlagValues(args, "--allow-host-path"), ElementsAre("/datasets", "/scratch"));
  EXPECT_EQ(controller["ports"][0]["containerPort"], 9090);
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["imagePullSecrets"],
            json::parse(R"([{"name": "registry-credentials"}])"));

  const json daemonset = r.Find("DaemonSet", "gpu-pool-agent");
  ASSERT_TRUE(daemonset.is_object());
  const json agent_pod = daemonset["spec"]["template"]["spec"];
  EXPECT_EQ(agent_pod["runtimeClassName"], "nvidia");
  EXPECT_EQ(agent_pod["nodeSelector"]["nvidia.com/gpu.present"], "true");
  EXPECT_THAT(agent_pod["tolerations"], Contains(json({{"key", "dedicated"},
                                                       {"operator", "Equal"},
                                                       {"value", "training"},
                                                       {"effect", "NoSchedule"}})));
  EXPECT_THAT(agent_pod["tolerations"],
              Contains(json(
                  {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}})));
  const json agent = OnlyContainer(daemonset);
  EXPECT_EQ(agent["image"], "registry.example.com/wavepool/agent:0.1.0-rc1");
  const std::vector<std::string> agent_args = Args(agent);
  ExpectFlagsDefinedIn(agent_args, "agent/agent_main.cpp");
  EXPECT_THAT(FlagValues(agent_args, "--dir"), ElementsAre("/run/wavepool"));
  EXPECT_THAT(FlagValues(agent_args, "--devices"), ElementsAre("nvml"));
  EXPECT_THAT(FlagValues(agent_args, "--mps"), ElementsAre("on"));
  EXPECT_THAT(FlagValues(agent_args, "--socket-group"), ElementsAre("2000"));
  EXPECT_THAT(FlagValues(agent_args, "--metrics-port"), ElementsAre("9500"));
  EXPECT_THAT(FlagValues(agent_args, "--slots-per-gpu"), ElementsAre("16"));
  EXPECT_THAT(FlagValues(agent_args, "--max-foreground-slowdown"), ElementsAre("1.05"));
  EXPECT_EQ(agent_pod["volumes"][0]["hostPath"]["path"], "/run/wavepool");
  EXPECT_EQ(agent["volumeMounts"][0]["mountPath"], "/run/wavepool");
  // The workers mount <--mps-dir>/shm as /dev/shm: the daemons must share it.
  EXPECT_EQ(agent_pod["volumes"][1]["hostPath"]["path"], "/run/nvidia-mps/shm");

  // The PriorityClass is the one the controller names.
  EXPECT_EQ(r.Find("PriorityClass", "research-background")["value"], -100);

  // Scrape objects for both components, honouring the agent's `job` label, on the Services' and
  // pods' port names.
  for (const std::string component : {"controller", "agent"}) {
    const std::string port = component == "controller" ? "http" : "metrics";
    const json sm = r.Find("ServiceMonitor", "gpu-pool-" + component);
    ASSERT_TRUE(sm.is_object()) << component;
    EXPECT_EQ(sm["metadata"]["labels"]["release"], "kube-prometheus-stack");
    EXPECT_EQ(sm["spec"]["endpoints"][0]["honorLabels"], true);
    EXPECT_EQ(sm["spec"]["endpoints"][0]["port"], port);
    EXPECT_EQ(sm["spec"]["endpoints"][0]["interval"], "15s");
    const json service = r.Find("Service", "gpu-pool-" + component + "-metrics");
    EXPECT_EQ(service["spec"]["ports"][0]["name"], port);
    // The scrape job is named wavepool-<component>, as dashboards/alerts.yaml's `up` rules expect.
    EXPECT_EQ(sm["spec"]["jobLabel"], "wavepool.dev/metrics-job");
    EXPECT_EQ(service["metadata"]["labels"]["wavepool.dev/metrics-job"], "wavepool-" + component);
    const json workload =
        r.Find(component == "agent" ? "DaemonSet" : "Deployment", "gpu-pool-" + component);
    EXPECT_EQ(workload["spec"]["template"]["metadata"]["labels"]["wavepool.dev/metrics-job"],
              "wavepool-" + component);
    for (const auto& [key, value] : sm["spec"]["selector"]["matchLabels"].items()) {
      EXPECT_EQ(service["metadata"]["labels"][key], value) << component << " " << key;
    }
    const json pm = r.Find("PodMonitor", "gpu-pool-" + component);
    ASSERT_TRUE(pm.is_object()) << component;
    EXPECT_EQ(pm["spec"]["podMetricsEndpoints"][0]["honorLabels"], true);
    EXPECT_EQ(pm["spec"]["podMetricsEndpoints"][0]["port"], port);
    EXPECT_EQ(pm["spec"]["jobLabel"], "wavepool.dev/metrics-job");
  }

  // testdata/dashboards: one ConfigMap for the sidecar, and the alert rules.
  const std::vector<json> dashboards = r.OfKind("ConfigMap");
  ASSERT_EQ(dashboards.size(), 1u);
  EXPECT_EQ(dashboards[0]["metadata"]["name"], "gpu-pool-dashboard-wavepool-test");
  EXPECT_EQ(dashboards[0]["metadata"]["labels"]["grafana_dashboard"], "1");
  EXPECT_EQ(dashboards[0]["metadata"]["annotations"]["grafana_folder"], "GPU");
  const json dashboard =
      json::parse(dashboards[0]["data"]["wavepool-test.json"].get<std::string>());
  EXPECT_EQ(dashboard["uid"], "wavepool-test");
  const json rule = r.Find("PrometheusRule", "gpu-pool-alerts");
  ASSERT_TRUE(rule.is_object());
  EXPECT_EQ(rule["spec"]["groups"][0]["rules"][0]["alert"], "WavepoolAgentHeartbeatStale");
  EXPECT_EQ(rule["spec"]["groups"][0]["rules"][0]["annotations"]["summary"],
            "wavepool agent on {{ $labels.hostname }} has not published for a minute");
}

TEST_F(HelmTemplateTest, RepositoryDashboardsRenderWhateverTheFolderHolds) {
  // dashboards/ may hold any number of dashboards, and alerts.yaml or not: one ConfigMap per JSON
  // file, a PrometheusRule exactly when alerts.yaml exists.
  size_t json_files = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(SourcePath("dashboards"), ec)) {
    if (entry.path().extension() == ".json") ++json_files;
  }
  const bool alerts = std::filesystem::exists(SourcePath("dashboards/alerts.yaml"));
  ASSERT_OK_AND_ASSIGN(Rendered r,
                       Render(scratch_, ChartDir(),
                              {"--set", "dashboards.enabled=true,prometheusRule.enabled=true"}));
  EXPECT_EQ(r.OfKind("ConfigMap").size(), json_files);
  for (const json& cm : r.OfKind("ConfigMap")) {
    EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    ASSERT_EQ(cm["data"].size(), 1u);
    EXPECT_TRUE(json::accept(cm["data"].begin()->get<std::string>())) << cm["metadata"];
  }
  EXPECT_EQ(r.OfKind("PrometheusRule").size(), alerts ? 1u : 0u);
  // Every scrape job an alert names is one the chart's ServiceMonitors and PodMonitors produce.
  for (const json& rule_object : r.OfKind("PrometheusRule")) {
    for (const json& group : rule_object["spec"]["groups"]) {
      for (const json& rule : group["rules"]) {
        const std::string expr = rule["expr"].is_string() ? rule["expr"].get<std::string>() : "";
        static const std::regex kJob("job=\"([^\"]*)\"");
        for (std::sregex_iterator it(expr.begin(), expr.end(), kJob), end; it != end; ++it) {
          EXPECT_THAT((*it)[1].str(), ::testing::AnyOf("wavepool-agent", "wavepool-controller"))
              << rule.value("alert", rule.value("record", ""));
        }
      }
    }
  }
  ASSERT_OK_AND_ASSIGN(Rendered off, Render(scratch_, ChartDir(), {}));
  EXPECT_THAT(off.OfKind("ConfigMap"), IsEmpty());
  EXPECT_THAT(off.OfKind("PrometheusRule"), IsEmpty());
  EXPECT_THAT(off.OfKind("ServiceMonitor"), IsEmpty());
  EXPECT_THAT(off.OfKind("PodMonitor"), IsEmpty());
}

TEST_F(HelmTemplateTest, BadValuesAreRefusedNamingTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"agent.mps=sometimes", "/agent/mps"},
      {"agent.devices=gpu", "/agent/devices"},
      {"agent.slotsPerGpu=64", "/agent/slotsPerGpu"},
      {"agent.hostDir=relative/dir", "/agent/hostDir"},
      // What the controller refuses at start-up (a clean absolute path other than "/", a group id
      // a pod may carry) is refused at install.
      {"agent.hostDir=/var/run/../etc", "/agent/hostDir"},
      {"agent.socketGid=3000000000", "/agent/socketGid"},
      {"controller.checkpointHostRoot=/", "/controller/checkpointHostRoot"},
      {"controller.mpsDir=/run/mps/", "/controller/mpsDir"},
      {"agent.publishIntervalSeconds=1e10", "/agent/publishIntervalSeconds"},
      {"controller.workers=0", "/controller/workers"},
      {"controller.httpPort=70000", "/controller/httpPort"},
      {"controller.allowHostPaths[0]=datasets", "/controller/allowHostPaths/0"},
      {"controller.image.pullPolicy=Sometimes", "/controller/image/pullPolicy"},
      {"controller.replcas=2", "replcas"},
      {"metrics.serviceMonitor.interval=often", "/metrics/serviceMonitor/interval"},
      {"backgroundPriorityClass.preemptionPolicy=Always",
       "/backgroundPriorityClass/preemptionPolicy"},
      {"controller.leaderElection.enabled=false",
       "controller.replicas > 1 needs controller.leaderElection.enabled"},
  };
  for (const auto& [set, expected] : cases) {
    const CommandResult result = Helm({"template", kRelease, ChartDir(), "--set", set});
    EXPECT_NE(result.exit_code, 0) << set << "\n" << result;
    EXPECT_THAT(result.err, HasSubstr(expected)) << set;
  }
}

TEST_F(HelmTemplateTest, NotesTellTheNextSteps) {
  const CommandResult install =
      Helm({"install", kRelease, ChartDir(), "-n", kNamespace, "--dry-run=client"});
  ASSERT_EQ(install.exit_code, 0) << install;
  EXPECT_THAT(install.out, HasSubstr("kubectl label node <gpu-node> wavepool.dev/managed=true"));
  EXPECT_THAT(install.out, HasSubstr("kubectl apply -f examples/vgg16-foreground.yaml"));
  EXPECT_THAT(install.out, HasSubstr("kubectl get tj"));
  EXPECT_THAT(install.out, HasSubstr("lease wavepool-system/wavepool-controller"));
}

}  // namespace
}  // namespace wavepool::testing::helm
