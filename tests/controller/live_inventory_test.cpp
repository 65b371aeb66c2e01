// LiveInventory against a fresh Inventory::Build of the same pods and GPUNodes: kept between
// decisions, it must count exactly what a rebuild would.
#include "wavepool/controller/live_inventory.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/inventory_pods.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/gpu_claims.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::SimulatedClock;
using ::wavepool::testing::StatusIs;
using GpuNodes = std::shared_ptr<const std::vector<api::GpuNode>>;

constexpr auto kAssumeTimeout = std::chrono::seconds(30);

// The pods come from a GpuClaims, as in KubeCluster; nothing else is read.
class ClaimsReader : public ClusterReader {
 public:
  explicit ClaimsReader(const GpuClaims& claims) : claims_(claims) {}

  // Answers with every pod, as a reader without a change log does.
  bool complete_only = false;

  std::optional<api::TrainingJob> GetJob(std::string_view, std::string_view) const override {
    return std::nullopt;
  }
  std::vector<api::TrainingJob> ListJobs() const override { return {}; }
  std::vector<kube::Pod> PodsOfJob(std::string_view, std::string_view) const override { return {}; }
  std::vector<kube::Service> ServicesOfJob(std::string_view, std::string_view) const override {
    return {};
  }
  absl::StatusOr<std::optional<kube::ConfigMap>> GetConfigMap(std::string_view,
                                                              std::string_view) const override {
    return std::nullopt;
  }
  std::vector<api::GpuNode> ListGpuNodes() const override { return {}; }
  std::map<std::string, NodeState> NodeStates() const override { return {}; }
  std::vector<GpuAssignment> Assignments() const override { return claims_.PodAssignments(); }
  AssignmentChanges AssignmentChangesSince(std::uint64_t version) const override {
    return complete_only ? ClusterReader::AssignmentChangesSince(version)
                         : claims_.PodChangesSince(version);
  }

 private:
  const GpuClaims& claims_;
};

GpuNodes Nodes(int count, int gpus) {
  std::vector<api::GpuNode> nodes;
  for (int n = 0; n < count; ++n) {
    api::GpuNode node;
    node.metadata.name = node.spec.node_name = "node-" + std::to_string(n);
    for (int g = 0; g < gpus; ++g) {
      api::GpuStatus gpu;
      gpu.index = g;
      gpu.uuid = "GPU-" + std::to_string(n) + "-" + std::to_string(g);
      gpu.memory_bytes = std::int64_t{40} << 30;
      node.status.gpus.push_back(gpu);
    }
    nodes.push_back(node);
  }
  return std::make_shared<const std::vector<api::GpuNode>>(std::move(nodes));
}

std::map<std::string, NodeState> AllReady(const std::vector<api::GpuNode>& nodes) {
  std::map<std::string, NodeState> states;
  for (const api::GpuNode& node : nodes) states[node.spec.node_name] = {true, true, true};
  return states;
}

// A pod of job "job" in namespace "ns" holding `uuids`, as BuildPod labels it.
json Pod(const std::string& name, const std::string& uid, const std::string& uuids,
         const std::string& role = "Background") {
  json annotations = {{std::string(kAnnotationJobName), name},
                      {std::string(kAnnotationGpuUuids), uuids},
                      {std::string(kAnnotationMemoryPerGpu), "1024"}};
  if (role == "Foreground") {
    annotations[std::string(kAnnotationIdleFraction)] = "0.3";
    annotations[std::string(kAnnotationMaxSlowdown)] = "1.1";
    annotations[std::string(kAnnotationAllowBackground)] = "true";
  }
  return {{"metadata",
           {{"namespace", "ns"},
            {"name", name},
            {"uid", uid},
            {"labels", {{std::string(kLabelRole), role}}},
            {"annotations", annotations},
            {"ownerReferences", json::array({{{"apiVersion", std::string(api::kApiVersion)},
                                              {"kind", std::string(api::kTrainingJobKind)},
                                              {"name", name},
                                              {"uid", "job-uid"},
                                              {"controller", true}}})}}},
          {"spec", {{"nodeName", "node-0"}}},
          {"status", {{"phase", "Running"}}}};
}

class LiveInventoryTest : public ::testing::Test {
 protected:
  absl::Status Sync(GpuNodes nodes = nullptr) {
    return live_.Sync(reader_, nodes != nullptr ? nodes : nodes_,
                      std::make_shared<const std::map<std::string, NodeState>>(states_), {});
  }

  // Syncs, then checks the live inventory against one built afresh from the same claims.
  void SyncAndCompare() {
    ASSERT_THAT(Sync(), IsOk());
    ASSERT_OK_AND_ASSIGN(Inventory fresh,
                         Inventory::Build(*nodes_, states_, claims_.PodAssignments(), {}));
    EXPECT_EQ(PodsByGpu(live_.inventory()), PodsByGpu(fresh));
    EXPECT_THAT(live_.inventory().orphaned_pods(),
                ::testing::UnorderedElementsAreArray(fresh.orphaned_pods()));
    for (std::size_t i = 0; i < fresh.gpus().size(); ++i) {
      EXPECT_EQ(live_.inventory().gpus()[i].schedulable, fresh.gpus()[i].schedulable);
      EXPECT_EQ(live_.inventory().CommittedBytes(live_.inventory().gpus()[i]),
                fresh.CommittedBytes(fresh.gpus()[i]));
    }
  }

  SimulatedClock clock_;
  GpuClaims claims_{clock_, kAssumeTimeout};
  ClaimsReader reader_{claims_};
  GpuNodes nodes_ = Nodes(2, 2);
  std::map<std::string, NodeState> states_ = AllReady(*nodes_);
  LiveInventory live_;
};

TEST_F(LiveInventoryTest, FollowsThePodsAsAFreshInventoryWouldCountThem) {
  SyncAndCompare();
  ASSERT_THAT(claims_.ObservePod(Pod("a", "uid-a", "GPU-0-0")), IsOk());
  claims_.AssumeCreated(Pod("b", "uid-b", "GPU-0-1"));
  ASSERT_THAT(claims_.ObservePod(Pod("f", "uid-f", "GPU-1-0,GPU-1-1", "Foreground")), IsOk());
  ASSERT_THAT(claims_.ObservePod(Pod("lost", "uid-lost", "GPU-9-0")), IsOk());  // Orphaned.
  SyncAndCompare();
  ASSERT_THAT(claims_.ObservePod(Pod("a", "uid-a", "GPU-1-0")), IsOk());  // Moved.
  claims_.ObservePodDeleted(Pod("lost", "uid-lost", "GPU-9-0"));
  SyncAndCompare();
  clock_.Advance(kAssumeTimeout);  // b's assumption ends.
  claims_.ObservePodDeleted(Pod("f", "uid-f", "GPU-1-0,GPU-1-1", "Foreground"));
  SyncAndCompare();
  EXPECT_EQ(PodsByGpu(live_.inventory())["GPU-1-0"], std::vector<std::string>{"ns/a"});
}

TEST_F(LiveInventoryTest, AReaderWithoutAChangeLogIsFollowedToo) {
  reader_.complete_only = true;
  ASSERT_THAT(claims_.ObservePod(Pod("a", "uid-a", "GPU-0-0")), IsOk());
  ASSERT_THAT(claims_.ObservePod(Pod("b", "uid-b", "GPU-0-1")), IsOk());
  SyncAndCompare();
  claims_.ObservePodDeleted(Pod("a", "uid-a", "GPU-0-0"));
  ASSERT_THAT(claims_.ObservePod(Pod("c", "uid-c", "GPU-1-1")), IsOk());
  SyncAndCompare();
}

TEST_F(LiveInventoryTest, TheGpuTableFollowsTheNodeListAndTheStates) {
  ASSERT_THAT(claims_.ObservePod(Pod("a", "uid-a", "GPU-0-0")), IsOk());
  SyncAndCompare();
  states_["node-0"].heartbeat_fresh = false;  // Same list, another verdict.
  SyncAndCompare();
  EXPECT_FALSE(live_.inventory().gpus()[0].schedulable);
  nodes_ = Nodes(3, 2);  // Another list, with more GPUs.
  states_ = AllReady(*nodes_);
  SyncAndCompare();
  EXPECT_EQ(live_.inventory().gpus().size(), 6u);

  std::vector<api::GpuNode> bad = *nodes_;
  bad[2].status.gpus[0].memory_bytes = -1;
  EXPECT_THAT(Sync(std::make_shared<const std::vector<api::GpuNode>>(bad)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("memoryBytes")));
  SyncAndCompare();  // As it was: the good list still counts.
}

TEST_F(LiveInventoryTest, AForegroundPodOnATakenGpuIsKeptOutUntilTheGpuIsFree) {
  ASSERT_THAT(claims_.ObservePod(Pod("first", "uid-1", "GPU-0-0", "Foreground")), IsOk());
  ASSERT_THAT(claims_.ObservePod(Pod("second", "uid-2", "GPU-0-0", "Foreground")), IsOk());
  ASSERT_THAT(Sync(), IsOk());
  EXPECT_THAT(PodsByGpu(live_.inventory())["GPU-0-0"], ElementsAre("ns/first"));
  ASSERT_EQ(live_.kept_out().size(), 1u);
  EXPECT_EQ(live_.kept_out().begin()->first, "ns/second");

  claims_.ObservePodDeleted(Pod("first", "uid-1", "GPU-0-0", "Foreground"));
  SyncAndCompare();
  EXPECT_THAT(PodsByGpu(live_.inventory())["GPU-0-0"], ElementsAre("ns/second"));
  EXPECT_THAT(live_.kept_out(), IsEmpty());
}

TEST_F(LiveInventoryTest, ATrialIsUndoneWhenItEnds) {
  ASSERT_THAT(claims_.ObservePod(Pod("a", "uid-a", "GPU-0-0")), IsOk());
  SyncAndCompare();
  {
    LiveInventory::Trial trial(live_);
    ASSERT_THAT(trial.inventory().Remove("ns/a"), IsOk());
    GpuAssignment queued;
    queued.job = queued.pod = "ns/queued";
    queued.role = api::Role::kBackground;
    queued.gpu_uuids = {"GPU-1-1"};
    ASSERT_THAT(trial.inventory().Add(queued), IsOk());
  }
  SyncAndCompare();
}

}  // namespace
}  // namespace wavepool::controller
