// `wavepool run` as users run it: the real binary, the real workers and its in-process agent on
// simulated GPUs; the report it writes; a foreground and a background job sharing a GPU; an
// interrupted run resumed; failures named.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::local {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::ReadFileOrEmpty;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;
using json = nlohmann::json;

// A foreground data-parallel job on two GPUs and a background job that shares one of them.
constexpr const char* kPair = R"(apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: train, namespace: team-a}
spec:
  role: Foreground
  model: {name: cnn_tiny}
  globalBatchSize: 32
  gpus: 2
  steps: STEPS
  parallelism: {strategy: DataParallel}
  collocation: {maxForegroundSlowdown: 1.2}
---
apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: sweep, namespace: team-a}
spec:
  role: Background
  model: {name: mlp_tiny}
  globalBatchSize: 64
  gpus: 1
  steps: STEPS
  checkpoint: {path: /checkpoints/sweep}
)";

class WavepoolRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-run-test"));
    dir_ = temp_dir_.path();
  }

  std::string Manifest(const std::string& name, std::string text, int steps) {
    const std::string key = "STEPS";
    for (std::size_t at; (at = text.find(key)) != std::string::npos;) {
      text.replace(at, key.size(), std::to_string(steps));
    }
    const std::string path = dir_ + "/" + name;
    EXPECT_OK(WriteFile(path, text));
    return path;
  }

  // Starts `wavepool run` with `args`; output to <dir>/run<n>.out and .err.
  pid_t Start(std::vector<std::string> args) {
    ++runs_;
    args.insert(args.begin(), {WAVEPOOL_BIN, "run"});
    const std::string out = dir_ + "/run" + std::to_string(runs_) + ".out";
    const std::string err = dir_ + "/run" + std::to_string(runs_) + ".err";
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir_.c_str()) != 0 || std::freopen(out.c_str(), "w", stdout) == nullptr ||
          std::freopen(err.c_str(), "w", stderr) == nullptr) {
        _exit(126);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }
  static int Wait(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string Out() const {
    return ReadFileOrEmpty(dir_ + "/run" + std::to_string(runs_) + ".out");
  }
  std::string Err() const {
    return ReadFileOrEmpty(dir_ + "/run" + std::to_string(runs_) + ".err");
  }
  json Report(const std::string& out) const {
    return json::parse(ReadFileOrEmpty(dir_ + "/" + out + "/report.json"));
  }

  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
  int runs_ = 0;
};

TEST_F(WavepoolRun, AForegroundAndABackgroundJobShareAGpuUnderTheAgent) {
  const std::string manifest = Manifest("pair.yaml", kPair, 150);
  const int code =
      Wait(Start({manifest, "--out", "out", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN}));
  ASSERT_EQ(code, 0) << Out() << Err();
  // Plain timestamped lines (stdout is not a terminal), one job per line.
  EXPECT_THAT(Out(), HasSubstr("team-a/train (foreground) done step 150/150"));
  EXPECT_THAT(Out(), HasSubstr("team-a/sweep (background) done step 150/150"));
  EXPECT_THAT(Out(), HasSubstr("report: out/report.json"));
  const json report = Report("out");
  EXPECT_EQ(report["kind"], "LocalRunReport");
  EXPECT_FALSE(report["interrupted"].get<bool>());
  ASSERT_EQ(report["jobs"].size(), 2u);
  const json& train = report["jobs"][0];
  const json& sweep = report["jobs"][1];
  EXPECT_EQ(train["state"], "Succeeded");
  EXPECT_EQ(train["gpus"], json::array({0, 1}));
  EXPECT_EQ(sweep["gpus"], json::array({0}));  // beside the foreground's first rank
  EXPECT_EQ(train["stepsTrained"].size(), 150u);
  EXPECT_EQ(sweep["stepsTrained"].size(), 150u);
  EXPECT_GT(train["plan"]["iterationSeconds"].get<double>(), 0);
  // The agent saw both tasks on GPU 0, with the foreground's credits and the background's.
  bool both = false;
  for (const json& snapshot : report["agent"]) {
    std::set<std::string> roles;
    for (const json& task : snapshot["gpus"][0]["tasks"]) {
      roles.insert(task["role"].get<std::string>() + ":" +
                   std::to_string(task["creditLimit"].get<int>()));
    }
    both = both || (roles.count("Foreground:2") > 0 && roles.count("Background:1") > 0);
  }
  EXPECT_TRUE(both) << report["agent"].dump(1);
  // Every worker's allocator samples, as the agent received them (the memory waves of
  // report.html), and the gate's pacing totals.
  std::set<std::string> remembered;
  for (const json& memory : report["memory"]) {
    EXPECT_EQ(memory["time"].size(), memory["allocatedBytes"].size());
    if (!memory["time"].empty()) remembered.insert(memory["job"].get<std::string>());
  }
  EXPECT_EQ(remembered, (std::set<std::string>{"team-a/train", "team-a/sweep"}));
  // The gate's totals of every task (a worker on the CPU waits only when paused: how long is
  // up to the scheduler).
  bool totals = false;
  for (const json& snapshot : report["agent"]) {
    for (const json& task : snapshot["gpus"][0]["tasks"]) {
      EXPECT_GE(task["launchWaitSeconds"].get<double>(), task["launchPausedSeconds"].get<double>());
      totals = true;
    }
  }
  EXPECT_TRUE(totals);
  EXPECT_THAT(Out(), HasSubstr("report: out/report.html"));
  EXPECT_THAT(ReadFileOrEmpty(dir_ + "/out/report.html"), HasSubstr("<figure class=\"chart\""));
}

TEST_F(WavepoolRun, AnInterruptedRunCheckpointsAndTheSameCommandResumesIt) {
  const std::string manifest = Manifest("pair.yaml", kPair, 1200);
  const pid_t first =
      Start({manifest, "--out", "first", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN});
  ASSERT_TRUE(Eventually(
      [&] { return Out().find("team-a/train (foreground) training") != std::string::npos; },
      std::chrono::seconds(120)))
      << Out();
  kill(first, SIGINT);  // Ctrl-C
  EXPECT_EQ(Wait(first), 130) << Out() << Err();
  EXPECT_THAT(Out(), HasSubstr("run the same command to resume"));
  const json interrupted = Report("first");
  EXPECT_TRUE(interrupted["interrupted"].get<bool>());
  EXPECT_EQ(interrupted["jobs"][0]["state"], "Interrupted");
  const std::size_t trained = interrupted["jobs"][0]["stepsTrained"].size();
  ASSERT_GT(trained, 0u);
  ASSERT_LT(trained, 1200u);

  const int code =
      Wait(Start({manifest, "--out", "second", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN}));
  ASSERT_EQ(code, 0) << Out() << Err();
  const json resumed = Report("second");
  EXPECT_GE(resumed["jobs"][0]["resumedFrom"].get<int>(), 1);
  EXPECT_EQ(resumed["jobs"][0]["stepsTrained"][0]["step"].get<int>(),
            resumed["jobs"][0]["resumedFrom"].get<int>() + 1);
  EXPECT_EQ(resumed["jobs"][0]["state"], "Succeeded");
}

TEST_F(WavepoolRun, BadManifestsAndFailedJobsAreNamed) {
  const std::string bad = Manifest("bad.yaml", R"(apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: oops}
spec: {role: Foreground, model: {name: mlp_tiny}, globalBatchSize: 0, gpus: 1, steps: 2}
)",
                                   0);
  EXPECT_EQ(Wait(Start({bad})), 2);
  EXPECT_THAT(Err(), HasSubstr("bad.yaml: document 1"));
  EXPECT_THAT(Err(), HasSubstr("spec.globalBatchSize"));

  const std::string ok = Manifest("ok.yaml", R"(apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: ok, namespace: default}
spec: {role: Foreground, model: {name: mlp_tiny}, globalBatchSize: 8, gpus: 1, steps: 5}
)",
                                  0);
  // The workers cannot read the data: the job fails, named with its worker's reason.
  EXPECT_EQ(Wait(Start({ok, "--out", "failed", "--data", "cifar10:/nonexistent", "--worker",
                        WAVEPOOL_WORKER_BIN})),
            1);
  EXPECT_THAT(Err(), HasSubstr("TrainingJob default/ok failed: rank 0 exited 3"));
  EXPECT_THAT(Err(), HasSubstr("/nonexistent"));
  EXPECT_EQ(Report("failed")["jobs"][0]["state"], "Failed");
}

}  // namespace
}  // namespace wavepool::local
