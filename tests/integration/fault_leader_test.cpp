// Two controller replicas with leader election on one Lease: only the holder writes (pods,
// ConfigMaps, TrainingJob status), the other keeps its caches warm; when the leader dies (its
// connection cut, as a crashed or partitioned process never reaches the server again) the
// standby takes the Lease once it has expired and carries on without duplicating a pod.
//
// Each replica has its own client whose transport counts the writes that reached the server, so
// "who wrote" is measured at the wire, not taken from the replicas' own accounts.
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/fault_support.h"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller::fault {
namespace {

using ::testing::IsEmpty;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::TestCluster;

constexpr auto kConvergeTimeout = std::chrono::seconds(120);

int ControllerWrites(const CountingTransport& transport) {
  int writes = 0;
  for (const auto& [resource, count] : transport.Writes()) {
    if (resource == "pods" || resource == "configmaps" || resource == "services" ||
        resource == "trainingjobs") {
      writes += count;
    }
  }
  return writes;
}

int PodWrites(const CountingTransport& transport) {
  const auto writes = transport.Writes();
  auto it = writes.find("pods");
  return it == writes.end() ? 0 : it->second;
}

std::string LeaseHolder(kube::Client& client, const ManagerOptions& options) {
  absl::StatusOr<nlohmann::json> lease =
      client.Get(kube::kLeases, options.lease_namespace, options.lease_name);
  if (!lease.ok()) return "";
  return lease->value("spec", nlohmann::json::object()).value("holderIdentity", "");
}

TEST(FaultLeader, OnlyTheLeaderWritesAndADeadLeaderHandsOverWithoutDuplicates) {
  std::mt19937 rng = SeededRng();
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(FixtureOptions(4, 8, false)));
  ASSERT_OK(CreateNamespace(cluster->client()));
  ASSERT_OK_AND_ASSIGN(auto log, PodCreationLog::Start(cluster->server().store()));

  // Requests time out well inside the renew deadline (1.5 s), as leader_election.h asks.
  CountingTransport* wire_a = nullptr;
  CountingTransport* wire_b = nullptr;
  ASSERT_OK_AND_ASSIGN(auto client_a,
                       ConnectTo(cluster->server(), &wire_a, std::chrono::milliseconds(1000)));
  ASSERT_OK_AND_ASSIGN(auto client_b,
                       ConnectTo(cluster->server(), &wire_b, std::chrono::milliseconds(1000)));
  ManagerOptions options_a = cluster->ControllerOptions();
  options_a.leader_elect = true;
  options_a.identity = "replica-a";
  ManagerOptions options_b = options_a;
  options_b.identity = "replica-b";

  ASSERT_OK_AND_ASSIGN(auto replica_a, ControllerManager::Create(*client_a, options_a));
  ASSERT_OK(replica_a->Start());
  ASSERT_TRUE(Eventually([&] { return replica_a->IsLeader(); }, std::chrono::seconds(30)));
  ASSERT_OK_AND_ASSIGN(auto replica_b, ControllerManager::Create(*client_b, options_b));
  ASSERT_OK(replica_b->Start());
  ASSERT_TRUE(replica_b->WaitForSync(std::chrono::seconds(30)));

  const std::vector<nlohmann::json> jobs = MixedJobs(rng, 8, 10, 8, 24);
  const std::size_t half = jobs.size() / 2;
  ASSERT_OK(CreateJobs(cluster->client(),
                       std::vector<nlohmann::json>(jobs.begin(), jobs.begin() + half)));
  const Snapshot first = WaitAllRunning(cluster->client(), half, kConvergeTimeout);
  EXPECT_THAT(CheckInvariants(first, {}), IsEmpty());
  EXPECT_TRUE(replica_a->IsLeader());
  EXPECT_FALSE(replica_b->IsLeader());
  EXPECT_EQ(LeaseHolder(cluster->client(), options_a), "replica-a");
  EXPECT_GT(PodWrites(*wire_a), 0);
  EXPECT_EQ(ControllerWrites(*wire_b), 0) << "the standby wrote while replica-a led";
  std::map<std::string, int> created_before = log->Creations();

  // The leader dies: nothing it sends reaches the server any more.
  wire_a->Cut();
  const int b_writes_at_cut = ControllerWrites(*wire_b);
  ASSERT_OK(
      CreateJobs(cluster->client(), std::vector<nlohmann::json>(jobs.begin() + half, jobs.end())));
  const Snapshot last = WaitAllRunning(cluster->client(), jobs.size(), kConvergeTimeout);
  EXPECT_TRUE(replica_b->IsLeader());
  EXPECT_EQ(LeaseHolder(cluster->client(), options_b), "replica-b");
  EXPECT_GT(ControllerWrites(*wire_b), b_writes_at_cut);
  EXPECT_THAT(CheckInvariants(last, {}), IsEmpty());
  EXPECT_THAT(log->Duplicates(), IsEmpty());
  // The first half's pods were neither re-created nor replaced by the new leader.
  const std::map<std::string, int> created = log->Creations();
  for (const auto& [name, count] : created_before) {
    EXPECT_EQ(created.at(name), 1) << name;
  }
  std::size_t pods = 0;
  for (const api::TrainingJob& job : last.jobs) pods += job.status.placement.size();
  EXPECT_EQ(created.size(), pods);

  replica_a->Stop();
  replica_b->Stop();
  log->Stop();
}

}  // namespace
}  // namespace wavepool::controller::fault
