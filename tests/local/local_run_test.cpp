// `wavepool run` as users run it: the real binary, the real workers and its in-process agent on
// simulated GPUs; the report it writes; a foreground and a background job sharing a GPU, the
// background started once the foreground registered; an interrupted run resumed; failures named.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/child_process.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::local {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::wavepool::testing::ChildProcess;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::OutputFiles;
using ::wavepool::testing::ReadFileOrEmpty;
using ::wavepool::testing::SpawnOptions;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;
using json = nlohmann::json;

// How long one `wavepool run` of a test may take before it is killed and the test fails.
constexpr std::chrono::minutes kRunLimit(10);

// A foreground data-parallel job on two GPUs and a background job that shares one of them
// (BACKGROUND_STEPS: the background's steps; STEPS the foreground's).
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
  steps: BACKGROUND_STEPS
  checkpoint: {path: /checkpoints/sweep}
)";

class WavepoolRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-run-test"));
    dir_ = temp_dir_.path();
  }

  // `text` with BACKGROUND_STEPS replaced by `background_steps` and STEPS by `steps`, written to
  // <dir>/<name>.
  std::string Manifest(const std::string& name, std::string text, int steps,
                       int background_steps = 0) {
    const auto replace = [&text](const std::string& key, int value) {
      for (std::size_t at; (at = text.find(key)) != std::string::npos;) {
        text.replace(at, key.size(), std::to_string(value));
      }
    };
    replace("BACKGROUND_STEPS", background_steps);  // first: it ends in STEPS
    replace("STEPS", steps);
    const std::string path = dir_ + "/" + name;
    EXPECT_OK(WriteFile(path, text));
    return path;
  }

  // An executable <dir>/worker.sh for --worker: a foreground worker runs `foreground` (shell), a
  // background worker the real wavepool-worker.
  std::string ForegroundWorker(const std::string& foreground) {
    const std::string path = dir_ + "/worker.sh";
    EXPECT_OK(WriteFile(path, "#!/bin/sh\nif [ \"$WAVEPOOL_ROLE\" = Foreground ]; then\n" +
                                  foreground + "\nfi\nexec " + WAVEPOOL_WORKER_BIN + " \"$@\"\n"));
    EXPECT_EQ(chmod(path.c_str(), 0755), 0);
    return path;
  }

  // Starts `wavepool run` with `args` in the test's directory; output to <dir>/run<n>.out and
  // .err.
  std::unique_ptr<ChildProcess> Start(std::vector<std::string> args) {
    ++runs_;
    args.insert(args.begin(), {WAVEPOOL_BIN, "run"});
    SpawnOptions options = OutputFiles(dir_, "run" + std::to_string(runs_));
    options.cwd = dir_;
    auto run = std::make_unique<ChildProcess>(args, options);
    EXPECT_OK(run->start_status());
    return run;
  }
  // Runs `wavepool run` with `args` to its end: its exit status (128 + signal when killed), or
  // ChildProcess::kRunning when it still runs after kRunLimit (it is killed then).
  int Run(std::vector<std::string> args) { return Start(std::move(args))->Wait(kRunLimit); }
  // Whether the latest run printed `text` within `limit`.
  bool Printed(const std::string& text, std::chrono::seconds limit) const {
    return Eventually([&] { return Out().find(text) != std::string::npos; }, limit);
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

// The time of `report`'s first agent snapshot listing a task of `role` on GPU 0; -1 for none.
double FirstOnGpu0(const json& report, const std::string& role) {
  for (const json& snapshot : report["agent"]) {
    for (const json& task : snapshot["gpus"][0]["tasks"]) {
      if (task["role"] == role) return snapshot["time"].get<double>();
    }
  }
  return -1;
}

// The time of `report`'s first note that contains `text`; -1 for none.
double NoteTime(const json& report, const std::string& text) {
  for (const json& note : report["notes"]) {
    if (note["text"].get<std::string>().find(text) != std::string::npos) {
      return note["time"].get<double>();
    }
  }
  return -1;
}

TEST_F(WavepoolRun, AForegroundAndABackgroundJobShareAGpuUnderTheAgent) {
  // The background starts once the foreground registered, and the foreground has several times
  // the background's steps still to train then: the two are registered together for a while, and
  // the run takes a snapshot when the background registers.
  const std::string manifest = Manifest("pair.yaml", kPair, 400, 100);
  const int code =
      Run({manifest, "--out", "out", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN});
  ASSERT_EQ(code, 0) << Out() << Err();
  // Plain timestamped lines (stdout is not a terminal), one job per line.
  EXPECT_THAT(Out(), HasSubstr("team-a/train (foreground) done step 400/400"));
  EXPECT_THAT(Out(), HasSubstr("team-a/sweep (background) done step 100/100"));
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
  EXPECT_EQ(train["stepsTrained"].size(), 400u);
  EXPECT_EQ(sweep["stepsTrained"].size(), 100u);
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

TEST_F(WavepoolRun, ABackgroundJobStartsOnceTheForegroundOnItsGpuRegistered) {
  const std::string manifest = Manifest("pair.yaml", kPair, 40, 10);
  const int code =
      Run({manifest, "--out", "out", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN});
  ASSERT_EQ(code, 0) << Out() << Err();
  EXPECT_THAT(Out(), HasSubstr("team-a/sweep (background) waiting for the foreground step 0/10"));
  const json report = Report("out");
  // A snapshot is taken when a worker registers: the first listing the foreground's rank 0 on
  // GPU 0 is when the run first saw it registered.
  const double registered = FirstOnGpu0(report, "Foreground");
  ASSERT_GE(registered, 0) << report["agent"].dump(1);
  const double started =
      NoteTime(report,
               "team-a/sweep starts after waiting for the foreground on GPU 0: team-a/train "
               "registered with the agent");
  ASSERT_GE(started, registered) << report["notes"].dump(1);
  // Nothing of the background before: no task, no step.
  for (const json& snapshot : report["agent"]) {
    for (const json& task : snapshot["gpus"][0]["tasks"]) {
      if (task["role"] == "Background") {
        EXPECT_GE(snapshot["time"].get<double>(), started);
      }
    }
  }
  const json& sweep = report["jobs"][1];
  ASSERT_EQ(sweep["stepsTrained"].size(), 10u);
  EXPECT_GT(sweep["stepsTrained"][0]["time"].get<double>(), started);
  EXPECT_EQ(sweep["state"], "Succeeded");
}

TEST_F(WavepoolRun, ABackgroundJobWithNoForegroundOnItsGpuStartsAtOnce) {
  const std::string pair = kPair;
  const std::string background = pair.substr(pair.find("---\n") + 4);  // the pair's sweep alone
  const std::string manifest = Manifest("sweep.yaml", background, 0, 10);
  const int code =
      Run({manifest, "--out", "out", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN});
  ASSERT_EQ(code, 0) << Out() << Err();
  EXPECT_THAT(Out(), Not(HasSubstr("waiting for the foreground")));
  EXPECT_THAT(Out(), HasSubstr("team-a/sweep (background) done step 10/10"));
  const json report = Report("out");
  EXPECT_EQ(report["jobs"][0]["state"], "Succeeded");
  EXPECT_EQ(NoteTime(report, "starts after waiting"), -1) << report["notes"].dump(1);
}

TEST_F(WavepoolRun, ARunInterruptedBeforeTheBackgroundStartedReportsItInterrupted) {
  // The foreground's workers never register: the background waits for them until Ctrl-C.
  const std::string worker = ForegroundWorker("exec sleep 600");
  const std::string manifest = Manifest("pair.yaml", kPair, 20, 20);
  const auto run = Start({manifest, "--out", "out", "--threads", "1", "--worker", worker});
  const bool waiting =
      Printed("team-a/sweep (background) waiting for the foreground", std::chrono::seconds(60));
  run->Signal(SIGINT);  // Ctrl-C, whether or not it waited: the run stops its workers
  EXPECT_EQ(run->Wait(kRunLimit), 130) << Out() << Err();
  ASSERT_TRUE(waiting) << Out();
  EXPECT_THAT(Out(), HasSubstr("team-a/sweep (background) stopped step 0/20"));
  EXPECT_THAT(Out(), Not(HasSubstr("team-a/sweep starts")));
  const json report = Report("out");
  EXPECT_TRUE(report["interrupted"].get<bool>());
  EXPECT_EQ(report["jobs"][0]["state"], "Interrupted");
  const json& sweep = report["jobs"][1];
  EXPECT_EQ(sweep["state"], "Interrupted");
  EXPECT_TRUE(sweep["stepsTrained"].empty());
  EXPECT_TRUE(sweep["exitCodes"].empty());
  EXPECT_THAT(sweep["reason"].get<std::string>(), HasSubstr("before its workers started"));
  EXPECT_EQ(ReadFileOrEmpty(dir_ + "/out/logs/team-a-sweep-rank0.err"), "");  // it never ran
  EXPECT_EQ(FirstOnGpu0(report, "Background"), -1);
}

TEST_F(WavepoolRun, ABackgroundJobTrainsWhenItsForegroundFailedBeforeRegistering) {
  const std::string worker = ForegroundWorker(
      "echo \"wavepool-worker rank $WAVEPOOL_RANK: error: no device today\" >&2; exit 3");
  const std::string manifest = Manifest("pair.yaml", kPair, 20, 20);
  EXPECT_EQ(Run({manifest, "--out", "out", "--threads", "1", "--worker", worker}), 1)
      << Out() << Err();
  EXPECT_THAT(Err(), HasSubstr("TrainingJob team-a/train failed: rank 0 exited 3: "
                               "wavepool-worker rank 0: error: no device today"));
  EXPECT_THAT(Out(), HasSubstr("team-a/sweep starts after waiting for the foreground on GPU 0: "
                               "team-a/train failed before it registered with the agent; the "
                               "background trains without it"));
  EXPECT_THAT(Out(), HasSubstr("team-a/sweep (background) done step 20/20"));
  const json report = Report("out");
  EXPECT_EQ(report["jobs"][0]["state"], "Failed");
  EXPECT_EQ(report["jobs"][1]["state"], "Succeeded");
  EXPECT_EQ(report["jobs"][1]["stepsTrained"].size(), 20u);
}

TEST_F(WavepoolRun, AnInterruptedRunCheckpointsAndTheSameCommandResumesIt) {
  const std::string manifest = Manifest("pair.yaml", kPair, 1200, 1200);
  const auto first =
      Start({manifest, "--out", "first", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN});
  ASSERT_TRUE(Printed("team-a/train (foreground) training", std::chrono::seconds(120))) << Out();
  first->Signal(SIGINT);  // Ctrl-C
  EXPECT_EQ(first->Wait(kRunLimit), 130) << Out() << Err();
  EXPECT_THAT(Out(), HasSubstr("run the same command to resume"));
  const json interrupted = Report("first");
  EXPECT_TRUE(interrupted["interrupted"].get<bool>());
  EXPECT_EQ(interrupted["jobs"][0]["state"], "Interrupted");
  const std::size_t trained = interrupted["jobs"][0]["stepsTrained"].size();
  ASSERT_GT(trained, 0u);
  ASSERT_LT(trained, 1200u);

  const int code =
      Run({manifest, "--out", "second", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN});
  ASSERT_EQ(code, 0) << Out() << Err();
  const json resumed = Report("second");
  EXPECT_GE(resumed["jobs"][0]["resumedFrom"].get<int>(), 1);
  EXPECT_EQ(resumed["jobs"][0]["stepsTrained"][0]["step"].get<int>(),
            resumed["jobs"][0]["resumedFrom"].get<int>() + 1);
  EXPECT_EQ(resumed["jobs"][0]["state"], "Succeeded");
}

// The processes whose environment names `text` (a run's workers carry its directory in theirs).
std::vector<pid_t> ProcessesWhoseEnvironmentHas(const std::string& text) {
  std::vector<pid_t> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    if (ReadFileOrEmpty(entry.path().string() + "/environ").find(text) != std::string::npos) {
      found.push_back(pid);
    }
  }
  return found;
}

TEST_F(WavepoolRun, TheWorkersOfARunKilledOutrightStopToo) {
  const std::string manifest = Manifest("pair.yaml", kPair, 100000, 100000);
  const auto run =
      Start({manifest, "--out", "killed", "--threads", "1", "--worker", WAVEPOOL_WORKER_BIN});
  ASSERT_TRUE(Printed("team-a/sweep (background) training", std::chrono::seconds(120))) << Out();
  const std::string marker = "WAVEPOOL_AGENT_DIR=" + dir_ + "/killed/agent";
  ASSERT_EQ(ProcessesWhoseEnvironmentHas(marker).size(), 3u);  // two foreground ranks, one bg
  run->Signal(SIGKILL);  // no chance to stop its workers itself
  EXPECT_EQ(run->Wait(kRunLimit), 128 + SIGKILL);
  // They get SIGTERM from the kernel, checkpoint and exit (reaped by init, as orphans are).
  EXPECT_TRUE(Eventually([&] { return ProcessesWhoseEnvironmentHas(marker).empty(); },
                         std::chrono::seconds(60)))
      << ProcessesWhoseEnvironmentHas(marker).size() << " workers left";
}

TEST_F(WavepoolRun, BadManifestsAndFailedJobsAreNamed) {
  const std::string bad = Manifest("bad.yaml", R"(apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: oops}
spec: {role: Foreground, model: {name: mlp_tiny}, globalBatchSize: 0, gpus: 1, steps: 2}
)",
                                   0);
  EXPECT_EQ(Run({bad}), 2);
  EXPECT_THAT(Err(), HasSubstr("bad.yaml: document 1"));
  EXPECT_THAT(Err(), HasSubstr("spec.globalBatchSize"));

  // What is not a regular file is refused at once, unread: a FIFO would block the run until a
  // writer came, /dev/zero never ends.
  const std::string fifo = dir_ + "/fifo.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& file : {fifo, std::string("/dev/zero")}) {
    EXPECT_EQ(Run({file}), 2) << file;
    EXPECT_THAT(Err(), HasSubstr("read manifest " + file + ": not a regular file"));
  }

  const std::string ok = Manifest("ok.yaml", R"(apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: ok, namespace: default}
spec: {role: Foreground, model: {name: mlp_tiny}, globalBatchSize: 8, gpus: 1, steps: 5}
)",
                                  0);
  // The workers cannot read the data: the job fails, named with its worker's reason.
  EXPECT_EQ(Run({ok, "--out", "failed", "--data", "cifar10:/nonexistent", "--worker",
                 WAVEPOOL_WORKER_BIN}),
            1);
  EXPECT_THAT(Err(), HasSubstr("TrainingJob default/ok failed: rank 0 exited 3"));
  EXPECT_THAT(Err(), HasSubstr("/nonexistent"));
  EXPECT_EQ(Report("failed")["jobs"][0]["state"], "Failed");
}

}  // namespace
}  // namespace wavepool::local
