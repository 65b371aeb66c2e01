#include "wavepool/planner/ticktock.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/planner/memory_test_graphs.h"
#include "tests/support/status_matchers.h"

namespace wavepool::planner {
namespace {

using memory_testing::HoldsValue;
using memory_testing::MakeChain;
using memory_testing::Ms;
using memory_testing::TableCost;
using memory_testing::TestLayer;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr double kTimeTolerance = 1e-12;

// Two layers, 1 input item, times fixed + per sample (ms): forward 0.5 + 0.5 b, backward 1 + b.
//   fc0  25 output items, 10 params;  fc1  250 output items, 15 params
// At b = 1 with 1 optimizer moment and the input not counted:
//   resident = 25 * 4 * 3 = 300;  a(fc0) = 100;  a(fc1) = 1000
//   forward fc0 [0, 1) ms 400;  fc1 [1, 2) 1400;  backward fc1 [2, 4) 1400;  fc0 [4, 6) 400
// Peak 1400, trough 400, period 6 ms.
std::vector<TestLayer> TwoLayers() {
  return {{"fc0", 25, 10, false, 0, 0.5, 1.0, 0.5, 1.0},
          {"fc1", 250, 15, false, 0, 0.5, 1.0, 0.5, 1.0}};
}

TrainingMemoryOptions NoInput() {
  TrainingMemoryOptions options;
  options.hold_input_batch = false;
  return options;
}

MemoryTimeline TwoLayerWave() {
  const ModelGraph graph = MakeChain(TwoLayers(), 1).value();
  return BuildMemoryTimeline(graph, TableCost(TwoLayers()), 1, NoInput()).value();
}

TickTockRequest Request(Bytes device_memory) {
  TickTockRequest request;
  request.per_wave_batch = 1;
  request.device_memory = device_memory;
  request.reserve = 0;
  request.memory = NoInput();
  return request;
}

// Tock delayed 3 ms: tock(t) = wave(t - 3 ms) is 1400 on [0, 1) and [4, 6), 400 on [1, 4);
// the sum is 400 + 1400 = 1800 (peak + trough) everywhere. At offset 0 the peaks add: 2800.
TEST(TwoWaves, HalfPeriodOffsetMeetsPeakWithTrough) {
  const MemoryTimeline wave = TwoLayerWave();
  ASSERT_EQ(wave.Peak(), 1400);
  ASSERT_EQ(wave.Trough(), 400);
  EXPECT_THAT(TwoWavePeak(wave, 0.5), HoldsValue(Bytes{1800}));
  EXPECT_THAT(TwoWavePeak(wave, 0.0), HoldsValue(Bytes{2800}));
  ASSERT_OK_AND_ASSIGN(MemoryTimeline combined, TwoWaveTimeline(wave, 0.5));
  EXPECT_EQ(combined.Peak(), 1800);
  EXPECT_EQ(combined.Trough(), 1800);
  EXPECT_NEAR(combined.period().count(), 6e-3, kTimeTolerance);
  // Transitions at 0, 1, 2, 4 ms (tick) and 3, 4, 5, 1 ms (tock): six steps.
  EXPECT_EQ(combined.steps().size(), 6u);
}

// The high part [1, 4) ms is exactly half the period, so only offset 0.5 keeps the two highs
// apart: offsets 0.499 and 0.501 overlap them for 6 us (2800).
TEST(TwoWaves, ScanFindsTheHalfPeriodForOneMemoryMountain) {
  const MemoryTimeline wave = TwoLayerWave();
  ASSERT_OK_AND_ASSIGN(OffsetScan scan, ScanOffsets(wave, 1000));
  EXPECT_EQ(scan.best_peak, 1800);
  EXPECT_EQ(scan.peak_at_half, 1800);
  EXPECT_DOUBLE_EQ(scan.best_offset, 0.5);
  EXPECT_DOUBLE_EQ(scan.tolerance, 0.0);
  EXPECT_THAT(TwoWavePeak(wave, 0.499), HoldsValue(Bytes{2800}));
  EXPECT_THAT(TwoWavePeak(wave, 0.501), HoldsValue(Bytes{2800}));
}

// A measured timeline with two bumps of 100 on [0, 1) s and [5, 6) s of a 10 s period: the half
// offset lands one bump on the other (200); offsets 0.1..0.4 and 0.6..0.9 keep them apart (100).
// Both runs are 301 points wide and equally far from 0.5: the first wins, centred on 0.25, with
// 0.15 of slack on either side.
TEST(TwoWaves, BestOffsetNeedNotBeHalf) {
  ASSERT_OK_AND_ASSIGN(
      MemoryTimeline bumps,
      MemoryTimeline::FromSteps(
          {{Seconds(0), 100}, {Seconds(1), 0}, {Seconds(5), 100}, {Seconds(6), 0}}, Seconds(10)));
  ASSERT_OK_AND_ASSIGN(OffsetScan scan, ScanOffsets(bumps, 1000));
  EXPECT_EQ(scan.peak_at_half, 200);
  EXPECT_EQ(scan.best_peak, 100);
  EXPECT_NEAR(scan.best_offset, 0.25, 1e-3);
  EXPECT_NEAR(scan.tolerance, 0.15, 1e-3);
  EXPECT_THAT(TwoWavePeak(bumps, scan.best_offset), HoldsValue(Bytes{100}));
}

// The peak plateau (fc1 forward 1 ms + backward 3 ms) lasts 4 of 6 ms, longer than half: every
// offset overlaps the two plateaus, so the peak is 2800 everywhere and the whole circle is one
// run, centred on 0.5.
TEST(TwoWaves, PeakPlateauLongerThanHalfAlwaysOverlaps) {
  const std::vector<TestLayer> spec = {{"fc0", 25, 10, false, 0, 1.0, 1.0},
                                       {"fc1", 250, 15, false, 0, 1.0, 3.0}};
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(spec, 1));
  TickTockRequest request = Request(2000);
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis analysis, AnalyzeTickTock(graph, TableCost(spec), request));
  EXPECT_EQ(analysis.offsets.best_peak, 2800);
  EXPECT_EQ(analysis.offsets.peak_at_half, 2800);
  EXPECT_DOUBLE_EQ(analysis.offsets.best_offset, 0.5);
  EXPECT_NEAR(analysis.offsets.tolerance, 0.5, 1e-3);
  EXPECT_EQ(analysis.verdict, TickTockVerdict::kWavesDoNotFit);
}

// usable 1900: two waves at 0.5 need 1800 (fit); one wave at 2b needs 300 + 2 * 1100 = 2500 (does
// not). T(1) = 1 + 1 + 2 + 2 = 6 ms; T(2) = 1.5 + 1.5 + 3 + 3 = 9 ms; pair = clamp(9, 6, 12) = 9;
// gain = 2 * 6 / 9 = 4/3; throughput 1 / 6 ms = 166.7/s alone, 2 / 9 ms = 222.2/s as a pair.
TEST(TickTock, RecommendedWhenTwoWavesFitAndTheDoubleBatchDoesNot) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(TwoLayers(), 1));
  TickTockRequest request = Request(2000);
  request.reserve = 100;
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis a, AnalyzeTickTock(graph, TableCost(TwoLayers()), request));
  EXPECT_EQ(a.usable_memory, 1900);
  EXPECT_EQ(a.wave.Peak(), 1400);
  EXPECT_EQ(a.combined.Peak(), 1800);
  EXPECT_TRUE(a.fits);
  EXPECT_TRUE(a.fits_at_half);
  EXPECT_DOUBLE_EQ(a.offsets.best_offset, 0.5);
  EXPECT_EQ(a.double_batch_peak, 2500);
  EXPECT_FALSE(a.double_batch_fits);
  EXPECT_NEAR(a.wave_iteration.count(), 6e-3, kTimeTolerance);
  EXPECT_NEAR(a.double_batch_iteration.count(), 9e-3, kTimeTolerance);
  EXPECT_NEAR(a.pair_iteration.count(), 9e-3, kTimeTolerance);
  EXPECT_NEAR(a.predicted_gain, 4.0 / 3.0, 1e-9);
  EXPECT_NEAR(a.wave_samples_per_second, 1 / 6e-3, 1e-6);
  EXPECT_NEAR(a.tick_tock_samples_per_second, 2 / 9e-3, 1e-6);
  EXPECT_EQ(a.verdict, TickTockVerdict::kRecommended);
  EXPECT_EQ(TickTockVerdictName(a.verdict), "recommended");
}

// Gain = 2 T(b) / clamp(C(2b) + 2u, T(b), 2 T(b)):
//   batch-independent times: C(2) = C(1) = 6 ms -> pair 6 ms -> gain 2 (the bound);
//   quadratic times: C(2) = 4 * 6 = 24 ms -> pair clamped to 12 ms -> gain 1 (no gain);
//   update 1 ms: T(1) = 7 ms, C(2) + 2u = 11 ms -> gain 14 / 11.
TEST(TickTock, GainFormulaStaysBetweenOneAndTwo) {
  const std::vector<TestLayer> fixed = {{"fc0", 25, 10, false, 0, 1.0, 2.0},
                                        {"fc1", 250, 15, false, 0, 1.0, 2.0}};
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(fixed, 1));
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis idle,
                       AnalyzeTickTock(graph, TableCost(fixed), Request(2000)));
  EXPECT_DOUBLE_EQ(idle.predicted_gain, 2.0);

  const std::vector<TestLayer> per_sample = {{"fc0", 25, 10, false, 0, 0, 0, 1.0, 2.0},
                                             {"fc1", 250, 15, false, 0, 0, 0, 1.0, 2.0}};
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis busy,
                       AnalyzeTickTock(graph, TableCost(per_sample, 2.0), Request(2000)));
  EXPECT_NEAR(busy.double_batch_iteration.count(), 24e-3, kTimeTolerance);
  EXPECT_NEAR(busy.pair_iteration.count(), 12e-3, kTimeTolerance);
  EXPECT_DOUBLE_EQ(busy.predicted_gain, 1.0);
  EXPECT_EQ(busy.verdict, TickTockVerdict::kNoGain);

  TickTockRequest with_update = Request(2000);
  with_update.memory.update_time = Ms(1);
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis updated,
                       AnalyzeTickTock(graph, TableCost(TwoLayers()), with_update));
  EXPECT_NEAR(updated.wave_iteration.count(), 7e-3, kTimeTolerance);
  EXPECT_NEAR(updated.pair_iteration.count(), 11e-3, kTimeTolerance);
  EXPECT_NEAR(updated.predicted_gain, 14.0 / 11.0, 1e-9);
}

// Same two-layer job (one wave 1400, two waves 1800, one wave at 2b 2500) on smaller and larger
// GPUs.
TEST(TickTock, VerdictFollowsWhatFits) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(TwoLayers(), 1));
  const TableCost cost(TwoLayers());
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis tiny, AnalyzeTickTock(graph, cost, Request(1300)));
  EXPECT_EQ(tiny.verdict, TickTockVerdict::kSingleWaveDoesNotFit);
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis small, AnalyzeTickTock(graph, cost, Request(1500)));
  EXPECT_FALSE(small.fits);
  EXPECT_EQ(small.verdict, TickTockVerdict::kWavesDoNotFit);
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis large, AnalyzeTickTock(graph, cost, Request(2500)));
  EXPECT_TRUE(large.double_batch_fits);
  EXPECT_EQ(large.verdict, TickTockVerdict::kDoubleBatchFits);
  // The reserve is taken off the device: 2000 - 300 = 1700 < 1800.
  TickTockRequest reserved = Request(2000);
  reserved.reserve = 300;
  ASSERT_OK_AND_ASSIGN(TickTockAnalysis tight, AnalyzeTickTock(graph, cost, reserved));
  EXPECT_EQ(tight.verdict, TickTockVerdict::kWavesDoNotFit);
}

TEST(TickTock, RejectsBadInputsNamingTheField) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(TwoLayers(), 1));
  const TableCost cost(TwoLayers());
  const MemoryTimeline wave = TwoLayerWave();
  const auto invalid = [](const char* field) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field));
  };
  TickTockRequest request = Request(2000);
  request.per_wave_batch = 0;
  EXPECT_THAT(AnalyzeTickTock(graph, cost, request), invalid("per_wave_batch"));
  request = Request(0);
  EXPECT_THAT(AnalyzeTickTock(graph, cost, request), invalid("device_memory"));
  request = Request(2000);
  request.reserve = 2000;
  EXPECT_THAT(AnalyzeTickTock(graph, cost, request), invalid("reserve"));
  request.reserve = -1;
  EXPECT_THAT(AnalyzeTickTock(graph, cost, request), invalid("reserve"));
  request = Request(2000);
  request.offset_scan_points = 1;
  EXPECT_THAT(AnalyzeTickTock(graph, cost, request), invalid("offset_scan_points"));
  request = Request(2000);
  request.min_gain = 0.5;
  EXPECT_THAT(AnalyzeTickTock(graph, cost, request), invalid("min_gain"));
  EXPECT_THAT(TwoWavePeak(wave, -0.1), invalid("offset"));
  EXPECT_THAT(TwoWavePeak(wave, 1.0), invalid("offset"));
  EXPECT_THAT(TwoWavePeak(wave, std::numeric_limits<double>::quiet_NaN()), invalid("offset"));
  EXPECT_THAT(TwoWaveTimeline(wave, 1.5), invalid("offset"));
  EXPECT_THAT(ScanOffsets(wave, 1), invalid("scan_points"));
}

// ---- Eq. 1-2 ----

// Eq. 1 with equal batches: ({1, 2, -3} + {3, 4, 5}) / 2 = {2, 3, 1}.
// Weighted 3:1: (3 {1, 2, -3} + {3, 4, 5}) / 4 = {1.5, 2.5, -1}.
TEST(CrossWaveGradients, Equation1AveragesTheTwoWavesLocalGradients) {
  EXPECT_THAT(CrossWaveAverage({1, 2, -3}, 32, {3, 4, 5}, 32),
              HoldsValue(ElementsAre(FloatEq(2), FloatEq(3), FloatEq(1))));
  EXPECT_THAT(CrossWaveAverage({1, 2, -3}, 3, {3, 4, 5}, 1),
              HoldsValue(ElementsAre(FloatEq(1.5), FloatEq(2.5), FloatEq(-1))));
  // m = 0: no previous wave, g^0 = g'^0.
  EXPECT_THAT(CrossWaveAverage({1, 2, -3}, 32, {}, 0),
              HoldsValue(ElementsAre(FloatEq(1), FloatEq(2), FloatEq(-3))));
}

// Two GPUs, tock iteration m = 1:
//   GPU 1: g'^1 = {1, 2, -3}, g'^0 = {3, 4, 5}  -> g^1 = {2, 3, 1}
//   GPU 2: g'^1 = {0, 0, 1},  g'^0 = {2, -2, 3} -> g^1 = {1, -1, 2}
//   Eq. 2: G_1 = ({2, 3, 1} + {1, -1, 2}) / 2 = {1.5, 1, 1.5}
// Lemma 1: the mean of the four local gradients is {6, 4, 6} / 4, the same.
TEST(CrossWaveGradients, Equation2IsTheMeanOverTwoNTasks) {
  ASSERT_OK_AND_ASSIGN(std::vector<float> gpu1, CrossWaveAverage({1, 2, -3}, 8, {3, 4, 5}, 8));
  ASSERT_OK_AND_ASSIGN(std::vector<float> gpu2, CrossWaveAverage({0, 0, 1}, 8, {2, -2, 3}, 8));
  ASSERT_OK_AND_ASSIGN(std::vector<float> global, GlobalWaveGradient({{gpu1, 16}, {gpu2, 16}}));
  EXPECT_THAT(global, ElementsAre(FloatEq(1.5), FloatEq(1), FloatEq(1.5)));
  // Unequal samples weight the GPUs: (3 {2, 3, 1} + 1 {1, -1, 2}) / 4 = {1.75, 2, 1.25}.
  EXPECT_THAT(GlobalWaveGradient({{{2, 3, 1}, 3}, {{1, -1, 2}, 1}}),
              HoldsValue(ElementsAre(FloatEq(1.75), FloatEq(2), FloatEq(1.25))));
}

TEST(CrossWaveGradients, RejectsMismatchedInputs) {
  const auto invalid = [](const char* field) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field));
  };
  EXPECT_THAT(CrossWaveAverage({1, 2}, 0, {1, 2}, 1), invalid("current_batch"));
  EXPECT_THAT(CrossWaveAverage({1, 2}, 1, {1, 2}, -1), invalid("previous_batch"));
  EXPECT_THAT(CrossWaveAverage({1, 2}, 1, {1, 2, 3}, 1), invalid("previous"));
  EXPECT_THAT(CrossWaveAverage({1, 2}, 1, {1, 2}, 0), invalid("previous"));
  EXPECT_THAT(CrossWaveAverage({1, 2}, 1, {}, 4), invalid("previous"));
  EXPECT_THAT(GlobalWaveGradient({}), invalid("per_gpu"));
  EXPECT_THAT(GlobalWaveGradient({{{1, 2}, 0}}), invalid("per_gpu[0].samples"));
  EXPECT_THAT(GlobalWaveGradient({{{1, 2}, 1}, {{1}, 1}}), invalid("per_gpu[1].gradient"));
}

// ---- Model-parallel waves ----

// Four layers of 100 output items and 50 params, forward 1 ms, backward 2 ms, one stage each;
// batch 1, plain SGD (0 moments), the input not counted:
//   resident per stage = 50 * 4 * 2 = 400
//   activations per wave: stage 0 its own 400; stages 1-3 own 400 + received 400 = 800
std::vector<TestLayer> FourLayers() {
  return {{"l0", 100, 50, false, 0, 1.0, 2.0},
          {"l1", 100, 50, false, 0, 1.0, 2.0},
          {"l2", 100, 50, false, 0, 1.0, 2.0},
          {"l3", 100, 50, false, 0, 1.0, 2.0}};
}

ModelParallelWavesRequest MpRequest(Bytes device_memory, WavePlacement placement) {
  ModelParallelWavesRequest request;
  request.stages = 4;
  request.per_wave_batch = 1;
  request.device_memory = device_memory;
  request.reserve = 0;
  request.memory.optimizer_moments = 0;
  request.memory.hold_input_batch = false;
  request.placement = placement;
  return request;
}

// Stationary, 2000 bytes per GPU:
//   GPU 0: 400 + (W+1) 400 <= 2000 -> W <= 3 (= N-1);  GPUs 1-3: 400 + (W+1) 800 -> W <= 1
// The job runs 1 tock wave. T_plain = 4 * 3 = 12 ms; one round = 12 + 1 * (1 + 2) = 15 ms;
// speedup = 2 * 12 / 15 = 1.6.
TEST(ModelParallelWaves, StationaryWaveCountIsTheSmallestPerGpu) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(FourLayers(), 100));
  ASSERT_OK_AND_ASSIGN(ModelParallelWavesAnalysis a,
                       AnalyzeModelParallelWaves(graph, TableCost(FourLayers()),
                                                 MpRequest(2000, WavePlacement::kStationary)));
  ASSERT_EQ(a.stages.size(), 4u);
  EXPECT_EQ(a.stages[0].activations_per_wave, 400);
  EXPECT_EQ(a.stages[1].activations_per_wave, 800);
  EXPECT_EQ(a.stages[1].resident, 400);
  EXPECT_EQ(a.stages[1].first_layer, 1);
  EXPECT_EQ(a.stages[1].last_layer, 1);
  EXPECT_NEAR(a.stages[1].forward.count(), 1e-3, kTimeTolerance);
  EXPECT_NEAR(a.stages[1].backward.count(), 2e-3, kTimeTolerance);
  ASSERT_EQ(a.gpus.size(), 4u);
  EXPECT_EQ(a.gpus[0].max_tock_waves, 3);
  EXPECT_EQ(a.gpus[1].max_tock_waves, 1);
  EXPECT_EQ(a.gpus[0].bytes, 1200);  // 400 + 2 * 400
  EXPECT_EQ(a.gpus[3].bytes, 2000);  // 400 + 2 * 800
  EXPECT_TRUE(a.tick_fits);
  EXPECT_EQ(a.tock_waves, 1);
  EXPECT_NEAR(a.plain_iteration.count(), 12e-3, kTimeTolerance);
  EXPECT_NEAR(a.wave_iteration.count(), 15e-3, kTimeTolerance);
  EXPECT_NEAR(a.predicted_speedup, 1.6, 1e-9);
}

// With ample memory every GPU could hold more, but N GPUs take at most N-1 = 3 tock waves:
// stationary speedup 4 * 12 / (12 + 3 * 3) = 16/7; round-robin 4 (every cycle all GPUs busy).
TEST(ModelParallelWaves, TockWavesAreCappedAtNMinusOne) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(FourLayers(), 100));
  const TableCost cost(FourLayers());
  ASSERT_OK_AND_ASSIGN(ModelParallelWavesAnalysis stationary,
                       AnalyzeModelParallelWaves(
                           graph, cost, MpRequest(Bytes{1} << 40, WavePlacement::kStationary)));
  EXPECT_EQ(stationary.tock_waves, 3);
  for (const GpuWaves& gpu : stationary.gpus) EXPECT_EQ(gpu.max_tock_waves, 3);
  EXPECT_NEAR(stationary.predicted_speedup, 16.0 / 7.0, 1e-9);
  ASSERT_OK_AND_ASSIGN(ModelParallelWavesAnalysis round_robin,
                       AnalyzeModelParallelWaves(
                           graph, cost, MpRequest(Bytes{1} << 40, WavePlacement::kRoundRobin)));
  EXPECT_EQ(round_robin.tock_waves, 3);
  EXPECT_NEAR(round_robin.predicted_speedup, 4.0, 1e-9);
}

// Round-robin (§3.3.2): GPU i holds partitions i, i-1, ..., i-W. Per partition, state +
// activations: s0 400 + 400 = 800; s1-s3 400 + 800 = 1200.
//   2000 per GPU: GPU 0: 800, +s3 = 2000 (W=1), +s2 = 3200 (no)  -> 1
//                 GPU 1: 1200, +s0 = 2000 (W=1), +s3 = 3200 (no) -> 1
//                 GPU 2: 1200, +s1 = 2400 (no) -> 0;  GPU 3: 1200, +s2 = 2400 (no) -> 0
//   job: 0 tock waves, speedup 1.
//   5000 per GPU: every GPU reaches 4400 at W = 3 -> 3 tock waves; with a 0.5 ms partition
//   switch per cycle: 4 * 12 / (12 + 2 * 4 * 0.5) = 3.
TEST(ModelParallelWaves, RoundRobinHoldsEveryPartitionItRuns) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(FourLayers(), 100));
  const TableCost cost(FourLayers());
  ASSERT_OK_AND_ASSIGN(
      ModelParallelWavesAnalysis tight,
      AnalyzeModelParallelWaves(graph, cost, MpRequest(2000, WavePlacement::kRoundRobin)));
  std::vector<int> max_waves;
  for (const GpuWaves& gpu : tight.gpus) max_waves.push_back(gpu.max_tock_waves);
  EXPECT_THAT(max_waves, ElementsAre(1, 1, 0, 0));
  EXPECT_EQ(tight.tock_waves, 0);
  EXPECT_EQ(tight.gpus[0].bytes, 800);
  EXPECT_DOUBLE_EQ(tight.predicted_speedup, 1.0);

  ModelParallelWavesRequest roomy = MpRequest(5000, WavePlacement::kRoundRobin);
  roomy.partition_switch_time = Ms(0.5);
  ASSERT_OK_AND_ASSIGN(ModelParallelWavesAnalysis a, AnalyzeModelParallelWaves(graph, cost, roomy));
  EXPECT_EQ(a.tock_waves, 3);
  EXPECT_EQ(a.gpus[2].bytes, 4400);
  EXPECT_NEAR(a.wave_iteration.count(), 16e-3, kTimeTolerance);
  EXPECT_NEAR(a.predicted_speedup, 3.0, 1e-9);
}

// 1000 bytes: GPU 0 holds the tick (800) but GPUs 1-3 cannot (1200).
TEST(ModelParallelWaves, ReportsWhenEvenTheTickWaveDoesNotFit) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(FourLayers(), 100));
  ASSERT_OK_AND_ASSIGN(ModelParallelWavesAnalysis a,
                       AnalyzeModelParallelWaves(graph, TableCost(FourLayers()),
                                                 MpRequest(1000, WavePlacement::kStationary)));
  EXPECT_FALSE(a.tick_fits);
  EXPECT_EQ(a.tock_waves, 0);
  EXPECT_EQ(a.gpus[0].max_tock_waves, 0);
  EXPECT_EQ(a.gpus[1].max_tock_waves, -1);
}

// Two stages {0, 2}: stage 0 = l0-l1 (state 800, activations 400 + 400 + the model input
// 1 * 100 * 4 = 400 -> 1200); stage 1 = l2-l3 (state 800, activations 800 + received 400 = 1200).
TEST(ModelParallelWaves, ExplicitStagesCountReceivedTensorsAndTheInput) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(FourLayers(), 100));
  ModelParallelWavesRequest request = MpRequest(1 << 20, WavePlacement::kStationary);
  request.stages = 2;
  request.stage_starts = {0, 2};
  request.memory.hold_input_batch = true;
  ASSERT_OK_AND_ASSIGN(ModelParallelWavesAnalysis a,
                       AnalyzeModelParallelWaves(graph, TableCost(FourLayers()), request));
  ASSERT_EQ(a.stages.size(), 2u);
  EXPECT_EQ(a.stages[0].last_layer, 1);
  EXPECT_EQ(a.stages[0].resident, 800);
  EXPECT_EQ(a.stages[0].activations_per_wave, 1200);
  EXPECT_EQ(a.stages[1].activations_per_wave, 1200);
  EXPECT_EQ(a.tock_waves, 1);
}

// Layer times 1, 1, 1, 3 ms: two stages {0,1,2 | 3} (max 3 ms); three stages {0 | 1,2 | 3} is
// the first split found with max 3 ms ({0,1 | 2 | 3} would also do).
TEST(ModelParallelWaves, BalancedStagesMinimiseTheSlowestStage) {
  const std::vector<TestLayer> spec = {{"a", 1, 0, false, 0, 1.0, 0},
                                       {"b", 1, 0, false, 0, 1.0, 0},
                                       {"c", 1, 0, false, 0, 1.0, 0},
                                       {"d", 1, 0, false, 0, 3.0, 0}};
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(spec, 1));
  const TableCost cost(spec);
  EXPECT_THAT(BalancedStageStarts(graph, cost, 1, 2), HoldsValue(ElementsAre(0, 3)));
  EXPECT_THAT(BalancedStageStarts(graph, cost, 1, 3), HoldsValue(ElementsAre(0, 1, 3)));
  EXPECT_THAT(BalancedStageStarts(graph, cost, 1, 4), HoldsValue(ElementsAre(0, 1, 2, 3)));
}

TEST(ModelParallelWaves, RejectsBadInputsNamingTheField) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(FourLayers(), 100));
  const TableCost cost(FourLayers());
  const auto invalid = [](const char* field) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field));
  };
  ModelParallelWavesRequest request = MpRequest(2000, WavePlacement::kStationary);
  request.stages = 0;
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("stages"));
  request.stages = 5;
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("stages"));
  request = MpRequest(2000, WavePlacement::kStationary);
  request.stage_starts = {0, 1};
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("stage_starts"));
  request.stage_starts = {1, 2, 3, 3};
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("stage_starts[0]"));
  request.stage_starts = {0, 2, 2, 3};
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("stage_starts[2]"));
  request = MpRequest(2000, WavePlacement::kStationary);
  request.per_wave_batch = 0;
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("per_wave_batch"));
  request = MpRequest(0, WavePlacement::kStationary);
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("device_memory"));
  request = MpRequest(2000, WavePlacement::kRoundRobin);
  request.partition_switch_time = Ms(-1);
  EXPECT_THAT(AnalyzeModelParallelWaves(graph, cost, request), invalid("partition_switch_time"));
  EXPECT_THAT(BalancedStageStarts(graph, cost, 1, 0), invalid("stages"));
  EXPECT_THAT(BalancedStageStarts(graph, cost, 0, 2), invalid("batch"));
}

}  // namespace
}  // namespace wavepool::planner
