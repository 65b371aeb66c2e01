// A node's agent disappears (SimulatedNodeAgents::StopHeartbeat): its GPUNode's heartbeat goes
// stale, and the controller must move the gangs on that node elsewhere (a new gang generation),
// leave the jobs on other nodes alone, and place new jobs away from it; once the agent is back
// (ResumeHeartbeat) its GPUs take pods again. The node itself stays Ready throughout: only the
// agent is gone, which is what the heartbeat exists to detect.
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/fault_support.h"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/status_matchers.h"

namespace wavepool::controller::fault {
namespace {

using ::testing::IsEmpty;
using ::wavepool::testing::TestCluster;

constexpr auto kConvergeTimeout = std::chrono::seconds(120);

std::set<std::string> NodesOf(const api::TrainingJob& job) {
  std::set<std::string> nodes;
  for (const api::PodPlacement& placement : job.status.placement) nodes.insert(placement.node);
  return nodes;
}

bool AvoidsNode(const Snapshot& snapshot, const std::string& node) {
  for (const api::TrainingJob& job : snapshot.jobs) {
    if (NodesOf(job).count(node) > 0) return false;
  }
  return true;
}

TEST(FaultAgent, StaleHeartbeatMovesJobsAwayAndResumedAgentTakesPodsAgain) {
  // 3 nodes x 4 GPUs; a heartbeat older than 3 s is stale (agents beat every 0.5 s).
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(FixtureOptions(3, 4, false)));
  ManagerOptions options = cluster->ControllerOptions();
  options.reconciler.heartbeat_timeout = std::chrono::seconds(3);
  ASSERT_OK(cluster->StartController(options));
  ASSERT_OK(CreateNamespace(cluster->client()));
  // 6 foreground GPUs and 3 background pods: after losing a node, 8 GPUs still hold them.
  const std::vector<nlohmann::json> jobs = {ForegroundJob("fg-0", 2), ForegroundJob("fg-1", 2),
                                            ForegroundJob("fg-2", 2), BackgroundJob("bg-0"),
                                            BackgroundJob("bg-1"),    BackgroundJob("bg-2")};
  ASSERT_OK(CreateJobs(cluster->client(), jobs));
  const Snapshot before = WaitAllRunning(cluster->client(), jobs.size(), kConvergeTimeout);
  ASSERT_THAT(CheckInvariants(before, {}), IsEmpty());

  // The agent of the node with the most pods goes away.
  std::map<std::string, int> pods_per_node;
  for (const api::TrainingJob& job : before.jobs) {
    for (const api::PodPlacement& placement : job.status.placement) ++pods_per_node[placement.node];
  }
  std::string victim;
  for (const auto& [node, count] : pods_per_node) {
    if (victim.empty() || count > pods_per_node[victim]) victim = node;
  }
  ASSERT_OK(cluster->AgentsOf(victim).StopHeartbeat(victim));

  // Its jobs move; the jobs elsewhere keep their first gang.
  const Snapshot moved = WaitAllRunning(cluster->client(), jobs.size(), kConvergeTimeout,
                                        [&](const Snapshot& s) { return AvoidsNode(s, victim); });
  InvariantOptions away;
  away.first_generation = false;
  away.avoided_nodes = {victim};
  EXPECT_THAT(CheckInvariants(moved, away), IsEmpty());
  std::map<std::string, std::int64_t> generation_before;
  std::map<std::string, bool> was_on_victim;
  for (const api::TrainingJob& job : before.jobs) {
    generation_before[job.metadata.name] = job.status.gang_generation;
    was_on_victim[job.metadata.name] = NodesOf(job).count(victim) > 0;
  }
  for (const api::TrainingJob& job : moved.jobs) {
    if (was_on_victim[job.metadata.name]) {
      EXPECT_GT(job.status.gang_generation, generation_before[job.metadata.name])
          << job.metadata.name << " moved off " << victim << " without a new gang";
    } else {
      EXPECT_EQ(job.status.gang_generation, generation_before[job.metadata.name])
          << job.metadata.name << " was restarted though its node kept its agent";
    }
  }

  // New jobs avoid the node while its agent is gone (2 GPUs are free elsewhere).
  ASSERT_OK(CreateJobs(cluster->client(), {ForegroundJob("late-fg", 2), BackgroundJob("late-bg")}));
  const Snapshot late = WaitAllRunning(cluster->client(), jobs.size() + 2, kConvergeTimeout);
  EXPECT_THAT(CheckInvariants(late, away), IsEmpty());

  // The agent returns: a 4-GPU gang fits only on its node now (the others hold 8 fg GPUs).
  ASSERT_OK(cluster->AgentsOf(victim).ResumeHeartbeat(victim));
  ASSERT_OK(CreateJobs(cluster->client(), {ForegroundJob("resumed-fg", 4)}));
  const Snapshot resumed = WaitAllRunning(cluster->client(), jobs.size() + 3, kConvergeTimeout);
  InvariantOptions any_generation;
  any_generation.first_generation = false;
  EXPECT_THAT(CheckInvariants(resumed, any_generation), IsEmpty());
  for (const api::TrainingJob& job : resumed.jobs) {
    if (job.metadata.name == "resumed-fg") {
      EXPECT_EQ(NodesOf(job), std::set<std::string>{victim});
    }
  }
}

}  // namespace
}  // namespace wavepool::controller::fault
