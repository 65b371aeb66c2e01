// The hierarchical all-reduce (reduce-scatter in the node, all-reduce across nodes, all-gather in
// the node) and when CommModel::AllReduce takes it over the flat ring or tree; network presets.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/comm.h"

namespace wavepool::planner {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr double kTol = 1e-12;

// As comm_test.cpp's: 4 GPUs and 2 NICs per node; 10 us and 1 GB/s inside a node, 100 us and
// 100 MB/s per NIC between nodes.
NetworkModel SmallNodes() {
  NetworkModel network;
  network.name = "small nodes";
  network.gpus_per_node = 4;
  network.nics_per_node = 2;
  network.intra_node = Link{Microseconds(10), 1e-9};
  network.inter_node = Link{Microseconds(100), 1e-8};
  return network;
}

// 8 GPUs and 8 NICs per node; 10 us and 10 GB/s inside a node, 40 us and 1 GB/s per NIC.
NetworkModel LargeCluster() {
  NetworkModel network;
  network.name = "large cluster";
  network.gpus_per_node = 8;
  network.nics_per_node = 8;
  network.intra_node = Link{Microseconds(10), 1e-10};
  network.inter_node = Link{Microseconds(40), 1e-9};
  return network;
}

TEST(HierarchicalAllReduce, TwoNodesMatchTheHandComputedExample) {
  const CommModel comm(SmallNodes());
  // 8000 B over 8 GPUs, 4 per node (m = 2 nodes).
  // In the node: 2 (4-1) (10 us + 8000/4 B x 1 ns) = 6 x 12 us = 72 us.
  // Across: every GPU all-reduces its 2000 B share with its peer; 4 flows per node on 2 NICs
  // share them (20 ns/B). Ring 2 (2-1) (100 us + 2000/2 B x 20 ns) = 240 us; tree
  // 2 x 1 x (100 us + 2000 B x 20 ns) = 280 us: ring. Total 312 us.
  EXPECT_EQ(comm.MembersPerNode(8), 4);
  EXPECT_NEAR(comm.HierarchicalAllReduce(8000, 8).count(), 312e-6, kTol);
  // Flat: ring 1540 us (comm_test.cpp), tree 2 x 3 x (100 us + 80 us) = 1080 us; below the
  // 1 MiB ring threshold the tree is the flat choice, and the hierarchical one beats it.
  EXPECT_EQ(comm.ChooseFlatAllReduce(8000, 8), AllReduceAlgorithm::kTree);
  EXPECT_NEAR(comm.FlatAllReduce(8000, 8).count(), 1080e-6, kTol);
  EXPECT_EQ(comm.ChooseAllReduce(8000, 8), AllReduceAlgorithm::kHierarchical);
  EXPECT_NEAR(comm.AllReduce(8000, 8).count(), 312e-6, kTol);
}

TEST(HierarchicalAllReduce, FourThousandGpusAreNotPricedAsOneFlatRing) {
  const CommModel comm(LargeCluster());
  // 80 MB of gradients over 4096 GPUs (512 nodes of 8), at the ring threshold and above: the
  // flat choice is the ring, 2 (4096-1) (40 us + 80e6/4096 B x 1 ns) = 8190 x 59.53125 us
  // = 487.5609375 ms, of which 327.6 ms are latency.
  EXPECT_EQ(comm.ChooseFlatAllReduce(80'000'000, 4096), AllReduceAlgorithm::kRing);
  EXPECT_NEAR(comm.FlatAllReduce(80'000'000, 4096).count(), 8190 * 59.53125e-6, 1e-9);
  // Hierarchical: in the node 2 (8-1) (10 us + 10e6 B x 0.1 ns) = 14 x 1010 us = 14.14 ms.
  // Across 512 nodes, 8 flows on 8 NICs (1 ns/B), a 10e6 B share each: ring
  // 2 (512-1) (40 us + 10e6/512 B x 1 ns) = 1022 x 59.53125 us = 60.8409375 ms; tree
  // 2 x 9 x (40 us + 10 ms) = 180.72 ms: ring. Total 74.9809375 ms.
  EXPECT_NEAR(comm.HierarchicalAllReduce(80'000'000, 4096).count(), 74.9809375e-3, 1e-9);
  EXPECT_EQ(comm.ChooseAllReduce(80'000'000, 4096), AllReduceAlgorithm::kHierarchical);
  EXPECT_NEAR(comm.AllReduce(80'000'000, 4096).count(), 74.9809375e-3, 1e-9);
  // 4000 B: flat tree 2 x 12 x (40 + 4) us = 1056 us. Hierarchical: in the node
  // 14 x (10 us + 500 B x 0.1 ns) = 140.7 us; across, tree 2 x 9 x (40 us + 500 B x 1 ns)
  // = 729 us (the ring's 1022 latencies are far slower). Total 869.7 us.
  EXPECT_NEAR(comm.FlatAllReduce(4000, 4096).count(), 1056e-6, kTol);
  EXPECT_NEAR(comm.HierarchicalAllReduce(4000, 4096).count(), 869.7e-6, kTol);
  EXPECT_EQ(comm.ChooseAllReduce(4000, 4096), AllReduceAlgorithm::kHierarchical);
}

TEST(HierarchicalAllReduce, OnlyForGroupsThatSpanNodesWithSeveralMembersInANode) {
  const CommModel comm(SmallNodes());
  // Inside one node there is nothing to arrange: the flat choice, unchanged.
  EXPECT_EQ(comm.ChooseAllReduce(8000, 4), comm.ChooseFlatAllReduce(8000, 4));
  EXPECT_EQ(comm.HierarchicalAllReduce(8000, 4), comm.FlatAllReduce(8000, 4));
  // One member per node (stride 4): the all-reduce across nodes is the whole of it.
  EXPECT_EQ(comm.MembersPerNode(8, GroupLayout{4, 1}), 1);
  EXPECT_EQ(comm.ChooseAllReduce(8000, 8, GroupLayout{4, 1}),
            comm.ChooseFlatAllReduce(8000, 8, GroupLayout{4, 1}));
  // Stride 2 puts ranks 0 and 2 in the first node: 2 members per node, 4 nodes for 8 members.
  EXPECT_EQ(comm.MembersPerNode(8, GroupLayout{2, 1}), 2);
  // Stride 3 on 4 GPUs per node: ranks 0 and 3.
  EXPECT_EQ(comm.MembersPerNode(8, GroupLayout{3, 1}), 2);
  EXPECT_EQ(AllReduceAlgorithmName(AllReduceAlgorithm::kHierarchical), "hierarchical");
}

TEST(HierarchicalAllReduce, NonDecreasingInGpus) {
  for (const NetworkModel& network : {SmallNodes(), LargeCluster(), AbciNetworkModel()}) {
    const CommModel comm(network);
    const int gpn = network.gpus_per_node;
    for (Bytes n :
         {Bytes{1}, Bytes{4096}, Bytes{(1 << 20) - 1}, Bytes{1 << 20}, Bytes{123456789}}) {
      for (GroupLayout layout :
           {GroupLayout{}, GroupLayout{2, 1}, GroupLayout{3, 2}, GroupLayout{gpn, gpn}}) {
        Seconds previous_h(0), previous(0);
        for (int p = 1; p <= 4096; p += p < 64 ? 1 : 61) {
          const Seconds h = comm.HierarchicalAllReduce(n, p, layout);
          const Seconds all = comm.AllReduce(n, p, layout);
          ASSERT_GE(h, previous_h) << network.name << " n=" << n << " p=" << p;
          ASSERT_GE(all, previous) << network.name << " n=" << n << " p=" << p;
          ASSERT_LE(all, comm.FlatAllReduce(n, p, layout));
          previous_h = h;
          previous = all;
        }
      }
    }
  }
}

TEST(NetworkPresets, NamesTheBuiltInNetworks) {
  EXPECT_THAT(NetworkPresetNames(),
              ::testing::ElementsAre("default", "abci", "v100", "a100-40gb", "h100", "h200"));
  ASSERT_OK_AND_ASSIGN(const DeviceSpec a100, FindDevice("a100"));
  ASSERT_OK_AND_ASSIGN(const NetworkModel abci, FindNetworkPreset("ABCI", a100));
  EXPECT_EQ(abci.name, "abci");
  EXPECT_EQ(abci.gpus_per_node, 4);
  ASSERT_OK_AND_ASSIGN(const NetworkModel own, FindNetworkPreset("default", a100));
  EXPECT_EQ(own.name, "a100-40gb default");
  // Another device's network, by its name or an alias.
  ASSERT_OK_AND_ASSIGN(const NetworkModel h100, FindNetworkPreset("h100-sxm", a100));
  EXPECT_EQ(h100.name, "h100 default");
  EXPECT_DOUBLE_EQ(h100.inter_node.beta_s_per_byte, 1 / 50e9);
  EXPECT_THAT(FindNetworkPreset("abcd", a100),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("unknown network preset \"abcd\"; presets: default, abci, "
                                       "v100, a100-40gb, h100, h200"),
                             EndsWith("did you mean \"abci\"?"))));
}

}  // namespace
}  // namespace wavepool::planner
