// The real kubectl (1.32 from PATH, 1.33 from the tools directory) installs crds/ on the test
// API server, applies every example, and lists them with the CRDs' printer columns, short names
// and category: what an operator sees after `kubectl apply -f crds/`.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/crds/crd_fixture.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::crds {
namespace {

using apiserver::TestApiServer;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The words of each non-empty line (kubectl aligns table columns with spaces).
std::vector<std::vector<std::string>> Words(const std::string& text) {
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string word; words >> word;) row.push_back(word);
    if (!row.empty()) lines.push_back(std::move(row));
  }
  return lines;
}

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
}

// kubectl with its own kubeconfig, cache and home. The parameter: the binary's path.
class CrdKubectlTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    kubectl_ = GetParam();
    if (::access(kubectl_.c_str(), X_OK) != 0) GTEST_SKIP() << "no kubectl at " << kubectl_;
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start({}));
    char dir_template[] = "/tmp/wavepool-crds-kubectl-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    WriteFile(dir_ + "/kubeconfig", server_->Kubeconfig());
  }

  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  Result Kubectl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kubectl_, "--kubeconfig=" + dir_ + "/kubeconfig",
                                     "--cache-dir=" + dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> argv_c;
    for (std::string& arg : argv) argv_c.push_back(arg.data());
    argv_c.push_back(nullptr);
    std::vector<std::string> env = {"HOME=" + dir_, "PATH=/usr/bin:/bin"};
    std::vector<char*> env_c;
    for (std::string& entry : env) env_c.push_back(entry.data());
    env_c.push_back(nullptr);

    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    Result result;
    pid_t pid = -1;
    const int error =
        ::posix_spawn(&pid, kubectl_.c_str(), &actions, nullptr, argv_c.data(), env_c.data());
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) return result;
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = ReadFile(out);
    result.err = ReadFile(err);
    return result;
  }

  // kubectl apply -f crds/, then -f examples/ (a second invocation: kubectl maps kinds to
  // resources before sending anything, so custom objects cannot share one with their CRD).
  void ApplyCrdsAndExamples() {
    const std::string source = WAVEPOOL_SOURCE_DIR;
    const Result crds = Kubectl({"apply", "-f", source + "/crds/"});
    ASSERT_EQ(crds.exit_code, 0) << crds;
    EXPECT_EQ(crds.out,
              "customresourcedefinition.apiextensions.k8s.io/gpunodes.wavepool.dev created\n"
              "customresourcedefinition.apiextensions.k8s.io/trainingjobs.wavepool.dev "
              "created\n");
    const Result examples = Kubectl({"apply", "-f", source + "/examples/"});
    ASSERT_EQ(examples.exit_code, 0) << examples;
    EXPECT_EQ(examples.out,
              "trainingjob.wavepool.dev/resnet50-background created\n"
              "trainingjob.wavepool.dev/tiny-cpu created\n"
              "trainingjob.wavepool.dev/vgg16 created\n");
    EXPECT_EQ(examples.err, "");  // strict validation: no unknown-field warnings
  }

  std::string kubectl_;
  std::unique_ptr<TestApiServer> server_;
  std::string dir_;
};

TEST_P(CrdKubectlTest, GetTrainingJobsShowsThePrinterColumns) {
  ASSERT_NO_FATAL_FAILURE(ApplyCrdsAndExamples());
  // The controller's status: a plan and progress for vgg16.
  const Result status =
      Kubectl({"patch", "tj", "vgg16", "--subresource=status", "--type=merge", "-p",
               R"({"status":{"phase":"Running","plan":{"strategy":"BurstParallel"},)"
               R"("progress":{"step":120,"foregroundSlowdown":1.07}}})"});
  ASSERT_EQ(status.exit_code, 0) << status;

  const Result get = Kubectl({"get", "tj"});
  ASSERT_EQ(get.exit_code, 0) << get;
  const auto lines = Words(get.out);
  ASSERT_EQ(lines.size(), 4u) << get;
  EXPECT_THAT(lines[0],
              ElementsAre("NAME", "ROLE", "PHASE", "GPUS", "STRATEGY", "ITER", "SLOWDOWN", "AGE"));
  // Rows in name order; a job without status has empty cells.
  EXPECT_THAT(std::vector<std::string>(lines[1].begin(), lines[1].end() - 1),
              ElementsAre("resnet50-background", "Background", "1"));
  EXPECT_THAT(std::vector<std::string>(lines[3].begin(), lines[3].end() - 1),
              ElementsAre("vgg16", "Foreground", "Running", "8", "BurstParallel", "120", "1.07"));

  const Result wide = Kubectl({"get", "tj", "vgg16", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide;
  EXPECT_THAT(Words(wide.out)[0], ElementsAre("NAME", "ROLE", "PHASE", "GPUS", "STRATEGY", "ITER",
                                              "SLOWDOWN", "AGE", "MODEL", "RESTARTS"));

  // The server's defaults, as kubectl shows them.
  const Result defaults = Kubectl({"get", "trainingjob", "tiny-cpu", "-o", "json"});
  ASSERT_EQ(defaults.exit_code, 0) << defaults;
  const json spec = json::parse(defaults.out)["spec"];
  EXPECT_EQ(spec["suspend"], false);
  EXPECT_EQ(spec["parallelism"]["gpuCounts"], "PowersOfTwo");
  EXPECT_EQ(spec["dataMovement"]["cpuSplit"], "Off");
}

TEST_P(CrdKubectlTest, GetGpuNodesAndTheCategory) {
  ASSERT_NO_FATAL_FAILURE(ApplyCrdsAndExamples());
  const std::string node_path = dir_ + "/node.yaml";
  WriteFile(node_path,
            "apiVersion: wavepool.dev/v1alpha1\nkind: GPUNode\nmetadata:\n  name: node-a\n"
            "spec:\n  nodeName: node-a\n");
  const Result created = Kubectl({"apply", "-f", node_path});
  ASSERT_EQ(created.exit_code, 0) << created;
  EXPECT_EQ(created.out, "gpunode.wavepool.dev/node-a created\n");

  const Result get = Kubectl({"get", "gpun"});
  ASSERT_EQ(get.exit_code, 0) << get;
  const auto lines = Words(get.out);
  ASSERT_EQ(lines.size(), 2u) << get;
  EXPECT_THAT(lines[0], ElementsAre("NAME", "NODE", "AGENT", "HEARTBEAT", "AGE"));
  EXPECT_EQ(lines[1][0], "node-a");
  EXPECT_EQ(lines[1][1], "node-a");
  const Result long_name = Kubectl({"get", "gpunodes", "-o", "name"});
  EXPECT_EQ(long_name.out, "gpunode.wavepool.dev/node-a\n") << long_name;

  // The wavepool category lists both kinds.
  const Result category = Kubectl({"get", "wavepool", "-A", "-o", "name"});
  ASSERT_EQ(category.exit_code, 0) << category;
  EXPECT_THAT(category.out, HasSubstr("trainingjob.wavepool.dev/vgg16\n"));
  EXPECT_THAT(category.out, HasSubstr("gpunode.wavepool.dev/node-a\n"));
}

TEST_P(CrdKubectlTest, InvalidJobIsRefusedWithItsFieldPath) {
  ASSERT_NO_FATAL_FAILURE(ApplyCrdsAndExamples());
  const std::string path = dir_ + "/bad.yaml";
  WriteFile(path,
            "apiVersion: wavepool.dev/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: bad\n"
            "spec:\n  role: Foreground\n  model:\n    name: vgg16\n  globalBatchSize: 8\n"
            "  gpus: 0\n  steps: 10\n");
  const Result applied = Kubectl({"apply", "-f", path});
  EXPECT_NE(applied.exit_code, 0) << applied;
  EXPECT_THAT(applied.err, HasSubstr("spec.gpus"));
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
