// The real kubectl (1.32 from PATH, 1.33 from the tools directory) installs crds/ on the test
// API server, applies every example, and lists them with the CRDs' printer columns, short names
// and category: what an operator sees after `kubectl apply -f crds/`.
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/crds/crd_fixture.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/files.h"
#include "tests/support/kubectl.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::testing::crds {
namespace {

using apiserver::TestApiServer;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// kubectl with its own kubeconfig, cache and home. The parameter: the binary's path.
class CrdKubectlTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    kubectl_ = GetParam();
    if (::access(kubectl_.c_str(), X_OK) != 0) GTEST_SKIP() << "no kubectl at " << kubectl_;
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start({}));
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-crds-kubectl"));
    dir_ = temp_dir_.path();
    ASSERT_OK(WriteFile(dir_ + "/kubeconfig", server_->Kubeconfig()));
  }

  KubectlResult Kubectl(const std::vector<std::string>& args) {
    return KubectlRunner(kubectl_, dir_).Run(args);
  }

  // kubectl apply -f crds/, then -f examples/ (a second invocation: kubectl maps kinds to
  // resources before sending anything, so custom objects cannot share one with their CRD).
  void ApplyCrdsAndExamples() {
    const std::string source = WAVEPOOL_SOURCE_DIR;
    const KubectlResult crds = Kubectl({"apply", "-f", source + "/crds/"});
    ASSERT_EQ(crds.exit_code, 0) << crds;
    EXPECT_EQ(crds.out,
              "customresourcedefinition.apiextensions.k8s.io/gpunodes.wavepool.dev created\n"
              "customresourcedefinition.apiextensions.k8s.io/trainingjobs.wavepool.dev "
              "created\n");
    const KubectlResult examples = Kubectl({"apply", "-f", source + "/examples/"});
    ASSERT_EQ(examples.exit_code, 0) << examples;
    EXPECT_EQ(examples.out,
              "trainingjob.wavepool.dev/burst created\n"
              "trainingjob.wavepool.dev/cnn-foreground created\n"
              "trainingjob.wavepool.dev/mlp-background created\n"
              "trainingjob.wavepool.dev/resnet50-background created\n"
              "trainingjob.wavepool.dev/tick-tock created\n"
              "trainingjob.wavepool.dev/tiny-cpu created\n"
              "trainingjob.wavepool.dev/vgg16 created\n");
    EXPECT_EQ(examples.err, "");  // strict validation: no unknown-field warnings
  }

  std::string kubectl_;
  std::unique_ptr<TestApiServer> server_;
  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
};

TEST_P(CrdKubectlTest, GetTrainingJobsShowsThePrinterColumns) {
  ASSERT_NO_FATAL_FAILURE(ApplyCrdsAndExamples());
  // The controller's status: a plan on 6 of the 8 GPUs spec.gpus allows, progress, and no
  // restarts for vgg16.
  const KubectlResult status =
      Kubectl({"patch", "tj", "vgg16", "--subresource=status", "--type=merge", "-p",
               R"({"status":{"phase":"Running","plan":{"strategy":"BurstParallel"},"gpus":6,)"
               R"("restarts":0,"progress":{"step":120,"foregroundSlowdown":1.07}}})"});
  ASSERT_EQ(status.exit_code, 0) << status;

  const KubectlResult get = Kubectl({"get", "tj"});
  ASSERT_EQ(get.exit_code, 0) << get;
  const auto lines = TableWords(get.out);
  ASSERT_EQ(lines.size(), 8u) << get;  // the header and the seven example jobs
  EXPECT_THAT(lines[0],
              ElementsAre("NAME", "ROLE", "PHASE", "GPUS", "STRATEGY", "ITER", "SLOWDOWN", "AGE"));
  // Rows in name order; a job without status (not planned yet) has empty cells, GPUS included.
  EXPECT_THAT(std::vector<std::string>(lines[4].begin(), lines[4].end() - 1),
              ElementsAre("resnet50-background", "Background"));
  // GPUS is what the plan uses, not spec.gpus.
  EXPECT_THAT(std::vector<std::string>(lines[7].begin(), lines[7].end() - 1),
              ElementsAre("vgg16", "Foreground", "Running", "6", "BurstParallel", "120", "1.07"));

  const KubectlResult wide = Kubectl({"get", "tj", "vgg16", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide;
  const auto wide_lines = TableWords(wide.out);
  ASSERT_EQ(wide_lines.size(), 2u) << wide;
  EXPECT_THAT(wide_lines[0], ElementsAre("NAME", "ROLE", "PHASE", "GPUS", "STRATEGY", "ITER",
                                         "SLOWDOWN", "AGE", "MODEL", "RESTARTS", "MAXGPUS"));
  // RESTARTS 0, not blank; MAXGPUS is spec.gpus.
  EXPECT_THAT(std::vector<std::string>(wide_lines[1].end() - 3, wide_lines[1].end()),
              ElementsAre("vgg16", "0", "8"));

  // The server's defaults, as kubectl shows them.
  const KubectlResult defaults = Kubectl({"get", "trainingjob", "tiny-cpu", "-o", "json"});
  ASSERT_EQ(defaults.exit_code, 0) << defaults;
  const json spec = json::parse(defaults.out)["spec"];
  EXPECT_EQ(spec["suspend"], false);
  EXPECT_EQ(spec["parallelism"]["gpuCounts"], "PowersOfTwo");
  EXPECT_EQ(spec["dataMovement"]["cpuSplit"], "Off");
}

TEST_P(CrdKubectlTest, GetGpuNodesAndTheCategory) {
  ASSERT_NO_FATAL_FAILURE(ApplyCrdsAndExamples());
  const std::string node_path = dir_ + "/node.yaml";
  ASSERT_OK(
      WriteFile(node_path,
                "apiVersion: wavepool.dev/v1alpha1\nkind: GPUNode\nmetadata:\n  name: node-a\n"
                "spec:\n  nodeName: node-a\n"));
  const KubectlResult created = Kubectl({"apply", "-f", node_path});
  ASSERT_EQ(created.exit_code, 0) << created;
  EXPECT_EQ(created.out, "gpunode.wavepool.dev/node-a created\n");

  const KubectlResult get = Kubectl({"get", "gpun"});
  ASSERT_EQ(get.exit_code, 0) << get;
  const auto lines = TableWords(get.out);
  ASSERT_EQ(lines.size(), 2u) << get;
  EXPECT_THAT(lines[0], ElementsAre("NAME", "NODE", "AGENT", "HEARTBEAT", "AGE"));
  EXPECT_EQ(lines[1][0], "node-a");
  EXPECT_EQ(lines[1][1], "node-a");
  const KubectlResult long_name = Kubectl({"get", "gpunodes", "-o", "name"});
  EXPECT_EQ(long_name.out, "gpunode.wavepool.dev/node-a\n") << long_name;

  // The wavepool category lists both kinds.
  const KubectlResult category = Kubectl({"get", "wavepool", "-A", "-o", "name"});
  ASSERT_EQ(category.exit_code, 0) << category;
  EXPECT_THAT(category.out, HasSubstr("trainingjob.wavepool.dev/vgg16\n"));
  EXPECT_THAT(category.out, HasSubstr("gpunode.wavepool.dev/node-a\n"));
}

TEST_P(CrdKubectlTest, InvalidJobIsRefusedWithItsFieldPath) {
  ASSERT_NO_FATAL_FAILURE(ApplyCrdsAndExamples());
  const std::string path = dir_ + "/bad.yaml";
  ASSERT_OK(
      WriteFile(path,
                "apiVersion: wavepool.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: bad\n"
                "spec:\n  role: Foreground\n  model:\n    name: vgg16\n  globalBatchSize: 8\n"
                "  gpus: 0\n  steps: 10\n"));
  const KubectlResult applied = Kubectl({"apply", "-f", path});
  EXPECT_NE(applied.exit_code, 0) << applied;
  EXPECT_THAT(applied.err, HasSubstr("spec.gpus"));
}

// A job that breaks a cross-field rule: kubectl apply shows the server's rule message on the
// rule's field path, and nothing is created.
TEST_P(CrdKubectlTest, JobBreakingACelRuleIsRefusedWithTheRulesMessage) {
  ASSERT_NO_FATAL_FAILURE(ApplyCrdsAndExamples());
  const std::string path = dir_ + "/background.yaml";
  ASSERT_OK(
      WriteFile(path,
                "apiVersion: wavepool.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: bg\n"
                "spec:\n  role: Background\n  model:\n    name: resnet50\n  globalBatchSize: 8\n"
                "  gpus: 2\n  steps: 10\n  checkpoint:\n    path: /ckpt\n"));
  const KubectlResult applied = Kubectl({"apply", "-f", path});
  EXPECT_NE(applied.exit_code, 0) << applied;
  EXPECT_EQ(applied.err,
            "The TrainingJob \"bg\" is invalid: spec.gpus: Invalid value: \"object\": must be 1 "
            "for a Background job\n");
  const KubectlResult get = Kubectl({"get", "tj", "bg", "-o", "name"});
  EXPECT_NE(get.exit_code, 0) << get;
  EXPECT_THAT(get.err, HasSubstr("NotFound"));
}

std::vector<std::string> KubectlBinaries() {
  return {"/usr/bin/kubectl", std::string(WAVEPOOL_TOOLS_BIN) + "/kubectl"};
}

INSTANTIATE_TEST_SUITE_P(Versions, CrdKubectlTest, ::testing::ValuesIn(KubectlBinaries()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.index == 0 ? std::string("PathKubectl")
                                                   : std::string("ToolsKubectl");
                         });

}  // namespace
}  // namespace wavepool::testing::crds
