#include "wavepool/planner/data_movement.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/planner/memory_test_graphs.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/comm.h"

namespace wavepool::planner {
namespace {

using memory_testing::Ms;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr double kTimeTolerance = 1e-12;

// 4 GPUs, B = 256 samples of 500,000 B (a batch of 128e6 B), P = 120e6 B, compute 100 ms;
// PCIe 16 GB/s per GPU shared by 2 GPUs, 10 us per host copy; HBM 900 GB/s at 50% for the codec;
// GPU-to-GPU 100 GB/s with 10 us latency.
DataMovementRequest Request() {
  DataMovementRequest r;
  r.gpus = 4;
  r.global_batch = 256;
  r.sample_bytes = 500'000;
  r.param_bytes = 120'000'000;
  r.compute_time = Ms(100);
  r.host_link_bytes_per_second = 16e9;
  r.gpus_per_host_link = 2;
  r.host_copy_latency = Microseconds(10);
  r.memory_bytes_per_second = 900e9;
  r.codec_efficiency = 0.5;
  return r;
}

PeerTransferModelPtr Peers() {
  DeviceSpec device;
  device.nvlink_bytes_per_second = 100e9;
  device.host_link_bytes_per_second = 16e9;
  return MakeDevicePeerTransfer(device, Microseconds(10));
}

DataMovementOption Option(BatchSplit split, bool preload, bool compress) {
  return {split, preload, compress};
}

// Master GPU (§II-B): H2D 128e6 B to GPU 0 = 10 us + 8 ms = 8.01 ms; GPU 0 scatters 64 samples
// (32e6 B) to each of 3 peers: 3 * (10 us + 0.32 ms) = 0.99 ms, 96e6 B; the weights go out in
// ceil(log2 4) = 2 rounds of 10 us + 1.2 ms = 2.42 ms, 3 * 120e6 = 360e6 B received.
// Critical path 8.01 + 0.99 + 2.42 = 11.42 ms; iteration 111.42 ms. H2D + P2P = 128e6 + 96e6 =
// n + (x - 1) n / x, ScaleDNN §IV-A's formula.
TEST(DataMovement, MasterGpuSplittingMatchesHandComputedExample) {
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate e,
      EstimateDataMovement(Request(), *Peers(), Option(BatchSplit::kMasterGpu, false, false)));
  EXPECT_EQ(e.host_to_device_bytes, 128'000'000);
  EXPECT_EQ(e.peer_to_peer_bytes, 96'000'000);
  EXPECT_EQ(e.broadcast_bytes, 360'000'000);
  EXPECT_EQ(e.input_buffer_bytes, 128'000'000);
  EXPECT_NEAR(e.host_to_device.count(), 8.01e-3, kTimeTolerance);
  EXPECT_NEAR(e.exposed_host_to_device.count(), 8.01e-3, kTimeTolerance);
  EXPECT_NEAR(e.peer_to_peer.count(), 0.99e-3, kTimeTolerance);
  EXPECT_NEAR(e.broadcast.count(), 2.42e-3, kTimeTolerance);
  EXPECT_EQ(e.codec, Seconds(0));
  EXPECT_NEAR(e.critical_path.count(), 11.42e-3, kTimeTolerance);
  EXPECT_NEAR(e.iteration.count(), 111.42e-3, kTimeTolerance);
}

// CPU-centric (§IV-A): each GPU copies its 32e6 B shard; two GPUs share a host link, so each gets
// 8 GB/s: 10 us + 4 ms = 4.01 ms. No scatter; the same 2.42 ms broadcast. Critical path 6.43 ms.
TEST(DataMovement, CpuCentricSplittingRemovesTheScatterAndSharesHostLinks) {
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate e,
      EstimateDataMovement(Request(), *Peers(), Option(BatchSplit::kCpuCentric, false, false)));
  EXPECT_EQ(e.host_to_device_bytes, 128'000'000);
  EXPECT_EQ(e.peer_to_peer_bytes, 0);
  EXPECT_EQ(e.input_buffer_bytes, 32'000'000);
  EXPECT_NEAR(e.host_to_device.count(), 4.01e-3, kTimeTolerance);
  EXPECT_EQ(e.peer_to_peer, Seconds(0));
  EXPECT_NEAR(e.critical_path.count(), 6.43e-3, kTimeTolerance);

  // One GPU per host link: 10 us + 2 ms; all four on one: 10 us + 8 ms (no better than master).
  DataMovementRequest own_link = Request();
  own_link.gpus_per_host_link = 1;
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate alone,
      EstimateDataMovement(own_link, *Peers(), Option(BatchSplit::kCpuCentric, false, false)));
  EXPECT_NEAR(alone.host_to_device.count(), 2.01e-3, kTimeTolerance);
  DataMovementRequest one_link = Request();
  one_link.gpus_per_host_link = 8;
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate shared,
      EstimateDataMovement(one_link, *Peers(), Option(BatchSplit::kCpuCentric, false, false)));
  EXPECT_NEAR(shared.host_to_device.count(), 8.01e-3, kTimeTolerance);
}

// Pre-loading (§IV-B) leaves max(0, H2D - compute) exposed and doubles the input buffer.
//   compute 100 ms: both copies hidden.
//   compute 5 ms: master 8.01 - 5 = 3.01 ms exposed; CPU-centric 4.01 < 5 hidden.
//   compute 2 ms: CPU-centric 4.01 - 2 = 2.01 ms exposed.
TEST(DataMovement, PreloadingHidesTheCopyBehindCompute) {
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate hidden,
      EstimateDataMovement(Request(), *Peers(), Option(BatchSplit::kMasterGpu, true, false)));
  EXPECT_EQ(hidden.exposed_host_to_device, Seconds(0));
  EXPECT_NEAR(hidden.critical_path.count(), 3.41e-3, kTimeTolerance);  // 0.99 + 2.42
  EXPECT_EQ(hidden.input_buffer_bytes, 256'000'000);

  DataMovementRequest short_compute = Request();
  short_compute.compute_time = Ms(5);
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate master,
      EstimateDataMovement(short_compute, *Peers(), Option(BatchSplit::kMasterGpu, true, false)));
  EXPECT_NEAR(master.exposed_host_to_device.count(), 3.01e-3, kTimeTolerance);
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate cpu,
      EstimateDataMovement(short_compute, *Peers(), Option(BatchSplit::kCpuCentric, true, false)));
  EXPECT_EQ(cpu.exposed_host_to_device, Seconds(0));
  EXPECT_EQ(cpu.input_buffer_bytes, 64'000'000);

  short_compute.compute_time = Ms(2);
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate partly,
      EstimateDataMovement(short_compute, *Peers(), Option(BatchSplit::kCpuCentric, true, false)));
  EXPECT_NEAR(partly.exposed_host_to_device.count(), 2.01e-3, kTimeTolerance);
}

// Compression (§IV-C): 120e6 B = 10e6 groups of three fp32 values -> 40e6 B on the wire;
// broadcast 2 * (10 us + 0.4 ms) = 0.82 ms, 3 * 40e6 = 120e6 B received; codec
// 2 * (120e6 + 40e6) / (900e9 * 0.5) = 0.7111 ms; plus a fixed 50 us when configured.
TEST(DataMovement, CompressionCutsBroadcastBytesByThreeAndAddsCodecTime) {
  DataMovementRequest request = Request();
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate e,
      EstimateDataMovement(request, *Peers(), Option(BatchSplit::kCpuCentric, true, true)));
  EXPECT_EQ(e.broadcast_bytes, 120'000'000);
  EXPECT_NEAR(e.broadcast.count(), 0.82e-3, kTimeTolerance);
  EXPECT_NEAR(e.codec.count(), 320e6 / 450e9, kTimeTolerance);
  EXPECT_NEAR(e.critical_path.count(), 0.82e-3 + 320e6 / 450e9, kTimeTolerance);
  request.codec_fixed_time = Microseconds(50);
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate fixed,
      EstimateDataMovement(request, *Peers(), Option(BatchSplit::kCpuCentric, true, true)));
  EXPECT_NEAR(fixed.codec.count(), 50e-6 + 320e6 / 450e9, kTimeTolerance);
  // A size that is not a multiple of 12 B rounds up to whole groups: 13 B -> 2 groups -> 8 B.
  request.param_bytes = 13;
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate tiny,
      EstimateDataMovement(request, *Peers(), Option(BatchSplit::kCpuCentric, true, true)));
  EXPECT_EQ(tiny.broadcast_bytes, 3 * 8);
}

// Critical paths of the eight options (ms), compute 100 ms:
//   cpu 6.43   master 11.42   cpu+preload 2.42   master+preload 3.41
//   cpu+comp 4.01 + 1.5311 = 5.5411   master+comp 8.01 + 0.99 + 1.5311 = 10.5311
//   cpu+preload+comp 1.5311   master+preload+comp 2.5211
// The cheapest is CPU-centric with pre-loading and compression.
TEST(DataMovement, RecommendsTheCheapestCombination) {
  ASSERT_OK_AND_ASSIGN(DataMovementReport report, CompareDataMovement(Request(), *Peers()));
  ASSERT_EQ(report.options.size(), 8u);
  const double codec_and_broadcast = 0.82e-3 + 320e6 / 450e9;
  EXPECT_NEAR(report.Find(Option(BatchSplit::kCpuCentric, false, true)).critical_path.count(),
              4.01e-3 + codec_and_broadcast, kTimeTolerance);
  EXPECT_NEAR(report.Find(Option(BatchSplit::kMasterGpu, true, true)).critical_path.count(),
              0.99e-3 + codec_and_broadcast, kTimeTolerance);
  EXPECT_NEAR(report.Find(Option(BatchSplit::kMasterGpu, false, true)).critical_path.count(),
              8.01e-3 + 0.99e-3 + codec_and_broadcast, kTimeTolerance);
  const DataMovementEstimate& best = report.Recommended();
  EXPECT_EQ(best.option, Option(BatchSplit::kCpuCentric, true, true));
  EXPECT_EQ(DataMovementOptionName(best.option), "cpu-centric+preload+compression");
  EXPECT_NEAR(best.iteration.count(), 100e-3 + codec_and_broadcast, kTimeTolerance);
}

// A small model (P = 1.2e6 B) with a 50 us codec: broadcast 2 * (10 + 12) = 44 us plain versus
// 2 * (10 + 4) = 28 us + 50 us + 2 * 1.6e6 / 450e9 = 7.1 us compressed: compression loses
// (ScaleDNN §V-A: small models lose 1.64%).
TEST(DataMovement, CompressionDoesNotPayForSmallModels) {
  DataMovementRequest request = Request();
  request.param_bytes = 1'200'000;
  request.codec_fixed_time = Microseconds(50);
  ASSERT_OK_AND_ASSIGN(DataMovementReport report, CompareDataMovement(request, *Peers()));
  EXPECT_NEAR(report.Find(Option(BatchSplit::kCpuCentric, true, false)).broadcast.count(), 44e-6,
              kTimeTolerance);
  EXPECT_EQ(report.Recommended().option, Option(BatchSplit::kCpuCentric, true, false));
  EXPECT_EQ(DataMovementOptionName(report.Recommended().option), "cpu-centric+preload");
}

// One GPU: no scatter, no broadcast, no codec; both splits copy 64 * 500,000 B over an unshared
// link (10 us + 2 ms). Ties go to the lossless, CPU-centric option with pre-loading.
TEST(DataMovement, OneGpuHasNoPeerTraffic) {
  DataMovementRequest request = Request();
  request.gpus = 1;
  request.global_batch = 64;
  ASSERT_OK_AND_ASSIGN(DataMovementReport report, CompareDataMovement(request, *Peers()));
  for (const DataMovementEstimate& e : report.options) {
    EXPECT_EQ(e.peer_to_peer_bytes + e.broadcast_bytes, 0);
    EXPECT_EQ(e.codec, Seconds(0));
    EXPECT_NEAR(e.host_to_device.count(), 2.01e-3, kTimeTolerance);
  }
  EXPECT_EQ(report.Recommended().option, Option(BatchSplit::kCpuCentric, true, false));
  EXPECT_EQ(report.Recommended().critical_path, Seconds(0));
}

// B = 10 on 4 GPUs: shards 3, 3, 2, 2. Master scatters 3 + 2 + 2 = 7 samples; CPU-centric's
// slowest copy is a 3-sample shard on a shared link: 10 us + 3000 * 2 / 16e9.
TEST(DataMovement, UnevenShardsSizeTheScatterAndTheSlowestCopy) {
  DataMovementRequest request = Request();
  request.global_batch = 10;
  request.sample_bytes = 1000;
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate master,
      EstimateDataMovement(request, *Peers(), Option(BatchSplit::kMasterGpu, false, false)));
  EXPECT_EQ(master.peer_to_peer_bytes, 7000);
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate cpu,
      EstimateDataMovement(request, *Peers(), Option(BatchSplit::kCpuCentric, false, false)));
  EXPECT_NEAR(cpu.host_to_device.count(), 10e-6 + 6000 / 16e9, kTimeTolerance);
  EXPECT_EQ(cpu.input_buffer_bytes, 3000);
}

// ScaleDNN §IV-B: "one mini-batch (of 512 batch size) only occupies 73.5MB memory when
// parallelized among 4 GPUs" at 224x224: 128 * 3 * 224 * 224 * 4 B = 77,070,336 B = 73.5 MiB.
// The request for a model takes s and P from the graph and the rest from the device:
// codec_fixed_time = 2 launches * 1 layer with parameters * 4 us (V100).
TEST(DataMovement, RequestForAModelMatchesScaleDnnsBufferSize) {
  Layer fc;
  fc.name = "fc";
  fc.kind = LayerKind::kLinear;
  fc.input = TensorShape{{3, 224, 224}};
  fc.output = TensorShape{{10}};
  fc.params = 100;
  ASSERT_OK_AND_ASSIGN(ModelGraph graph,
                       ModelGraph::Create("tiny", TensorShape{{3, 224, 224}}, {fc}));
  ASSERT_OK_AND_ASSIGN(DeviceSpec v100, FindDevice("v100"));
  const DataMovementRequest request = DataMovementRequestFor(graph, v100, 4, 512, Ms(50));
  EXPECT_EQ(request.sample_bytes, 602'112);
  EXPECT_EQ(request.param_bytes, 400);
  EXPECT_EQ(request.host_link_bytes_per_second, v100.host_link_bytes_per_second);
  EXPECT_EQ(request.memory_bytes_per_second, v100.memory_bytes_per_second);
  EXPECT_NEAR(request.codec_fixed_time.count(), 8e-6, kTimeTolerance);
  ASSERT_OK_AND_ASSIGN(DataMovementEstimate e,
                       EstimateDataMovement(request, *MakeDevicePeerTransfer(v100),
                                            Option(BatchSplit::kCpuCentric, false, false)));
  EXPECT_EQ(e.input_buffer_bytes, 77'070'336);
  EXPECT_DOUBLE_EQ(static_cast<double>(e.input_buffer_bytes) / (1 << 20), 73.5);
}

// The planner's CommModel prices the same transfers: intra-node 10 us and 100 GB/s give the
// 0.99 ms scatter and 2.42 ms broadcast of the master-GPU example.
TEST(DataMovement, CommModelPeersPriceTheSameTransfers) {
  NetworkModel network;
  network.gpus_per_node = 8;
  network.intra_node = Link{Microseconds(10), 1 / 100e9};
  network.inter_node = Link{Microseconds(40), 1 / 25e9};
  const CommModel comm(network);
  const CommPeerTransfer peers(comm);
  ASSERT_OK_AND_ASSIGN(
      DataMovementEstimate e,
      EstimateDataMovement(Request(), peers, Option(BatchSplit::kMasterGpu, false, false)));
  EXPECT_NEAR(e.peer_to_peer.count(), 0.99e-3, 1e-9);
  EXPECT_NEAR(e.broadcast.count(), 2.42e-3, 1e-9);
}

TEST(DataMovement, RejectsBadInputsNamingTheField) {
  const PeerTransferModelPtr peers = Peers();
  const auto check = [&](const DataMovementRequest& request, const char* field) {
    EXPECT_THAT(CompareDataMovement(request, *peers),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field)))
        << field;
  };
  DataMovementRequest r = Request();
  r.gpus = 0;
  check(r, "gpus");
  r = Request();
  r.global_batch = 3;
  check(r, "global_batch: must be >= gpus (4)");
  r = Request();
  r.sample_bytes = 0;
  check(r, "sample_bytes");
  r = Request();
  r.param_bytes = -1;
  check(r, "param_bytes");
  r = Request();
  r.compute_time = Ms(-1);
  check(r, "compute_time");
  r = Request();
  r.host_link_bytes_per_second = 0;
  check(r, "host_link_bytes_per_second");
  r = Request();
  r.gpus_per_host_link = 0;
  check(r, "gpus_per_host_link");
  r = Request();
  r.host_copy_latency = Ms(-1);
  check(r, "host_copy_latency");
  r = Request();
  r.memory_bytes_per_second = 0;
  check(r, "memory_bytes_per_second");
  r = Request();
  r.codec_efficiency = 1.5;
  check(r, "codec_efficiency");
  r = Request();
  r.codec_fixed_time = Ms(-1);
  check(r, "codec_fixed_time");
}

}  // namespace
}  // namespace wavepool::planner
