// The real kubectl (1.32 from PATH, 1.33 from the tools directory) against the test API server:
// discovery, OpenAPI-driven validation, Tables, patches, edit, watch and errors, as a user sees
// them. Each test starts its own server and gives kubectl its own kubeconfig and cache directory.
#include "tests/support/kubectl.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/files.h"
#include "tests/support/spawn.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Testdata(const std::string& name) {
  return std::string(WAVEPOOL_SOURCE_DIR) + "/tests/apiserver/testdata/" + name;
}

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// kubectl with its own kubeconfig, cache and home. A parameter of the suite: the binary's path.
class KubectlTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    kubectl_ = GetParam();
    if (!IsExecutable(kubectl_)) GTEST_SKIP() << "no kubectl at " << kubectl_;
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start({}));
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-kubectl"));
    dir_ = temp_dir_.path();
    ASSERT_OK(WriteFile(dir_ + "/kubeconfig", server_->Kubeconfig()));
  }

  void TearDown() override {
    for (pid_t pid : background_) {
      ::wavepool::testing::StopChild(pid, std::chrono::seconds(30));
    }
  }

  pid_t Spawn(const std::vector<std::string>& args, const std::string& input_path,
              const std::string& out_path, const std::string& err_path) {
    return KubectlRunner(kubectl_, dir_).Spawn(args, input_path, out_path, err_path);
  }

  KubectlResult Kubectl(const std::vector<std::string>& args, const std::string& input = "") {
    return KubectlRunner(kubectl_, dir_).Run(args, input);
  }

  // Applies the CRD and the two TrainingJobs; their status gets a phase through /status.
  void ApplyTrainingJobs() {
    const KubectlResult crd = Kubectl({"apply", "-f", Testdata("trainingjob-crd.yaml")});
    ASSERT_EQ(crd.exit_code, 0) << crd;
    EXPECT_EQ(crd.out,
              "customresourcedefinition.apiextensions.k8s.io/trainingjobs.wavepool.dev "
              "created\n");
    const KubectlResult jobs = Kubectl({"apply", "-f", Testdata("trainingjobs.yaml")});
    ASSERT_EQ(jobs.exit_code, 0) << jobs;
    EXPECT_EQ(jobs.out,
              "trainingjob.wavepool.dev/vgg created\ntrainingjob.wavepool.dev/resnet "
              "created\n");
    EXPECT_EQ(jobs.err, "");  // no skew or OpenAPI warnings
    const KubectlResult phase =
        Kubectl({"patch", "trainingjob", "vgg", "--subresource=status", "--type=merge", "-p",
                 R"({"status":{"phase":"Running"}})"});
    ASSERT_EQ(phase.exit_code, 0) << phase;
  }

  std::string kubectl_;
  std::unique_ptr<TestApiServer> server_;
  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
  std::vector<pid_t> background_;
};

TEST_P(KubectlTest, VersionIsWithinSkewAndExplainReadsTheCrdSchema) {
  const KubectlResult version = Kubectl({"version", "-o", "json"});
  ASSERT_EQ(version.exit_code, 0) << version;
  EXPECT_EQ(json::parse(version.out)["serverVersion"]["gitVersion"], "v1.32.0");
  EXPECT_EQ(version.err, "");  // no "version difference exceeds the supported skew" warning

  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  // explain reads the group version's OpenAPI v3 document.
  const KubectlResult explain = Kubectl({"explain", "trainingjobs.spec"});
  ASSERT_EQ(explain.exit_code, 0) << explain;
  EXPECT_THAT(explain.out, ::testing::ContainsRegex("gpus[[:space:]]+<integer> -required-"));
  EXPECT_THAT(explain.out, HasSubstr("enum: foreground, background"));
}

TEST_P(KubectlTest, GetShowsTheCrdsPrinterColumns) {
  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  const KubectlResult get = Kubectl({"get", "tj"});
  ASSERT_EQ(get.exit_code, 0) << get;
  const auto lines = TableWords(get.out);
  ASSERT_EQ(lines.size(), 3u) << get;
  // Batch has priority 1: only -o wide shows it. Rows come in name order.
  EXPECT_THAT(lines[0], ElementsAre("NAME", "MODEL", "GPUS", "PRIORITY", "PHASE", "AGE"));
  ASSERT_EQ(lines[1].size(), 5u) << get;  // resnet has no phase: an empty cell
  EXPECT_THAT(std::vector<std::string>(lines[1].begin(), lines[1].end() - 1),
              ElementsAre("resnet", "resnet50", "4", "foreground"));
  ASSERT_EQ(lines[2].size(), 6u) << get;
  EXPECT_THAT(std::vector<std::string>(lines[2].begin(), lines[2].end() - 1),
              ElementsAre("vgg", "vgg16", "8", "background", "Running"));
  EXPECT_THAT(lines[2].back(), ::testing::MatchesRegex("[0-9]+s"));

  const KubectlResult wide = Kubectl({"get", "trainingjobs.wavepool.dev", "vgg", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide;
  EXPECT_THAT(TableWords(wide.out)[0],
              ElementsAre("NAME", "MODEL", "GPUS", "PRIORITY", "PHASE", "BATCH", "AGE"));
  EXPECT_EQ(TableWords(wide.out)[1][5], "256");

  // The category and the CRD list.
  const KubectlResult category = Kubectl({"get", "wavepool", "-o", "name"});
  EXPECT_EQ(category.out, "trainingjob.wavepool.dev/resnet\ntrainingjob.wavepool.dev/vgg\n")
      << category;
  const KubectlResult crds = Kubectl({"get", "crd"});
  EXPECT_THAT(TableWords(crds.out)[0], ElementsAre("NAME", "CREATED", "AT")) << crds;
}

TEST_P(KubectlTest, GetJsonAndYamlShowTheDefaultsTheServerApplied) {
  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  const KubectlResult get = Kubectl({"get", "tj", "vgg", "-o", "json"});
  ASSERT_EQ(get.exit_code, 0) << get;
  const json job = json::parse(get.out);
  EXPECT_EQ(job["spec"]["priority"], "background");
  EXPECT_EQ(job["spec"]["globalBatchSize"], 256);
  EXPECT_EQ(job["status"]["phase"], "Running");
  EXPECT_EQ(job["metadata"]["generation"], 1);
  EXPECT_FALSE(job["metadata"]["uid"].get<std::string>().empty());

  const KubectlResult yaml = Kubectl({"get", "tj", "resnet", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml;
  EXPECT_THAT(yaml.out, HasSubstr("kind: TrainingJob\n"));
  EXPECT_THAT(yaml.out, HasSubstr("  globalBatchSize: 512\n"));

  const KubectlResult list = Kubectl({"get", "tj", "-o", "jsonpath={.items[*].metadata.name}"});
  EXPECT_EQ(list.out, "resnet vgg") << list;
}

TEST_P(KubectlTest, DescribeLabelAndApiResources) {
  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  const KubectlResult describe = Kubectl({"describe", "tj", "vgg"});
  ASSERT_EQ(describe.exit_code, 0) << describe;
  EXPECT_THAT(describe.out, ::testing::ContainsRegex("Name: +vgg\n"));
  EXPECT_THAT(describe.out, ::testing::ContainsRegex("Kind: +TrainingJob\n"));
  EXPECT_THAT(describe.out, ::testing::ContainsRegex("Gpus: +8\n"));
  EXPECT_THAT(describe.out, ::testing::ContainsRegex("Events: +<none>"));

  const KubectlResult label = Kubectl({"label", "tj", "vgg", "team=vision"});
  EXPECT_EQ(label.out, "trainingjob.wavepool.dev/vgg labeled\n") << label;
  const KubectlResult selected = Kubectl({"get", "tj", "-l", "team=vision", "-o", "name"});
  EXPECT_EQ(selected.out, "trainingjob.wavepool.dev/vgg\n") << selected;
  const KubectlResult labels = Kubectl({"get", "tj", "--show-labels"});
  EXPECT_THAT(labels.out, HasSubstr("team=vision")) << labels;

  const KubectlResult resources = Kubectl({"api-resources", "--api-group=wavepool.dev"});
  ASSERT_EQ(resources.exit_code, 0) << resources;
  EXPECT_THAT(TableWords(resources.out).back(),
              ElementsAre("trainingjobs", "tj", "wavepool.dev/v1alpha1", "true", "TrainingJob"));
}

TEST_P(KubectlTest, MergePatchEditAndDelete) {
  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  const KubectlResult patch =
      Kubectl({"patch", "tj", "vgg", "--type=merge", "-p", R"({"spec":{"gpus":16}})"});
  EXPECT_EQ(patch.out, "trainingjob.wavepool.dev/vgg patched\n") << patch;
  const KubectlResult after = Kubectl(
      {"get", "tj", "vgg", "-o", "jsonpath={.spec.gpus} {.metadata.generation} {.status.phase}"});
  EXPECT_EQ(after.out, "16 2 Running") << after;

  // An edit through $EDITOR: kubectl sends the difference as a merge patch.
  ASSERT_OK(WriteFile(dir_ + "/editor", "#!/bin/sh\nsed -i 's/gpus: 16/gpus: 12/' \"$1\"\n"));
  ::chmod((dir_ + "/editor").c_str(), 0755);
  const KubectlResult edit = Kubectl({"edit", "tj", "vgg"});
  EXPECT_EQ(edit.out, "trainingjob.wavepool.dev/vgg edited\n") << edit;
  EXPECT_EQ(Kubectl({"get", "tj", "vgg", "-o", "jsonpath={.spec.gpus}"}).out, "12");

  const KubectlResult invalid =
      Kubectl({"patch", "tj", "vgg", "--type=merge", "-p", R"({"spec":{"gpus":0}})"});
  EXPECT_NE(invalid.exit_code, 0);
  EXPECT_THAT(invalid.err, HasSubstr("spec.gpus: Invalid value: 0")) << invalid;

  const KubectlResult remove = Kubectl({"delete", "tj", "vgg"});
  EXPECT_EQ(remove.out, "trainingjob.wavepool.dev \"vgg\" deleted\n") << remove;
  const KubectlResult gone = Kubectl({"get", "tj", "vgg"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("trainingjobs.wavepool.dev \"vgg\" not found")) << gone;
}

TEST_P(KubectlTest, ApplyIsIdempotentAndReportsChanges) {
  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  const KubectlResult again = Kubectl({"apply", "-f", Testdata("trainingjobs.yaml")});
  EXPECT_EQ(again.out,
            "trainingjob.wavepool.dev/vgg unchanged\n"
            "trainingjob.wavepool.dev/resnet unchanged\n")
      << again;
  const std::string changed =
      "apiVersion: wavepool.dev/v1alpha1\nkind: TrainingJob\n"
      "metadata:\n  name: vgg\nspec:\n  model: vgg16\n  gpus: 32\n";
  const KubectlResult configured = Kubectl({"apply", "-f", "-"}, changed);
  EXPECT_EQ(configured.out, "trainingjob.wavepool.dev/vgg configured\n") << configured;
  EXPECT_EQ(Kubectl({"get", "tj", "vgg", "-o", "jsonpath={.spec.gpus}"}).out, "32");
}

TEST_P(KubectlTest, ObjectsOfAnUninstalledCrdAreNamedAsUnknownKinds) {
  // Without the CRD, kubectl falls back to the OpenAPI v2 document (asked for as protobuf) and
  // then says what a real cluster says.
  const KubectlResult jobs = Kubectl({"apply", "-f", Testdata("trainingjobs.yaml")});
  EXPECT_NE(jobs.exit_code, 0);
  EXPECT_THAT(jobs.err, HasSubstr("no matches for kind \"TrainingJob\" in version "
                                  "\"wavepool.dev/v1alpha1\""))
      << jobs;
  EXPECT_THAT(jobs.err, HasSubstr("ensure CRDs are installed first")) << jobs;
  EXPECT_THAT(jobs.err, Not(HasSubstr("proto"))) << jobs;
}

TEST_P(KubectlTest, InvalidObjectsAreRejectedWithTheServersCauses) {
  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  const KubectlResult invalid = Kubectl({"apply", "-f", Testdata("trainingjob-invalid.yaml")});
  EXPECT_NE(invalid.exit_code, 0);
  // kubectl lists a 422's causes one per line under its own headline.
  EXPECT_THAT(invalid.err, HasSubstr("The TrainingJob \"broken\" is invalid")) << invalid;
  EXPECT_THAT(invalid.err, HasSubstr("spec.gpus: Invalid value: 0")) << invalid;
  EXPECT_THAT(invalid.err, HasSubstr("spec.model: Unsupported value: \"alexnet\"")) << invalid;

  // Strict field validation (kubectl's default) turns an unknown field into an error.
  const KubectlResult unknown =
      Kubectl({"apply", "-f", Testdata("trainingjob-unknown-field.yaml")});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("unknown field \"spec.colour\"")) << unknown;
  // ... and a warning under --validate=warn, with the field dropped.
  const KubectlResult warned =
      Kubectl({"apply", "--validate=warn", "-f", Testdata("trainingjob-unknown-field.yaml")});
  EXPECT_EQ(warned.exit_code, 0) << warned;
  EXPECT_THAT(warned.err, HasSubstr("unknown field \"spec.colour\"")) << warned;
  EXPECT_EQ(Kubectl({"get", "tj", "colourful", "-o", "jsonpath={.spec}"}).out,
            R"({"globalBatchSize":256,"gpus":2,"model":"gpt2","priority":"background"})");
}

// kubectl's status patches and replaces are checked against constraints deep in the status, and
// a spec constraint two levels deep refuses an apply, each naming the field.
TEST_P(KubectlTest, NestedStatusAndSpecConstraintsRefuseWritesNamingTheField) {
  const KubectlResult crd = Kubectl({"apply", "-f", Testdata("gauge-crd.yaml")});
  ASSERT_EQ(crd.exit_code, 0) << crd;
  const std::string gauge =
      "apiVersion: example.com/v1\nkind: Gauge\nmetadata:\n  name: g\nspec:\n  limits:\n"
      "    memory:\n      bytes: ";
  const KubectlResult created = Kubectl({"apply", "-f", "-"}, gauge + "1\n");
  ASSERT_EQ(created.exit_code, 0) << created;
  const KubectlResult status =
      Kubectl({"patch", "gauge", "g", "--subresource=status", "--type=merge", "-p",
               R"({"status":{"devices":[{"index":0,"wave":{"headroomBytes":-1}}]}})"});
  EXPECT_NE(status.exit_code, 0);
  EXPECT_THAT(status.err,
              HasSubstr("status.devices[0].wave.headroomBytes: Invalid value: -1: "
                        "status.devices[0].wave.headroomBytes in body should be greater than or "
                        "equal to 0"))
      << status;
  const KubectlResult spec = Kubectl({"apply", "-f", "-"}, gauge + "-1\n");
  EXPECT_NE(spec.exit_code, 0);
  EXPECT_THAT(spec.err, HasSubstr("spec.limits.memory.bytes: Invalid value: -1")) << spec;
  EXPECT_EQ(Kubectl({"get", "gauge", "g", "-o", "jsonpath={.spec.limits.memory.bytes}"}).out, "1");
}

TEST_P(KubectlTest, WatchPrintsARowForEachChange) {
  ASSERT_NO_FATAL_FAILURE(ApplyTrainingJobs());
  const std::string out = dir_ + "/watch.out";
  ASSERT_OK(WriteFile(dir_ + "/watch.in", ""));
  const pid_t watch =
      Spawn({"get", "tj", "vgg", "--watch"}, dir_ + "/watch.in", out, dir_ + "/watch.err");
  ASSERT_GT(watch, 0);
  background_.push_back(watch);
  // Waits (up to a deadline, for a slow machine) until `predicate` holds for the output.
  auto wait_for = [&out](auto predicate) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!predicate(ReadFileOrEmpty(out)) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return ReadFileOrEmpty(out);
  };
  const std::string initial =
      wait_for([](const std::string& text) { return TableWords(text).size() >= 2; });
  ASSERT_EQ(TableWords(initial).size(), 2u) << initial;

  const KubectlResult patch = Kubectl({"patch", "tj", "vgg", "--subresource=status", "--type=merge",
                                       "-p", R"({"status":{"phase":"Succeeded"}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch;
  const std::string changed =
      wait_for([](const std::string& text) { return text.find("Succeeded") != std::string::npos; });
  const auto lines = TableWords(changed);
  ASSERT_EQ(lines.size(), 3u) << changed << ReadFileOrEmpty(dir_ + "/watch.err");
  EXPECT_EQ(lines[2][0], "vgg");
  EXPECT_EQ(lines[2][4], "Succeeded");
}

TEST_P(KubectlTest, BuiltinKindsApplyGetAndStrategicMergePatch) {
  const KubectlResult apply = Kubectl({"apply", "-f", Testdata("builtins.yaml")});
  ASSERT_EQ(apply.exit_code, 0) << apply;
  EXPECT_EQ(apply.out, "namespace/team-a created\nconfigmap/plan created\npod/web created\n");
  EXPECT_EQ(apply.err, "");
  const KubectlResult again = Kubectl({"apply", "-f", Testdata("builtins.yaml")});
  EXPECT_EQ(again.out, "namespace/team-a unchanged\nconfigmap/plan unchanged\npod/web unchanged\n")
      << again;

  const KubectlResult configmaps = Kubectl({"get", "configmaps", "-n", "team-a"});
  const auto cm_lines = TableWords(configmaps.out);
  ASSERT_GE(cm_lines.size(), 2u) << configmaps;
  EXPECT_THAT(cm_lines[0], ElementsAre("NAME", "DATA", "AGE"));
  EXPECT_EQ(cm_lines.back()[0], "plan");
  EXPECT_EQ(cm_lines.back()[1], "2");

  const KubectlResult pods = Kubectl({"get", "pods", "-n", "team-a"});
  const auto pod_lines = TableWords(pods.out);
  ASSERT_EQ(pod_lines.size(), 2u) << pods;
  EXPECT_THAT(pod_lines[0], ElementsAre("NAME", "READY", "STATUS", "RESTARTS", "AGE"));
  EXPECT_EQ(pod_lines[1][0], "web");
  EXPECT_EQ(pod_lines[1][1], "0/2");

  const KubectlResult namespaces = Kubectl({"get", "ns", "team-a"});
  EXPECT_THAT(TableWords(namespaces.out)[0], ElementsAre("NAME", "STATUS", "AGE")) << namespaces;

  // A strategic merge patch merges containers by name: "log" keeps its image.
  const KubectlResult patch =
      Kubectl({"patch", "pod", "web", "-n", "team-a", "-p",
               R"({"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}})"});
  EXPECT_EQ(patch.out, "pod/web patched\n") << patch;
  const KubectlResult images =
      Kubectl({"get", "pod", "web", "-n", "team-a", "-o",
               "jsonpath={range .spec.containers[*]}{.name}={.image} {end}"});
  EXPECT_EQ(images.out, "app=nginx:1.27 log=busybox:1.36 ") << images;

  const KubectlResult remove = Kubectl({"delete", "namespace", "team-a", "--wait=false"});
  EXPECT_EQ(remove.out, "namespace \"team-a\" deleted\n") << remove;
}

std::vector<std::string> KubectlBinaries() {
  return {"/usr/bin/kubectl", std::string(WAVEPOOL_TOOLS_BIN) + "/kubectl"};
}

INSTANTIATE_TEST_SUITE_P(Versions, KubectlTest, ::testing::ValuesIn(KubectlBinaries()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.index == 0 ? std::string("PathKubectl")
                                                   : std::string("ToolsKubectl");
                         });

}  // namespace
}  // namespace wavepool::testing::apiserver
