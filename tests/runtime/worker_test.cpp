// wavepool-worker as users and the controller run it: real processes meeting over a TCP store on
// loopback, their exit statuses and messages, SIGTERM with a checkpoint, and exact resumption.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/exec_test_support.h"
#include "tests/support/child_process.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/free_port.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/api/manifest.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::PlanFor;
using ::wavepool::testing::ChildProcess;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::FreePort;
using ::wavepool::testing::OutputFiles;
using ::wavepool::testing::ReadFile;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

// The loss printed on each progress line, by step.
std::map<int, std::string> Losses(const std::string& out) {
  std::map<int, std::string> losses;
  const std::regex line(R"(step (\d+)/\d+ loss (\S+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
       ++it) {
    losses[std::stoi((*it)[1])] = (*it)[2];
  }
  return losses;
}

class WorkerProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-worker"));
    dir_ = temp_dir_.path();
  }

  // Writes the planner's plan for `model` to <dir>/<name>.json.
  std::string WritePlan(const std::string& name, const std::string& model, int gpus,
                        std::int64_t batch, api::Strategy strategy, std::int64_t steps,
                        api::Toggle tick_tock = api::Toggle::kOff) {
    absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel(model);
    EXPECT_TRUE(graph.ok());
    planner::PlanRequest request;
    request.gpus = gpus;
    request.global_batch = batch;
    request.strategy = strategy;
    request.tick_tock = tick_tock;
    request.gpu_counts = api::GpuCounts::kAllIntegers;
    request.amplification_limit = 8;
    absl::StatusOr<api::Plan> plan = PlanFor(*graph, request, steps, 0.05, 3);
    EXPECT_TRUE(plan.ok()) << plan.status();
    const std::string path = dir_ + "/" + name + ".json";
    EXPECT_OK(WriteFile(path, api::ToJson(*plan).dump(2)));
    return path;
  }

  std::unique_ptr<ChildProcess> Worker(const std::string& name, std::vector<std::string> args,
                                       std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), WAVEPOOL_WORKER_BIN);
    return std::make_unique<ChildProcess>(args, OutputFiles(dir_, name, std::move(env)));
  }

  // Starts every rank of a gang; `extra` goes to every rank.
  std::vector<std::unique_ptr<ChildProcess>> Gang(const std::string& plan, int ranks,
                                                  std::vector<std::string> extra = {},
                                                  int started = -1) {
    store_port_ = FreePort();
    const std::string store = "tcp://127.0.0.1:" + std::to_string(store_port_);
    std::vector<std::unique_ptr<ChildProcess>> gang;
    ++gangs_;
    for (int r = 0; r < (started < 0 ? ranks : started); ++r) {
      std::vector<std::string> args = {"--plan",       plan,
                                       "--rank",       std::to_string(r),
                                       "--world-size", std::to_string(ranks),
                                       "--store",      store,
                                       "--log-every",  "1"};
      args.insert(args.end(), extra.begin(), extra.end());
      // A name of its own per gang: a test must never read an earlier gang's output.
      gang.push_back(Worker("gang" + std::to_string(gangs_) + "-rank" + std::to_string(r), args));
    }
    return gang;
  }

  // Trains `plan` on a gang to the end, SIGTERMs a second run after `stop_after` printed steps,
  // resumes it, and checks the resumed losses against the uninterrupted run's.
  void ExpectExactResume(const std::string& plan, int ranks, int steps, int stop_after) {
    const std::string dir = dir_;
    auto whole = Gang(plan, ranks, {"--checkpoint-dir", dir + "/whole"});
    for (auto& rank : whole) ASSERT_EQ(rank->Wait(), 0) << rank->err();
    const std::map<int, std::string> expected = Losses(whole[0]->out());
    ASSERT_EQ(expected.size(), static_cast<std::size_t>(steps));

    auto first = Gang(plan, ranks, {"--checkpoint-dir", dir + "/resumed"});
    ASSERT_TRUE(Eventually(
        [&] { return Losses(first[0]->out()).size() >= static_cast<std::size_t>(stop_after); },
        std::chrono::seconds(120)));
    for (auto& rank : first) rank->Signal(SIGTERM);
    for (auto& rank : first) {
      ASSERT_EQ(rank->Wait(), 143) << rank->err();  // WorkerExit::kStopped, after checkpointing
      EXPECT_THAT(rank->err(), HasSubstr("checkpointed"));
    }
    const std::map<int, std::string> before = Losses(first[0]->out());
    ASSERT_LT(before.size(), static_cast<std::size_t>(steps));

    auto second = Gang(plan, ranks, {"--checkpoint-dir", dir + "/resumed"});
    for (auto& rank : second) ASSERT_EQ(rank->Wait(), 0) << rank->err();
    EXPECT_THAT(second[0]->out(), HasSubstr("resumed from " + dir + "/resumed at step " +
                                            std::to_string(before.size())));
    std::map<int, std::string> losses = before;
    for (const auto& [step, loss] : Losses(second[0]->out())) {
      EXPECT_EQ(losses.count(step), 0u) << "step " << step << " trained twice";
      losses[step] = loss;
    }
    EXPECT_EQ(losses, expected);
  }

  // Whether process `pid` has an established TCP connection to `port` on this machine (IPv4 or
  // IPv6: the store listens on either): its sockets' inodes against /proc/net/tcp and tcp6.
  static bool ConnectedTo(pid_t pid, int port) {
    std::set<std::string> inodes;
    std::error_code error;
    const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
    for (const auto& fd : std::filesystem::directory_iterator(fds, error)) {
      const std::string target = std::filesystem::read_symlink(fd.path(), error).string();
      if (!error && target.rfind("socket:[", 0) == 0) {
        inodes.insert(target.substr(8, target.size() - 9));
      }
    }
    const std::string remote_port = absl::StrFormat(":%04X", port);
    for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
      std::istringstream table(::wavepool::testing::ReadFileOrEmpty(path));
      std::string line;
      while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, peer, state, queues, timer, retransmits, uid, timeout, inode;
        fields >> slot >> local >> peer >> state >> queues >> timer >> retransmits >> uid >>
            timeout >> inode;
        if (state == "01" && absl::EndsWith(peer, remote_port) && inodes.count(inode) > 0) {
          return true;  // 01: ESTABLISHED
        }
      }
    }
    return false;
  }

  TempDir temp_dir_;
  std::string dir_;  // temp_dir_.path()
  int gangs_ = 0;
  int store_port_ = 0;  // the last gang's
};

TEST_F(WorkerProcess, ABurstParallelGangTrainsToTheEndOverLoopback) {
  const std::string plan =
      WritePlan("burst", "branchy_tiny", 4, 32, api::Strategy::kBurstParallel, 6);
  auto gang = Gang(plan, 4);
  for (auto& rank : gang) ASSERT_EQ(rank->Wait(), 0) << rank->err();
  // Every rank prints the gang's loss of every step, the same on every rank.
  const std::map<int, std::string> losses = Losses(gang[0]->out());
  ASSERT_EQ(losses.size(), 6u) << gang[0]->out();
  for (auto& rank : gang) EXPECT_EQ(Losses(rank->out()), losses);
  EXPECT_THAT(gang[0]->out(), HasSubstr("done: 6 steps"));
}

TEST_F(WorkerProcess, AGangOnTheGpuTrainsAsOnTheCpu) {
  const std::string plan = WritePlan("dp", "cnn_tiny", 2, 16, api::Strategy::kDataParallel, 20);
  // A worker finds out whether there is a GPU: this process never initialises CUDA, whose state
  // a process must not carry across the fork that starts each worker.
  const std::string one = WritePlan("one", "cnn_tiny", 1, 16, api::Strategy::kDataParallel, 1);
  auto probe = Worker("probe", {"--plan", one, "--device", "cuda"});
  if (probe->Wait() != 0) GTEST_SKIP() << "no GPU for a worker: " << probe->err();
  auto on_cpu = Gang(plan, 2, {"--device", "cpu"});
  auto on_gpu = Gang(plan, 2, {"--device", "cuda"});
  for (auto& rank : on_cpu) ASSERT_EQ(rank->Wait(), 0) << rank->err();
  for (auto& rank : on_gpu) ASSERT_EQ(rank->Wait(), 0) << rank->err();
  EXPECT_THAT(on_gpu[0]->out(), HasSubstr("training on cuda:0"));
  EXPECT_THAT(on_cpu[0]->out(), Not(HasSubstr("training on")));
  const std::map<int, std::string> cpu = Losses(on_cpu[0]->out());
  const std::map<int, std::string> gpu = Losses(on_gpu[0]->out());
  ASSERT_EQ(gpu.size(), cpu.size());
  // The same training within float32 rounding (cuDNN may round convolutions' inputs to TF32).
  for (const auto& [step, loss] : cpu) {
    EXPECT_NEAR(std::stod(gpu.at(step)), std::stod(loss), 0.02 * std::stod(loss)) << step;
  }
}

TEST_F(WorkerProcess, ARankThatNeverArrivesFailsTheGangNamingIt) {
  const std::string plan = WritePlan("dp", "mlp_tiny", 3, 12, api::Strategy::kDataParallel, 4);
  auto gang = Gang(plan, 3, {"--rendezvous-timeout", "2"}, /*started=*/2);
  for (auto& rank : gang) {
    EXPECT_EQ(rank->Wait(), 4) << rank->err();  // WorkerExit::kGangBroken
    EXPECT_THAT(rank->err(), HasSubstr("rank 2 of 3 did not arrive within 2 s"));
  }
}

TEST_F(WorkerProcess, SigtermWhileWaitingForTheGangStopsAtOnce) {
  const std::string plan = WritePlan("dp", "mlp_tiny", 3, 12, api::Strategy::kDataParallel, 4);
  auto gang = Gang(plan, 3, {"--rendezvous-timeout", "600"}, /*started=*/2);
  // Ranks 0 and 1 connected to rank 0's store: both wait for rank 2, which never comes.
  for (auto& rank : gang) {
    ASSERT_TRUE(Eventually([&] { return ConnectedTo(rank->pid(), store_port_); },
                           std::chrono::seconds(60)));
  }
  for (auto& rank : gang) rank->Signal(SIGTERM);
  for (auto& rank : gang) {
    EXPECT_EQ(rank->Wait(std::chrono::seconds(60)), 143) << rank->err();  // WorkerExit::kStopped
    EXPECT_THAT(rank->err(), HasSubstr("stopped while waiting at"));
  }
}

TEST_F(WorkerProcess, BadSettingsAndBadPlansAreRefusedWithTheirReason) {
  auto bad_flag = Worker("flag", {"--plan", "x.json", "--rank", "one"});
  EXPECT_EQ(bad_flag->Wait(), 2);
  EXPECT_THAT(bad_flag->err(), HasSubstr("--rank: 'one' is not an integer >= 0"));

  auto many_threads = Worker("threads", {"--plan", "x.json", "--threads", "100000"});
  EXPECT_EQ(many_threads->Wait(), 2);
  EXPECT_THAT(many_threads->err(), HasSubstr("--threads: '100000' is not a thread count <= 1024"));

  // Below 1 s LibTorch's store would not wait at all; past 1e6 s the milliseconds overflow.
  auto short_rendezvous = Worker("rendezvous", {"--plan", "x.json", "--rendezvous-timeout", "0.5"});
  EXPECT_EQ(short_rendezvous->Wait(), 2);
  EXPECT_THAT(short_rendezvous->err(),
              HasSubstr("--rendezvous-timeout: '0.5' is not a number of seconds in [1, 1000000]"));
  auto endless_agent = Worker("agent-timeout", {"--plan", "x.json", "--agent-timeout", "1e300"});
  EXPECT_EQ(endless_agent->Wait(), 2);
  EXPECT_THAT(endless_agent->err(),
              HasSubstr("--agent-timeout: '1e300' is not a number of seconds in [0.001, 1000000]"));

  auto bad_env = Worker("env", {"--plan", "x.json"}, {{"WAVEPOOL_ROLE", "fg"}});
  EXPECT_EQ(bad_env->Wait(), 2);
  EXPECT_THAT(bad_env->err(), HasSubstr("WAVEPOOL_ROLE: 'fg' is not Foreground or Background"));

  auto bad_device = Worker("device", {"--plan", "x.json"}, {{"WAVEPOOL_DEVICE", "tpu"}});
  EXPECT_EQ(bad_device->Wait(), 2);
  EXPECT_THAT(bad_device->err(),
              HasSubstr("WAVEPOOL_DEVICE: device 'tpu' is not cpu, cuda, cuda:N or auto"));

  auto missing = Worker("missing", {"--plan", dir_ + "/nope.json"});
  EXPECT_EQ(missing->Wait(), 3);
  EXPECT_THAT(missing->err(), HasSubstr("nope.json: cannot be read"));

  ASSERT_OK(WriteFile(dir_ + "/bad.json", R"({"apiVersion": "wavepool.dev/v1alpha1", "kind": "Plan",
      "strategy": "DataParallel", "globalBatchSize": 0, "gpus": 1, "stages": []})"));
  auto invalid = Worker("invalid", {"--plan", dir_ + "/bad.json"});
  EXPECT_EQ(invalid->Wait(), 3);
  EXPECT_THAT(invalid->err(), HasSubstr("globalBatchSize"));

  const std::string plan = WritePlan("dp", "mlp_tiny", 2, 8, api::Strategy::kDataParallel, 2);
  auto mismatch = Worker("mismatch", {"--plan", plan, "--world-size", "3", "--rank", "0", "--store",
                                      "file://" + dir_ + "/store"});
  EXPECT_EQ(mismatch->Wait(), 3);
  EXPECT_THAT(mismatch->err(), HasSubstr("--world-size 3 does not match the plan's 2 GPUs"));

  // No machine has this GPU (a CPU build has none): refused before the gang meets, so rank 1
  // never starts.
  auto no_gpu = Worker("no-gpu", {"--plan", plan, "--device", "cuda:9999", "--rank", "0",
                                  "--world-size", "2", "--store", "file://" + dir_ + "/store2"});
  EXPECT_EQ(no_gpu->Wait(), 3);
  EXPECT_THAT(no_gpu->err(), HasSubstr("device 'cuda:9999': "));
}

TEST_F(WorkerProcess, APlanThatIsNoRegularFileOrTooLargeIsRefusedNotWaitedOnOrReadWhole) {
  // A FIFO: opening it for reading would wait for a writer that never comes.
  const std::string fifo = dir_ + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = Worker("fifo", {"--plan", fifo});
  EXPECT_EQ(from_fifo->Wait(std::chrono::seconds(30)), 3) << "still waiting on the FIFO";
  EXPECT_THAT(from_fifo->err(), HasSubstr("read plan " + fifo + ": not a regular file"));

  auto from_directory = Worker("directory", {"--plan", dir_});
  EXPECT_EQ(from_directory->Wait(std::chrono::seconds(30)), 3);
  EXPECT_THAT(from_directory->err(), HasSubstr("read plan " + dir_ + ": not a regular file"));

  // 64 MiB and one byte, sparse: refused by its size before any of it is read.
  const std::string huge = dir_ + "/huge.json";
  ASSERT_OK(WriteFile(huge, ""));
  std::filesystem::resize_file(huge, (std::uintmax_t{64} << 20) + 1);
  auto from_huge = Worker("huge", {"--plan", huge});
  EXPECT_EQ(from_huge->Wait(std::chrono::seconds(30)), 3);
  EXPECT_THAT(from_huge->err(),
              HasSubstr("read plan " + huge + ": 67108865 bytes, more than the 67108864"));
}

// A job counted in epochs of spec.datasetSamples samples trains on a dataset of that size only:
// on another, its epochs would not be epochs. Synthetic data takes the size.
TEST_F(WorkerProcess, ADatasetOfAnotherSizeThanTheJobsEpochIsRefused) {
  const std::string cifar = dir_ + "/cifar";
  std::filesystem::create_directories(cifar);
  for (int file = 1; file <= 5; ++file) {  // 5 x 5 records of a label and 3x32x32 pixels
    std::string records;
    for (int r = 0; r < 5; ++r)
      records += std::string(1, static_cast<char>(r)) + std::string(3072, '\x40');
    ASSERT_OK(WriteFile(absl::StrCat(cifar, "/data_batch_", file, ".bin"), records));
  }
  const std::string plan_path = WritePlan("dp", "cnn_tiny", 1, 8, api::Strategy::kDataParallel, 2);
  ASSERT_OK_AND_ASSIGN(const std::string text, ReadFile(plan_path));
  ASSERT_OK_AND_ASSIGN(api::Plan plan, api::LoadPlan(text));
  const auto with_epoch = [&](std::int64_t samples) {
    plan.training.dataset_samples = samples;
    const std::string path = absl::StrCat(dir_, "/epoch-", samples, ".json");
    EXPECT_OK(WriteFile(path, api::ToJson(plan).dump(2)));
    return path;
  };
  auto other = Worker("other", {"--plan", with_epoch(20), "--data", "cifar10:" + cifar});
  EXPECT_EQ(other->Wait(), 3);
  EXPECT_THAT(other->err(), HasSubstr("holds 25 samples, but the plan's training.datasetSamples "
                                      "(the job's spec.datasetSamples) is 20"));
  auto same = Worker("same", {"--plan", with_epoch(25), "--data", "cifar10:" + cifar});
  EXPECT_EQ(same->Wait(), 0) << same->err();
  auto synthetic = Worker("synthetic", {"--plan", with_epoch(20)});
  EXPECT_EQ(synthetic->Wait(), 0) << synthetic->err();
}

TEST_F(WorkerProcess, AJobResumedAtOrPastItsLastStepTrainsNothingAndInventsNoLoss) {
  const std::string plan = WritePlan("dp", "mlp_tiny", 1, 8, api::Strategy::kDataParallel, 3);
  auto run = Worker("run", {"--plan", plan, "--checkpoint-dir", dir_ + "/ck"});
  ASSERT_EQ(run->Wait(), 0) << run->err();
  for (const char* steps : {"3", "2"}) {
    auto again = Worker(std::string("again-") + steps,
                        {"--plan", plan, "--steps", steps, "--checkpoint-dir", dir_ + "/ck"});
    EXPECT_EQ(again->Wait(), 0) << again->err();
    EXPECT_THAT(again->out(), HasSubstr(absl::StrCat("done: nothing to train, the checkpoint is at "
                                                     "step 3 of ",
                                                     steps)));
    EXPECT_THAT(again->out(), Not(HasSubstr("final loss")));
  }
}

TEST_F(WorkerProcess, SigtermCheckpointsAndTheResumedRunRepeatsTheUninterruptedLosses) {
  const std::string plan = WritePlan("dp", "cnn_tiny", 2, 16, api::Strategy::kDataParallel, 200);
  ExpectExactResume(plan, 2, 200, 5);
}

TEST_F(WorkerProcess, ATickTockGangResumesExactlyToo) {
  const std::string plan =
      WritePlan("tt", "mlp_tiny", 2, 16, api::Strategy::kDataParallel, 600, api::Toggle::kOn);
  ExpectExactResume(plan, 2, 600, 7);
}

TEST_F(WorkerProcess, ACorruptCheckpointIsAnErrorNeverAFreshStart) {
  const std::string plan = WritePlan("dp", "mlp_tiny", 1, 8, api::Strategy::kDataParallel, 3);
  auto run = Worker("run", {"--plan", plan, "--checkpoint-dir", dir_ + "/ck"});
  ASSERT_EQ(run->Wait(), 0) << run->err();
  const std::string file = dir_ + "/ck/step-3/rank-0.ckpt";
  ASSERT_TRUE(std::filesystem::exists(file));
  ASSERT_OK_AND_ASSIGN(std::string bytes, ReadFile(file));
  bytes[bytes.size() / 2] ^= 0x5a;
  ASSERT_OK(WriteFile(file, bytes));
  auto again = Worker("again", {"--plan", plan, "--steps", "5", "--checkpoint-dir", dir_ + "/ck"});
  EXPECT_EQ(again->Wait(), 3);
  EXPECT_THAT(again->err(), HasSubstr(file));
  EXPECT_THAT(again->out(), ::testing::Not(HasSubstr("step 1/")));
}

}  // namespace
}  // namespace wavepool::runtime
