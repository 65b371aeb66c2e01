// The communication cost model: Hockney alpha-beta collectives, the ring/tree switch, contention,
// alpha steps, the monotonicity guarantee, and network files.
#include "wavepool/planner/comm.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::planner {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr double kTol = 1e-12;  // seconds; the hand figures are exact to well below a nanosecond

// Round figures for hand arithmetic: 4 GPUs and 2 NICs per node; 10 us and 1 GB/s inside a node,
// 100 us and 100 MB/s per NIC between nodes.
NetworkModel TestNetwork() {
  NetworkModel network;
  network.name = "test";
  network.gpus_per_node = 4;
  network.nics_per_node = 2;
  network.intra_node = Link{Microseconds(10), 1e-9};
  network.inter_node = Link{Microseconds(100), 1e-8};
  return network;
}

TEST(Comm, RingAllReduceMatchesHandComputedExample) {
  const CommModel comm(TestNetwork());
  // Inside a node, p = 4, n = 1 MiB = 1048576 B: 2 (4-1) (10 us + 262144 B x 1 ns) = 6 x 272.144
  // us.
  EXPECT_NEAR(comm.RingAllReduce(1 << 20, 4).count(), 6 * 272.144e-6, kTol);
  // Two nodes, p = 8, n = 8000 B: 2 (8-1) (100 us + 1000 B x 10 ns) = 14 x 110 us = 1540 us.
  EXPECT_NEAR(comm.RingAllReduce(8000, 8).count(), 1540e-6, kTol);
}

TEST(Comm, OtherCollectivesMatchHandComputedExamples) {
  const CommModel comm(TestNetwork());
  // All-gather of 4000 B in total over 4: (4-1) (10 us + 1000 ns) = 33 us.
  EXPECT_NEAR(comm.AllGather(4000, 4).count(), 33e-6, kTol);
  EXPECT_NEAR(comm.ReduceScatter(4000, 4).count(), 33e-6, kTol);
  // Tree all-reduce of 1000 B over 4: 2 ceil(log2 4) (10 us + 1 us) = 44 us.
  EXPECT_NEAR(comm.TreeAllReduce(1000, 4).count(), 44e-6, kTol);
  // Broadcast of 1000 B over 3: ceil(log2 3) = 2 rounds of 11 us.
  EXPECT_NEAR(comm.Broadcast(1000, 3).count(), 22e-6, kTol);
  // Point to point: 10 us + 2 us inside a node; 100 us + 20 us between two nodes.
  EXPECT_NEAR(comm.PointToPoint(2000, false).count(), 12e-6, kTol);
  EXPECT_NEAR(comm.PointToPoint(2000, true).count(), 120e-6, kTol);
}

TEST(Comm, ZeroForOneGpuOrNoBytes) {
  const CommModel comm(TestNetwork());
  for (int p : {0, 1}) {
    EXPECT_EQ(comm.AllReduce(1 << 20, p).count(), 0);
    EXPECT_EQ(comm.AllGather(1 << 20, p).count(), 0);
    EXPECT_EQ(comm.ReduceScatter(1 << 20, p).count(), 0);
    EXPECT_EQ(comm.Broadcast(1 << 20, p).count(), 0);
  }
  EXPECT_EQ(comm.AllReduce(0, 64).count(), 0);
  EXPECT_EQ(comm.TreeAllReduce(0, 64).count(), 0);
  EXPECT_EQ(comm.AllGather(0, 64).count(), 0);
  EXPECT_EQ(comm.Broadcast(0, 64).count(), 0);
  EXPECT_EQ(comm.PointToPoint(0, true).count(), 0);
}

TEST(Comm, SmallMessagesTakeTheCheaperOfTreeAndRing) {
  const CommModel comm(TestNetwork());  // ring_threshold_bytes = 1 MiB
  // 1000 B over 4: ring 2 x 3 x (10 + 0.25) = 61.5 us, tree 44 us: tree.
  EXPECT_EQ(comm.ChooseAllReduce(1000, 4), AllReduceAlgorithm::kTree);
  EXPECT_NEAR(comm.AllReduce(1000, 4).count(), 44e-6, kTol);
  // 100000 B over 4: ring 6 x (10 + 25) = 210 us, tree 4 x (10 + 100) = 440 us: ring.
  EXPECT_EQ(comm.ChooseAllReduce(100000, 4), AllReduceAlgorithm::kRing);
  EXPECT_NEAR(comm.AllReduce(100000, 4).count(), 210e-6, kTol);
  // 1000 B over 2: ring 2 x (10 + 0.5) = 21 us, tree 2 x 11 = 22 us: ring.
  EXPECT_EQ(comm.ChooseAllReduce(1000, 2), AllReduceAlgorithm::kRing);
}

TEST(Comm, MessagesAtTheThresholdAlwaysUseTheRing) {
  NetworkModel network = TestNetwork();
  network.ring_threshold_bytes = 1000;
  const CommModel comm(network);
  // 1000 B over 4 would be cheaper as a tree (44 us < 61.5 us) but is at the threshold.
  EXPECT_EQ(comm.ChooseAllReduce(1000, 4), AllReduceAlgorithm::kRing);
  EXPECT_NEAR(comm.AllReduce(1000, 4).count(), 61.5e-6, kTol);
  EXPECT_EQ(comm.ChooseAllReduce(999, 4), AllReduceAlgorithm::kTree);
}

TEST(Comm, ExternalContentionMultipliesOnlyTheCrossNodeBeta) {
  NetworkModel network = TestNetwork();
  network.contention = 2;
  const CommModel comm(network);
  // Inside a node nothing changes: 4000 B over 4 is 2 (4-1) (10 us + 1000 B x 1 ns) = 6 x 11 us.
  EXPECT_NEAR(comm.RingAllReduce(4000, 4).count(), 6 * 11e-6, kTol);
  // Across nodes: 14 x (100 us + 1000 B x 20 ns) = 14 x 120 us.
  EXPECT_NEAR(comm.RingAllReduce(8000, 8).count(), 14 * 120e-6, kTol);
}

TEST(Comm, FlowsSharingNicsDivideTheirBandwidth) {
  const CommModel comm(TestNetwork());  // 2 NICs per node
  // One GPU per node (stride 4), 2 members: span 5 ranks crosses nodes.
  EXPECT_TRUE(comm.CrossesNodes(2, GroupLayout{4, 1}));
  EXPECT_FALSE(comm.CrossesNodes(2, GroupLayout{2, 1}));  // ranks 0 and 2: one node
  // 4 concurrent groups per node over 2 NICs: ceil(4 / 2) = 2 flows per NIC, beta 20 ns.
  // 2 (2-1) (100 us + 4000 B x 20 ns) = 2 x 180 us.
  EXPECT_NEAR(comm.RingAllReduce(8000, 2, GroupLayout{4, 4}).count(), 360e-6, kTol);
  // 2 groups fit the 2 NICs: 2 x (100 + 40) us.
  EXPECT_NEAR(comm.RingAllReduce(8000, 2, GroupLayout{4, 2}).count(), 280e-6, kTol);
  // 3 groups over 2 NICs still share: ceil(3 / 2) = 2.
  EXPECT_NEAR(comm.RingAllReduce(8000, 2, GroupLayout{4, 3}).count(), 360e-6, kTol);
}

TEST(Comm, AbciAlphaStepsByScale) {
  const CommModel comm(AbciNetworkModel());
  EXPECT_EQ(comm.LinkFor(4).alpha, Microseconds(9));  // one node
  EXPECT_NEAR(comm.LinkFor(5).alpha.count(), 40.3e-6, kTol);
  EXPECT_NEAR(comm.LinkFor(68).alpha.count(), 40.3e-6, kTol);
  EXPECT_NEAR(comm.LinkFor(69).alpha.count(), 40.5e-6, kTol);
  EXPECT_NEAR(comm.LinkFor(136).alpha.count(), 40.5e-6, kTol);
  EXPECT_NEAR(comm.LinkFor(137).alpha.count(), 41e-6, kTol);
  EXPECT_NEAR(comm.LinkFor(1024).alpha.count(), 41e-6, kTol);
  // A group of one GPU per node spans 4 ranks per member: 18 members span 69 ranks.
  EXPECT_NEAR(comm.LinkFor(18, GroupLayout{4, 1}).alpha.count(), 40.5e-6, kTol);
  // 100 MB gradients over 8 GPUs (2 nodes) at 12.5 GB/s:
  // 2 (8-1) (40.3 us + 12.5 MB x 0.08 ns) = 14 x 1040.3 us.
  EXPECT_NEAR(comm.RingAllReduce(100'000'000, 8).count(), 14 * 1040.3e-6, 1e-10);
  // Inside a node at 50 GB/s: 2 (4-1) (9 us + 25 MB x 0.02 ns) = 6 x 509 us.
  EXPECT_NEAR(comm.RingAllReduce(100'000'000, 4).count(), 6 * 509e-6, 1e-10);
}

TEST(Comm, CrossingNodesIsPricedAtTheBottleneckLink) {
  NetworkModel network = TestNetwork();
  network.inter_node = Link{Microseconds(1), 1e-12};  // a NIC faster than the intra-node links
  const CommModel comm(network);
  const Link link = comm.LinkFor(8);
  EXPECT_EQ(link.alpha, Microseconds(10));
  EXPECT_EQ(link.beta_s_per_byte, 1e-9);
}

TEST(Comm, DefaultNetworkModelComesFromTheDevice) {
  ASSERT_OK_AND_ASSIGN(const DeviceSpec device, FindDevice("a100-40gb"));
  const NetworkModel network = DefaultNetworkModel(device);
  EXPECT_EQ(network.name, "a100-40gb default");
  EXPECT_EQ(network.gpus_per_node, 8);
  EXPECT_EQ(network.nics_per_node, 8);
  EXPECT_EQ(network.intra_node.alpha, Microseconds(9));
  EXPECT_DOUBLE_EQ(network.intra_node.beta_s_per_byte, 1 / 300e9);
  EXPECT_EQ(network.inter_node.alpha, Microseconds(40));
  EXPECT_DOUBLE_EQ(network.inter_node.beta_s_per_byte, 1 / 25e9);
  EXPECT_OK(ValidateNetworkModel(network));
  EXPECT_OK(ValidateNetworkModel(AbciNetworkModel()));
}

// The burst search prunes on it: every collective is non-decreasing in p for a fixed size.
void ExpectNonDecreasingInP(const NetworkModel& network) {
  const CommModel comm(network);
  const int gpn = comm.network().gpus_per_node;
  for (Bytes n : {Bytes{1}, Bytes{4096}, Bytes{(1 << 20) - 1}, Bytes{1 << 20}, Bytes{123456789}}) {
    for (GroupLayout layout : {GroupLayout{}, GroupLayout{gpn, gpn}, GroupLayout{2, 3}}) {
      Seconds previous[6] = {};
      for (int p = 1; p <= 1024; ++p) {
        const Seconds now[6] = {comm.RingAllReduce(n, p, layout), comm.TreeAllReduce(n, p, layout),
                                comm.AllReduce(n, p, layout),     comm.AllGather(n, p, layout),
                                comm.ReduceScatter(n, p, layout), comm.Broadcast(n, p, layout)};
        for (int c = 0; c < 6; ++c) {
          if (p == 1) {
            EXPECT_EQ(now[c].count(), 0) << network.name << " collective " << c;
          }
          ASSERT_GE(now[c], previous[c]) << network.name << " collective " << c << " n=" << n
                                         << " p=" << p << " stride=" << layout.stride;
          previous[c] = now[c];
        }
      }
    }
  }
}

TEST(Comm, NonDecreasingInGpusForEveryCatalogDeviceAndAbci) {
  for (const DeviceSpec& device : DeviceCatalog())
    ExpectNonDecreasingInP(DefaultNetworkModel(device));
  ExpectNonDecreasingInP(AbciNetworkModel());
  NetworkModel contended = AbciNetworkModel();
  contended.contention = 3.5;
  ExpectNonDecreasingInP(contended);
}

TEST(Comm, InvalidNetworkModelsAreClampedSoTheGuaranteesHold) {
  NetworkModel network = TestNetwork();
  network.name = "clamped";
  network.gpus_per_node = 0;
  network.nics_per_node = -1;
  network.contention = 0.5;
  network.inter_node.alpha = Microseconds(-5);
  network.inter_node_alpha_steps = {{64, Microseconds(300)}, {16, Microseconds(200)}};
  EXPECT_THAT(ValidateNetworkModel(network),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpusPerNode")));
  const CommModel comm(network);
  EXPECT_EQ(comm.network().gpus_per_node, 1);
  EXPECT_EQ(comm.network().contention, 1.0);
  // Steps sorted and made non-decreasing; beyond the last the base alpha is raised to it.
  EXPECT_EQ(comm.LinkFor(100).alpha, Microseconds(300));
  ExpectNonDecreasingInP(network);
}

constexpr char kJsonNetwork[] = R"({
  "name": "measured",
  "gpusPerNode": 4,
  "nicsPerNode": 2,
  "contention": 1.5,
  "ringThresholdBytes": 65536,
  "intraNode": {"alphaSeconds": 9e-6, "bytesPerSecond": 50e9},
  "interNode": {"alphaSeconds": 41e-6, "bytesPerSecond": 12.5e9},
  "interNodeAlphaSteps": [{"upToGpus": 68, "alphaSeconds": 40.3e-6},
                          {"upToGpus": 136, "alphaSeconds": 40.5e-6}]
})";

constexpr char kYamlNetwork[] = R"(# the same network as YAML
name: measured
gpusPerNode: 4
nicsPerNode: 2
contention: 1.5
ringThresholdBytes: 65536
intraNode: {alphaSeconds: 9.0e-6, bytesPerSecond: 50.0e9}
interNode:
  alphaSeconds: 41.0e-6
  bytesPerSecond: 12.5e9
interNodeAlphaSteps:
  - {upToGpus: 68, alphaSeconds: 40.3e-6}
  - {upToGpus: 136, alphaSeconds: 40.5e-6}
)";

void ExpectMeasured(const NetworkModel& network) {
  EXPECT_EQ(network.name, "measured");
  EXPECT_EQ(network.gpus_per_node, 4);
  EXPECT_EQ(network.nics_per_node, 2);
  EXPECT_DOUBLE_EQ(network.contention, 1.5);
  EXPECT_EQ(network.ring_threshold_bytes, 65536);
  EXPECT_DOUBLE_EQ(network.intra_node.alpha.count(), 9e-6);
  EXPECT_DOUBLE_EQ(network.intra_node.beta_s_per_byte, 1 / 50e9);
  EXPECT_DOUBLE_EQ(network.inter_node.alpha.count(), 41e-6);
  EXPECT_DOUBLE_EQ(network.inter_node.beta_s_per_byte, 1 / 12.5e9);
  ASSERT_EQ(network.inter_node_alpha_steps.size(), 2u);
  EXPECT_EQ(network.inter_node_alpha_steps[1].up_to_gpus, 136);
  EXPECT_DOUBLE_EQ(network.inter_node_alpha_steps[1].alpha.count(), 40.5e-6);
}

TEST(NetworkFile, ParsesJsonAndYaml) {
  ASSERT_OK_AND_ASSIGN(const NetworkModel from_json, ParseNetworkModel(kJsonNetwork));
  ExpectMeasured(from_json);
  ASSERT_OK_AND_ASSIGN(const NetworkModel from_yaml, ParseNetworkModel(kYamlNetwork));
  ExpectMeasured(from_yaml);
}

TEST(NetworkFile, OptionalFieldsTakeTheirDefaults) {
  ASSERT_OK_AND_ASSIGN(const NetworkModel network, ParseNetworkModel(R"(
gpusPerNode: 2
intraNode: {alphaSeconds: 0, bytesPerSecond: 1e9}
interNode: {alphaSeconds: 1e-5, bytesPerSecond: 1e8}
)"));
  EXPECT_EQ(network.nics_per_node, 2);  // one per GPU
  EXPECT_EQ(network.contention, 1.0);
  EXPECT_EQ(network.ring_threshold_bytes, 1 << 20);
  EXPECT_TRUE(network.inter_node_alpha_steps.empty());
}

struct BadNetworkFile {
  const char* text;
  const char* message;
};

class NetworkFileErrors : public ::testing::TestWithParam<BadNetworkFile> {};

TEST_P(NetworkFileErrors, NameTheField) {
  EXPECT_THAT(ParseNetworkModel(GetParam().text),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Comm, NetworkFileErrors,
    ::testing::Values(
        BadNetworkFile{"", "empty"}, BadNetworkFile{"{\"intraNode\": ", "invalid JSON"},
        BadNetworkFile{"intraNode: [1, 2\nfoo: {", "invalid YAML at line"},
        BadNetworkFile{"- 1\n- 2\n", "must be a mapping"},
        BadNetworkFile{R"({"intraNode": {"alphaSeconds": 1e-5, "bytesPerSecond": 1e9}})",
                       "interNode: is required"},
        BadNetworkFile{
            R"({"intraNode": {"alphaSeconds": 1e-5, "bytesPerSecond": 1e9},
                "interNode": {"alphaSeconds": 1e-4, "bytesPerSecond": -1}})",
            "interNode.bytesPerSecond: must be > 0, got -1"},
        BadNetworkFile{R"({"intraNode": {"bytesPerSecond": 1e9},
                          "interNode": {"alphaSeconds": 1e-4, "bytesPerSecond": 1e8}})",
                       "intraNode.alphaSeconds: is required"},
        BadNetworkFile{R"({"intraNode": {"alphaSeconds": "fast", "bytesPerSecond": 1e9},
                          "interNode": {"alphaSeconds": 1e-4, "bytesPerSecond": 1e8}})",
                       "intraNode.alphaSeconds: must be a number"},
        BadNetworkFile{"gpusPerNode: 0\nintraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 0, bytesPerSecond: 1}\n",
                       "gpusPerNode: must be >= 1, got 0"},
        BadNetworkFile{"gpusPerNode: four\nintraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 0, bytesPerSecond: 1}\n",
                       "gpusPerNode: must be an integer"},
        BadNetworkFile{"contention: 0.5\nintraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 0, bytesPerSecond: 1}\n",
                       "contention: must be >= 1"},
        BadNetworkFile{"bandwidth: 5\nintraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 0, bytesPerSecond: 1}\n",
                       "bandwidth: unknown field; known fields: name, gpusPerNode"},
        BadNetworkFile{"intraNode: {alphaSeconds: 0, bytesPerSecond: 1, beta: 2}\n"
                       "interNode: {alphaSeconds: 0, bytesPerSecond: 1}\n",
                       "intraNode.beta: unknown field"},
        BadNetworkFile{"intraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 1, bytesPerSecond: 1}\n"
                       "interNodeAlphaSteps:\n"
                       "  - {upToGpus: 68, alphaSeconds: 0.5}\n"
                       "  - {upToGpus: 68, alphaSeconds: 0.6}\n",
                       "interNodeAlphaSteps[1].upToGpus: must be > the previous step's (68)"},
        BadNetworkFile{"intraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 1, bytesPerSecond: 1}\n"
                       "interNodeAlphaSteps:\n"
                       "  - {upToGpus: 68, alphaSeconds: 0.5}\n"
                       "  - {upToGpus: 136, alphaSeconds: 0.4}\n",
                       "interNodeAlphaSteps[1].alphaSeconds: must be >= the previous step's"},
        BadNetworkFile{"intraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 1, bytesPerSecond: 1}\n"
                       "interNodeAlphaSteps: [{alphaSeconds: 0.5}]\n",
                       "interNodeAlphaSteps[0].upToGpus: is required"},
        BadNetworkFile{"intraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 1, bytesPerSecond: 1}\n"
                       "interNodeAlphaSteps: [{upToGpus: 8, alphaSeconds: 2}]\n",
                       "interNodeAlphaSteps[0].alphaSeconds: must be <= interNode.alphaSeconds"},
        BadNetworkFile{"ringThresholdBytes: -1\nintraNode: {alphaSeconds: 0, bytesPerSecond: 1}\n"
                       "interNode: {alphaSeconds: 0, bytesPerSecond: 1}\n",
                       "ringThresholdBytes: must be >= 0, got -1"}));

}  // namespace
}  // namespace wavepool::planner
