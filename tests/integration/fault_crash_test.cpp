// The controller killed at random points while it places a batch of jobs, and started again: the
// reconciler is level-based and records a placement in status before it creates pods, so a
// controller that dies anywhere must, once restarted, place every job exactly once.
//
// The real `wavepool-controller` binary runs as a child process against the test API server over
// HTTP and is SIGKILLed (no chance to clean up) at seeded random delays; an in-process variant
// stops and restarts the ControllerManager at random delays. Seeds are printed; run again with
// WAVEPOOL_FAULT_SEED=<seed> to reproduce.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/fault_support.h"
#include "tests/support/child_process.h"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::controller::fault {
namespace {

using ::testing::IsEmpty;
using ::wavepool::testing::ChildProcess;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::ReadFileOrEmpty;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::TestCluster;
using ::wavepool::testing::WriteFile;

constexpr auto kConvergeTimeout = std::chrono::seconds(180);

// Every pod the store ever created belongs to a job's final placement: no job was placed twice
// (a second placement would have created pods under other names or generations).
std::vector<std::string> CreatedOutsidePlacement(const PodCreationLog& log,
                                                 const Snapshot& snapshot) {
  std::set<std::string> placed;
  for (const api::TrainingJob& job : snapshot.jobs) {
    for (const api::PodPlacement& placement : job.status.placement) placed.insert(placement.pod);
  }
  std::vector<std::string> problems;
  for (const auto& [name, count] : log.Creations()) {
    if (placed.count(name) == 0) problems.push_back("pod " + name + " is in no job's placement");
  }
  return problems;
}

// Waits until every job of `jobs` is Running with its placement, then checks the invariants and
// the creation log.
void ExpectConvergedOnce(kube::Client& client, const PodCreationLog& log, std::size_t jobs) {
  const Snapshot last = WaitAllRunning(client, jobs, kConvergeTimeout);
  EXPECT_THAT(CheckInvariants(last, {}), IsEmpty());
  EXPECT_THAT(log.Duplicates(), IsEmpty());
  EXPECT_THAT(CreatedOutsidePlacement(log, last), IsEmpty());
  std::size_t pods = 0;
  for (const api::TrainingJob& job : last.jobs) pods += job.status.placement.size();
  EXPECT_EQ(log.Creations().size(), pods);
}

#ifdef WAVEPOOL_CONTROLLER_BIN

// The flags of a controller that talks to `kubeconfig` alone, with short timings.
std::vector<std::string> ControllerArgs(const std::string& kubeconfig) {
  return {"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--http-port=-1", "--workers=2"};
}

// The wavepool-controller binary talking to `kubeconfig`, both its streams appended to `log_path`:
// every round's controller adds to one log.
std::unique_ptr<ChildProcess> StartController(const std::string& kubeconfig,
                                              const std::string& log_path) {
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  EXPECT_GE(log_fd, 0) << "cannot open " << log_path;
  testing::SpawnOptions options;
  options.out = testing::ChildStream::Descriptor(log_fd);
  options.err = testing::ChildStream::Descriptor(log_fd);
  std::vector<std::string> argv = {WAVEPOOL_CONTROLLER_BIN};
  for (std::string& arg : ControllerArgs(kubeconfig)) argv.push_back(std::move(arg));
  auto controller = std::make_unique<ChildProcess>(argv, options);
  if (log_fd >= 0) close(log_fd);
  return controller;
}

// How many controllers wrote their start line to `log_path`.
int StartedControllers(const std::string& log_path) {
  const std::string log = ReadFileOrEmpty(log_path);
  int started = 0;
  for (std::size_t at = log.find(": API server "); at != std::string::npos;
       at = log.find(": API server ", at + 1)) {
    ++started;
  }
  return started;
}

TEST(FaultCrash, ControllerProcessKilledAtRandomPointsPlacesEveryJobOnce) {
  std::mt19937 rng = SeededRng();
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(FixtureOptions(4, 8, false)));
  ASSERT_OK(CreateNamespace(cluster->client()));
  ASSERT_OK_AND_ASSIGN(auto log, PodCreationLog::Start(cluster->server().store()));
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-fault-crash"));
  const std::string kubeconfig = dir.File("kubeconfig");
  ASSERT_OK(WriteFile(kubeconfig, cluster->server().Kubeconfig()));
  const std::string log_path = dir.File("controller.log");
  ASSERT_OK(WriteFile(log_path, ""));
  std::cout << "controller log: " << log_path << "\n";

  // Up to 28 of the 32 GPUs for foreground gangs, 14 background pods; created in four batches,
  // each while the controller of its round is starting.
  const std::vector<nlohmann::json> jobs = MixedJobs(rng, 10, 14, 8, 28);
  const std::size_t batch = (jobs.size() + 3) / 4;
  std::uniform_int_distribution<int> delay_ms(30, 600);
  constexpr int kRounds = 7;
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<ChildProcess> controller = StartController(kubeconfig, log_path);
    ASSERT_OK(controller->start_status());
    const std::size_t first = static_cast<std::size_t>(round) * batch;
    if (first < jobs.size()) {
      const std::vector<nlohmann::json> some(
          jobs.begin() + static_cast<std::ptrdiff_t>(first),
          jobs.begin() + static_cast<std::ptrdiff_t>(std::min(jobs.size(), first + batch)));
      ASSERT_OK(CreateJobs(cluster->client(), some));
    }
    const int delay = delay_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    ASSERT_TRUE(controller->Running()) << "the controller exited by itself; see " << log_path;
    controller->Signal(SIGKILL);
    ASSERT_EQ(controller->Wait(), 128 + SIGKILL);
    ASSERT_OK_AND_ASSIGN(Snapshot snapshot, TakeSnapshot(cluster->client()));
    std::cout << "round " << round << ": SIGKILL after " << delay << " ms with "
              << CountPlaced(snapshot) << " of " << snapshot.jobs.size() << " jobs placed, "
              << snapshot.pods.size() << " pods\n";
    // Whatever the moment of death, what exists is consistent (placements may be incomplete).
    InvariantOptions partial;
    partial.all_placed = false;
    EXPECT_THAT(CheckInvariants(snapshot, partial), IsEmpty());
  }
  // The jobs may all be placed already; the last controller must still come up and keep them so.
  // (A controller killed early in its round may have died before its start line.)
  const int started = StartedControllers(log_path);
  std::unique_ptr<ChildProcess> controller = StartController(kubeconfig, log_path);
  ASSERT_OK(controller->start_status());
  ASSERT_TRUE(Eventually([&] { return StartedControllers(log_path) > started; }))
      << "the last controller did not start; see " << log_path;
  ExpectConvergedOnce(cluster->client(), *log, jobs.size());
  EXPECT_TRUE(controller->Running());
  EXPECT_EQ(controller->Stop(std::chrono::seconds(10)), 0) << "see " << log_path;
  log->Stop();
  // The directory goes with the test: a failure shows the log here.
  if (HasFailure()) std::cout << "controller log:\n" << ReadFileOrEmpty(log_path) << "\n";
}

#endif  // WAVEPOOL_CONTROLLER_BIN

TEST(FaultCrash, InProcessControllerRestartedAtRandomPointsPlacesEveryJobOnce) {
  std::mt19937 rng = SeededRng();
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(FixtureOptions(4, 8, true)));
  ASSERT_OK(CreateNamespace(cluster->client()));
  ASSERT_OK_AND_ASSIGN(auto log, PodCreationLog::Start(cluster->server().store()));
  const std::vector<nlohmann::json> jobs = MixedJobs(rng, 10, 14, 8, 28);
  ASSERT_OK(CreateJobs(cluster->client(), jobs));
  std::uniform_int_distribution<int> delay_ms(20, 600);
  for (int round = 0; round < 8; ++round) {
    const int delay = delay_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    ASSERT_OK(cluster->RestartController());
  }
  ExpectConvergedOnce(cluster->client(), *log, jobs.size());
  log->Stop();
  if (HasFailure()) {
    for (const nlohmann::json& event : cluster->EventsOf("bg-0", kNamespace)) {
      std::cout << "event bg-0: " << event.value("reason", "") << ": " << event.value("message", "")
                << "\n";
    }
    for (const std::string& line : cluster->ControllerLog()) std::cout << "log: " << line << "\n";
  }
}

}  // namespace
}  // namespace wavepool::controller::fault
