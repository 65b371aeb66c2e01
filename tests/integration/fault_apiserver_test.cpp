// The API server misbehaving under the controller while it places jobs:
//  - restarted mid-watch (TestApiServer::Restart with a data directory, so objects and the
//    resourceVersion counter survive while every connection breaks);
//  - watch expiry: the watch history compacted and every watch cut, so that the informers' next
//    watch gets 410 Expired and they must re-list (what etcd compaction does to a controller).
// In both cases every job must reach Running with exactly one gang and no pod created twice.
// Seeds are printed; run again with WAVEPOOL_FAULT_SEED=<seed> to reproduce.
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/fault_support.h"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/manager.h"

namespace wavepool::controller::fault {
namespace {

using ::testing::IsEmpty;
using ::wavepool::testing::TestCluster;

constexpr auto kConvergeTimeout = std::chrono::seconds(180);

// Pod names created more than once across the logs, or outside every final placement.
std::vector<std::string> CreationProblems(const std::vector<std::map<std::string, int>>& logs,
                                          const Snapshot& snapshot) {
  std::map<std::string, int> total;
  for (const auto& log : logs) {
    for (const auto& [name, count] : log) total[name] += count;
  }
  std::set<std::string> placed;
  for (const api::TrainingJob& job : snapshot.jobs) {
    for (const api::PodPlacement& placement : job.status.placement) placed.insert(placement.pod);
  }
  std::vector<std::string> problems;
  for (const auto& [name, count] : total) {
    if (count > 1) problems.push_back(name + " created " + std::to_string(count) + " times");
    if (placed.count(name) == 0) problems.push_back(name + " is in no job's placement");
  }
  return problems;
}

TEST(FaultApiServer, RestartMidPlacementLosesNoJobAndDuplicatesNoPod) {
  std::mt19937 rng = SeededRng();
  TestCluster::Options options = FixtureOptions(4, 8, /*start_controller=*/false);
  options.persistent = true;
  options.heartbeat_period = std::chrono::seconds(1);
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(options));
  ASSERT_OK(CreateNamespace(cluster->client()));
  ASSERT_OK_AND_ASSIGN(auto controller_client, ConnectTo(cluster->server()));
  ASSERT_OK_AND_ASSIGN(auto manager,
                       ControllerManager::Create(*controller_client, FastManagerOptions()));
  ASSERT_OK(manager->Start());

  std::vector<std::map<std::string, int>> creations;
  std::vector<nlohmann::json> jobs = MixedJobs(rng, 10, 14, 8, 24);
  ASSERT_OK_AND_ASSIGN(auto log, PodCreationLog::Start(cluster->server().store()));
  ASSERT_OK(CreateJobs(cluster->client(), jobs));
  std::uniform_int_distribution<int> delay_ms(20, 400);
  for (int restart = 0; restart < 2; ++restart) {
    const int delay = delay_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    // The log watches the store that Restart replaces: stop it first, start a new one after.
    log->Stop();
    creations.push_back(log->Creations());
    ASSERT_OK(cluster->server().Restart());
    ASSERT_OK_AND_ASSIGN(log, PodCreationLog::Start(cluster->server().store()));
    ASSERT_OK_AND_ASSIGN(Snapshot snapshot, TakeSnapshot(cluster->client()));
    std::cout << "restart " << restart << " after " << delay << " ms: " << CountPlaced(snapshot)
              << " of " << snapshot.jobs.size() << " jobs placed\n";
  }
  // The simulated kubelet drops a pod status write that failed while the server was down (a
  // real kubelet's status manager retries); a new kubelet looks at every pod again.
  ASSERT_OK(cluster->RestartKubelets());
  // Jobs created after the restarts are seen through the informers' new watches.
  const std::vector<nlohmann::json> late = {ForegroundJob("late-fg", 4), BackgroundJob("late-bg")};
  ASSERT_OK(CreateJobs(cluster->client(), late));
  const Snapshot last =
      WaitAllRunning(cluster->client(), jobs.size() + late.size(), kConvergeTimeout);
  log->Stop();
  creations.push_back(log->Creations());
  EXPECT_THAT(CheckInvariants(last, {}), IsEmpty());
  EXPECT_THAT(CreationProblems(creations, last), IsEmpty());
  if (HasFailure()) {
    for (const api::TrainingJob& job : last.jobs) {
      std::cout << job.metadata.name << " rv " << job.metadata.resource_version << " generation "
                << job.status.gang_generation << " placement "
                << api::ToJson(job)["status"].value("placement", nlohmann::json()).dump() << "\n";
    }
  }
  manager->Stop();
}

TEST(FaultApiServer, WatchExpiryRelistsAndConverges) {
  std::mt19937 rng = SeededRng();
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(FixtureOptions(4, 8, true)));
  ASSERT_OK(CreateNamespace(cluster->client()));
  ASSERT_OK_AND_ASSIGN(auto log, PodCreationLog::Start(cluster->server().store()));
  const std::vector<nlohmann::json> jobs = MixedJobs(rng, 10, 14, 8, 24);
  const std::vector<nlohmann::json> first(jobs.begin(), jobs.begin() + 12);
  const std::vector<nlohmann::json> second(jobs.begin() + 12, jobs.end());
  ASSERT_OK(CreateJobs(cluster->client(), first));
  std::uniform_int_distribution<int> delay_ms(20, 400);
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    cluster->server().Compact();
    cluster->server().DropWatches();
  }
  // Created while every informer is re-listing: only a fresh list can show these jobs.
  ASSERT_OK(CreateJobs(cluster->client(), second));
  cluster->server().Compact();
  cluster->server().DropWatches();
  const Snapshot last = WaitAllRunning(cluster->client(), jobs.size(), kConvergeTimeout);
  log->Stop();
  EXPECT_THAT(CheckInvariants(last, {}), IsEmpty());
  EXPECT_THAT(CreationProblems({log->Creations()}, last), IsEmpty());
}

}  // namespace
}  // namespace wavepool::controller::fault
