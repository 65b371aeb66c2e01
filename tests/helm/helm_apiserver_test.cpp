// Every object the chart renders, with default and non-default values, accepted by the test API
// server through the real kubectl (server-side dry run, then created); and helm install, upgrade
// and uninstall of the chart against it.
//
// The test API server serves neither scheduling.k8s.io nor the Prometheus Operator's kinds, so
// testdata/standin-crds.yaml defines them as custom resources first (with the fields the chart
// writes, under kubectl's strict validation). Built-in kinds have no field schemas there: a
// misspelt field of a Deployment is not caught by this test but by the template test's checks.
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/helm/helm_fixture.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::helm {
namespace {

using apiserver::TestApiServer;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

class HelmApiServerTest : public ::testing::Test {
 protected:
  void StartServer(const std::string& kubectl) {
    kubectl_ = kubectl;
    ASSERT_FALSE(scratch_.path().empty());
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start({}));
    kubeconfig_ = scratch_.Write("kubeconfig", server_->Kubeconfig());
    const CommandResult standins =
        Kubectl({"apply", "-f", SourcePath("tests/helm/testdata/standin-crds.yaml")});
    ASSERT_EQ(standins.exit_code, 0) << standins;
  }

  CommandResult Kubectl(std::vector<std::string> args) const {
    args.insert(args.begin(), kubectl_);
    return scratch_.Run(args, kubeconfig_);
  }
  CommandResult Helm(std::vector<std::string> args) const {
    args.insert(args.begin(), HelmBinary());
    return scratch_.Run(args, kubeconfig_);
  }

  // The names (kind/namespace/name) of the objects in a `kubectl get -o json` answer.
  static std::set<std::string> Names(const std::string& list_json) {
    std::set<std::string> names;
    const json list = json::parse(list_json, nullptr, false);
    if (!list.is_object()) return names;  // kubectl prints nothing when nothing was found
    for (const json& o : list.value("items", json::array())) {
      names.insert(o["kind"].get<std::string>() + "/" + o["metadata"].value("namespace", "") + "/" +
                   o["metadata"]["name"].get<std::string>());
    }
    return names;
  }
  static std::set<std::string> Names(const Rendered& r) {
    std::set<std::string> names;
    for (const json& o : r.objects) {
      names.insert(o["kind"].get<std::string>() + "/" + o["metadata"].value("namespace", "") + "/" +
                   o["metadata"]["name"].get<std::string>());
    }
    return names;
  }

  Scratch scratch_;
  std::string kubectl_;
  std::unique_ptr<TestApiServer> server_;
  std::string kubeconfig_;
};

class HelmKubectlTest : public HelmApiServerTest,
                        public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    if (::access(HelmBinary().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no helm at " << HelmBinary() << " (scripts/install-kube-tools)";
    }
    if (::access(GetParam().c_str(), X_OK) != 0) GTEST_SKIP() << "no kubectl at " << GetParam();
    StartServer(GetParam());
  }
};

TEST_P(HelmKubectlTest, EveryRenderedObjectIsAcceptedAndCreated) {
  ASSERT_EQ(Kubectl({"create", "namespace", kNamespace}).exit_code, 0);
  ASSERT_OK_AND_ASSIGN(const std::string test_chart, ChartWithTestDashboards(scratch_));
  struct Case {
    std::string name;
    std::string chart;
    std::vector<std::string> values;
  };
  const std::vector<Case> cases = {
      {"default", ChartDir(), {}},
      {"nondefault", test_chart, {"-f", SourcePath("tests/helm/testdata/nondefault-values.yaml")}},
      // The repository's dashboards/ and alerts.yaml, whatever they hold by now.
      {"dashboards", ChartDir(), {"--set", "dashboards.enabled=true,prometheusRule.enabled=true"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string text;
    ASSERT_OK_AND_ASSIGN(Rendered r, Render(scratch_, c.chart, c.values, &text));
    const std::string file = scratch_.Write(c.name + ".yaml", text);
    const std::set<std::string> expected = Names(r);

    // What exists already (an earlier case may have created some of the same objects).
    const CommandResult before = Kubectl({"get", "-f", file, "-o", "json", "--ignore-not-found"});
    ASSERT_EQ(before.exit_code, 0) << before;
    const CommandResult dry = Kubectl({"apply", "--dry-run=server", "-f", file});
    ASSERT_EQ(dry.exit_code, 0) << dry;
    EXPECT_EQ(dry.err, "") << "warnings (unknown fields?)";
    const std::vector<std::string> lines = absl::StrSplit(dry.out, '\n', absl::SkipEmpty());
    EXPECT_EQ(lines.size(), r.objects.size()) << dry.out;
    for (const std::string& line : lines) EXPECT_THAT(line, HasSubstr("(server dry run)"));
    const CommandResult after = Kubectl({"get", "-f", file, "-o", "json", "--ignore-not-found"});
    EXPECT_EQ(after.exit_code, 0) << after;
    EXPECT_EQ(Names(after.out), Names(before.out)) << "a dry run stored something";

    const CommandResult apply = Kubectl({"apply", "-f", file});
    ASSERT_EQ(apply.exit_code, 0) << apply;
    EXPECT_EQ(apply.err, "");
    const CommandResult got = Kubectl({"get", "-f", file, "-o", "json"});
    ASSERT_EQ(got.exit_code, 0) << got;
    EXPECT_EQ(Names(got.out), expected);
    // Applying again changes nothing.
    const CommandResult again = Kubectl({"apply", "-f", file});
    ASSERT_EQ(again.exit_code, 0) << again;
    EXPECT_THAT(again.out, Not(HasSubstr(" configured"))) << again.out;
  }
  // The stored controller keeps the fields that matter (the server drops nothing of them).
  const CommandResult deployment =
      Kubectl({"get", "deployment", "wp-wavepool-controller", "-n", kNamespace, "-o", "json"});
  ASSERT_EQ(deployment.exit_code, 0) << deployment;
  const json stored = json::parse(deployment.out);
  EXPECT_EQ(
      stored["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"],
      "/readyz");
  const CommandResult daemonset =
      Kubectl({"get", "daemonset", "wp-wavepool-agent", "-n", kNamespace, "-o", "json"});
  ASSERT_EQ(daemonset.exit_code, 0) << daemonset;
  EXPECT_EQ(json::parse(daemonset.out)["spec"]["template"]["spec"]["hostPID"], true);
}

INSTANTIATE_TEST_SUITE_P(Kubectl, HelmKubectlTest,
                         ::testing::Values(kSystemKubectl, ToolsKubectl()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param == kSystemKubectl ? std::string("System")
                                                                : std::string("Tools");
                         });

class HelmInstallTest : public HelmApiServerTest {
 protected:
  void SetUp() override {
    if (::access(HelmBinary().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no helm at " << HelmBinary() << " (scripts/install-kube-tools)";
    }
    if (::access(ToolsKubectl().c_str(), X_OK) != 0)
      GTEST_SKIP() << "no kubectl at " << ToolsKubectl();
    StartServer(ToolsKubectl());
  }

  json Get(const std::vector<std::string>& what) const {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    const CommandResult r = Kubectl(args);
    EXPECT_EQ(r.exit_code, 0) << r;
    return json::parse(r.out, nullptr, false);
  }
};

// helm v4 applies server-side by default; the test API server has no server-side apply, so the
// client-side three-way merge is used (--server-side=false), as on clusters that lack it.
//
// The PriorityClass is the one object left out (backgroundPriorityClass.create=false, as when the
// class exists already): helm patches a scheduling.k8s.io kind with a strategic merge patch,
// which the stand-in custom resource cannot take. kubectl creates it in the test above.
TEST_F(HelmInstallTest, InstallUpgradeAndUninstallKeepingTheCrds) {
  const CommandResult install =
      Helm({"install", kRelease, ChartDir(), "-n", kNamespace, "--create-namespace",
            "--server-side=false", "--set", "backgroundPriorityClass.create=false"});
  ASSERT_EQ(install.exit_code, 0) << install;
  EXPECT_THAT(install.out, HasSubstr("STATUS: deployed"));
  EXPECT_THAT(install.out, HasSubstr("kubectl label node <gpu-node> wavepool.dev/managed=true"));
  EXPECT_EQ(Get({"deployment", "wp-wavepool-controller", "-n", kNamespace})["spec"]["replicas"], 2);
  EXPECT_EQ(
      Get({"crd",
           "trainingjobs.wavepool.dev"})["metadata"]["annotations"]["helm.sh/resource-policy"],
      "keep");
  // The CRDs serve TrainingJobs once installed by the chart.
  const CommandResult example =
      Kubectl({"apply", "-n", "default", "-f", SourcePath("examples/vgg16-foreground.yaml")});
  EXPECT_EQ(example.exit_code, 0) << example;

  const CommandResult upgrade =
      Helm({"upgrade", kRelease, ChartDir(), "-n", kNamespace, "--server-side=false", "--set",
            "backgroundPriorityClass.create=false,controller.replicas=3,controller."
            "heartbeatTimeoutSeconds=30,commonLabels.rollout=two"});
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade;
  EXPECT_THAT(upgrade.out, HasSubstr("REVISION: 2"));
  const json deployment = Get({"deployment", "wp-wavepool-controller", "-n", kNamespace});
  EXPECT_EQ(deployment["spec"]["replicas"], 3);
  EXPECT_THAT(deployment["spec"]["template"]["spec"]["containers"][0]["args"],
              ::testing::Contains("--heartbeat-timeout=30"));
  // The CRDs are templates, so an upgrade updates them (Helm never upgrades a chart's crds/).
  EXPECT_EQ(Get({"crd", "trainingjobs.wavepool.dev"})["metadata"]["labels"]["rollout"], "two");

  // --keep-history: the test API server cannot decode the protobuf body of the DELETE helm sends
  // for its release Secrets, so the release record is kept rather than purged.
  const CommandResult uninstall = Helm({"uninstall", kRelease, "-n", kNamespace, "--keep-history"});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall;
  EXPECT_THAT(uninstall.out, HasSubstr("[CustomResourceDefinition] trainingjobs.wavepool.dev"));
  EXPECT_THAT(Kubectl({"get", "deployment", "wp-wavepool-controller", "-n", kNamespace}).err,
              HasSubstr("NotFound"));
  EXPECT_THAT(Kubectl({"get", "clusterrole", "wp-wavepool-controller"}).err, HasSubstr("NotFound"));
  EXPECT_TRUE(Get({"crd", "trainingjobs.wavepool.dev"}).is_object());
  EXPECT_TRUE(Get({"crd", "gpunodes.wavepool.dev"}).is_object());
  // And the TrainingJob with them.
  EXPECT_EQ(Get({"tj", "vgg16", "-n", "default"})["metadata"]["name"], "vgg16");
}

}  // namespace
}  // namespace wavepool::testing::helm
