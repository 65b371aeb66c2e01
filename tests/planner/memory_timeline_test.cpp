#include "wavepool/planner/memory_timeline.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/planner/memory_test_graphs.h"
#include "tests/support/status_matchers.h"

namespace wavepool::planner {
namespace {

using memory_testing::MakeChain;
using memory_testing::Ms;
using memory_testing::TableCost;
using memory_testing::TestLayer;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr double kTimeTolerance = 1e-12;

// Three layers, 10 input items per sample:
//   fc0   25 output items, 100 params, forward 1 ms, backward 2 ms
//   relu  25 items in place (no new memory), forward 0.5 ms, backward 0.5 ms
//   fc1   50 output items + 10 internal, 50 params, forward 1 ms, backward 3 ms
std::vector<TestLayer> ThreeLayers() {
  return {{"fc0", 25, 100, false, 0, 1.0, 2.0},
          {"relu", 25, 0, true, 0, 0.5, 0.5},
          {"fc1", 50, 50, false, 10, 1.0, 3.0}};
}

// At batch 2, SGD with momentum (1 moment):
//   resident = 150 params * 4 B * (2 + 1) = 1800;  input = 2 * 10 * 4 = 80
//   a(fc0) = 2 * 25 * 4 = 200;  a(relu) = 0;  a(fc1) = 2 * (50 + 10) * 4 = 480
//   forward  fc0  [0, 1) ms     1800 + 80 + 200 = 2080
//            relu [1, 1.5)      2080
//            fc1  [1.5, 2.5)    2080 + 480 = 2560
//   backward fc1  [2.5, 5.5)    2560, then fc1's 480 are freed
//            relu [5.5, 6)      2080
//            fc0  [6, 8)        2080
//   update        [8, 8.5)      1800 (update_time 0.5 ms)
TEST(MemoryTimeline, StepsMatchHandComputedExample) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(ThreeLayers(), 10));
  TableCost cost(ThreeLayers());
  TrainingMemoryOptions options;
  options.update_time = Ms(0.5);
  ASSERT_OK_AND_ASSIGN(MemoryTimeline timeline, BuildMemoryTimeline(graph, cost, 2, options));

  struct Expected {
    double start_ms;
    Bytes bytes;
    LayerId layer;
    MemoryPhase phase;
  };
  const std::vector<Expected> expected = {{0.0, 2080, 0, MemoryPhase::kForward},
                                          {1.0, 2080, 1, MemoryPhase::kForward},
                                          {1.5, 2560, 2, MemoryPhase::kForward},
                                          {2.5, 2560, 2, MemoryPhase::kBackward},
                                          {5.5, 2080, 1, MemoryPhase::kBackward},
                                          {6.0, 2080, 0, MemoryPhase::kBackward},
                                          {8.0, 1800, MemoryStep::kNoLayer, MemoryPhase::kUpdate}};
  ASSERT_EQ(timeline.steps().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NEAR(timeline.steps()[i].start.count(), expected[i].start_ms * 1e-3, kTimeTolerance);
    EXPECT_EQ(timeline.steps()[i].bytes, expected[i].bytes);
    EXPECT_EQ(timeline.steps()[i].layer, expected[i].layer);
    EXPECT_EQ(timeline.steps()[i].phase, expected[i].phase);
  }
  EXPECT_NEAR(timeline.period().count(), 8.5e-3, kTimeTolerance);
}

// Same example: peak 2560 first reached when fc1's forward starts (1.5 ms), trough 1800 during
// the update, mean = (2080 * 4 ms + 2560 * 4 ms + 1800 * 0.5 ms) / 8.5 ms = 19460 / 8.5.
TEST(MemoryTimeline, PeakTroughMeanAndWhereThePeakOccurs) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(ThreeLayers(), 10));
  TableCost cost(ThreeLayers());
  TrainingMemoryOptions options;
  options.update_time = Ms(0.5);
  ASSERT_OK_AND_ASSIGN(MemoryTimeline timeline, BuildMemoryTimeline(graph, cost, 2, options));
  EXPECT_EQ(timeline.Peak(), 2560);
  EXPECT_EQ(timeline.Trough(), 1800);
  EXPECT_NEAR(timeline.MeanBytes(), 19460.0 / 8.5, 1e-6);
  EXPECT_NEAR(timeline.PeakStep().start.count(), 1.5e-3, kTimeTolerance);
  EXPECT_EQ(timeline.PeakStep().layer, 2);
  EXPECT_EQ(timeline.PeakStep().phase, MemoryPhase::kForward);
  EXPECT_EQ(MemoryPhaseName(timeline.PeakStep().phase), "forward");
}

// Without the update step the trough is fc0's level (2080) and the period 8 ms.
TEST(MemoryTimeline, WithoutUpdateTheTroughIsTheFirstLayersLevel) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(ThreeLayers(), 10));
  TableCost cost(ThreeLayers());
  ASSERT_OK_AND_ASSIGN(MemoryTimeline timeline, BuildMemoryTimeline(graph, cost, 2));
  EXPECT_EQ(timeline.steps().size(), 6u);
  EXPECT_EQ(timeline.Trough(), 2080);
  EXPECT_NEAR(timeline.period().count(), 8e-3, kTimeTolerance);
}

// Adam (2 moments): resident 150 * 4 * 4 = 2400, peak 2400 + 80 + 200 + 480 = 3160. Without the
// input batch: 1800 + 200 + 480 = 2480.
TEST(MemoryTimeline, OptimizerMomentsAndInputBatchChangeTheLevels) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(ThreeLayers(), 10));
  TableCost cost(ThreeLayers());
  TrainingMemoryOptions adam;
  adam.optimizer_moments = 2;
  ASSERT_OK_AND_ASSIGN(MemoryTimeline with_adam, BuildMemoryTimeline(graph, cost, 2, adam));
  EXPECT_EQ(with_adam.Peak(), 3160);
  TrainingMemoryOptions no_input;
  no_input.hold_input_batch = false;
  ASSERT_OK_AND_ASSIGN(MemoryTimeline without_input, BuildMemoryTimeline(graph, cost, 2, no_input));
  EXPECT_EQ(without_input.Peak(), 2480);
  EXPECT_EQ(ResidentStateBytes(150, 2), 2400);
  EXPECT_EQ(LayerActivationBytes(graph.layer(2), 2), 480);
  EXPECT_EQ(LayerActivationBytes(graph.layer(1), 2), 0);
  EXPECT_EQ(InputBatchBytes(graph, 2), 80);
}

// A layer that takes no time leaves no step: relu's forward (0 ms) disappears and fc1's
// forward starts at 1 ms.
TEST(MemoryTimeline, ZeroDurationLayersLeaveNoStep) {
  std::vector<TestLayer> spec = ThreeLayers();
  spec[1].forward_ms = 0;
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(spec, 10));
  TableCost cost(spec);
  ASSERT_OK_AND_ASSIGN(MemoryTimeline timeline, BuildMemoryTimeline(graph, cost, 2));
  ASSERT_EQ(timeline.steps().size(), 5u);
  EXPECT_EQ(timeline.steps()[1].layer, 2);
  EXPECT_NEAR(timeline.steps()[1].start.count(), 1e-3, kTimeTolerance);
  for (size_t i = 0; i < timeline.steps().size(); ++i) {
    EXPECT_GT(timeline.Duration(i), Seconds(0));
  }
}

// At(t) is periodic: 9 ms is 0.5 ms into the next 8.5 ms iteration (2080); -0.25 ms is 8.25 ms
// (the update, 1800); 2.5 ms is fc1's backward (2560).
TEST(MemoryTimeline, AtIsPeriodic) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(ThreeLayers(), 10));
  TableCost cost(ThreeLayers());
  TrainingMemoryOptions options;
  options.update_time = Ms(0.5);
  ASSERT_OK_AND_ASSIGN(MemoryTimeline timeline, BuildMemoryTimeline(graph, cost, 2, options));
  EXPECT_EQ(timeline.At(Ms(9)), 2080);
  EXPECT_EQ(timeline.At(Ms(-0.25)), 1800);
  EXPECT_EQ(timeline.At(Ms(2.5)), 2560);
  EXPECT_EQ(timeline.At(Ms(8.5 * 3 + 2.0)), 2560);
}

// Sampling the 8.5 ms iteration at 1 kHz for 8.5 ms: floor(8.5) = 8 samples at 0..7 ms:
// 2080, 2080, 2560, 2560, 2560, 2560, 2080, 2080.
TEST(MemoryTimeline, SamplesAtAFixedRate) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(ThreeLayers(), 10));
  TableCost cost(ThreeLayers());
  TrainingMemoryOptions options;
  options.update_time = Ms(0.5);
  ASSERT_OK_AND_ASSIGN(MemoryTimeline timeline, BuildMemoryTimeline(graph, cost, 2, options));
  ASSERT_OK_AND_ASSIGN(std::vector<MemorySample> samples, timeline.Sample(1000, Ms(8.5)));
  const std::vector<Bytes> expected = {2080, 2080, 2560, 2560, 2560, 2560, 2080, 2080};
  ASSERT_EQ(samples.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(samples[k].bytes, expected[k]) << k;
    EXPECT_NEAR(samples[k].time.count(), static_cast<double>(k) * 1e-3, kTimeTolerance);
  }
  // 100 Hz for 0.29 s: 29 samples, each 10 ms apart, wrapping over the iteration.
  ASSERT_OK_AND_ASSIGN(std::vector<MemorySample> slow, timeline.Sample(100, Seconds(0.29)));
  ASSERT_EQ(slow.size(), 29u);
  EXPECT_EQ(slow[2].bytes, 2560);  // 20 ms = 3 ms into the 3rd iteration: fc1's backward
  EXPECT_EQ(slow[5].bytes, 2080);  // 50 ms = 7.5 ms into the 6th: fc0's backward
}

TEST(MemoryTimeline, FromStepsValidatesItsInvariants) {
  EXPECT_THAT(MemoryTimeline::FromSteps({{Seconds(0), 1}}, Seconds(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("period")));
  EXPECT_THAT(MemoryTimeline::FromSteps({}, Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps")));
  EXPECT_THAT(MemoryTimeline::FromSteps({{Seconds(0.5), 1}}, Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps[0].start")));
  EXPECT_THAT(MemoryTimeline::FromSteps({{Seconds(0), 1}, {Seconds(0), 2}}, Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps[1].start")));
  EXPECT_THAT(MemoryTimeline::FromSteps({{Seconds(0), 1}, {Seconds(1), 2}}, Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("below the period")));
  EXPECT_THAT(MemoryTimeline::FromSteps({{Seconds(0), -1}}, Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps[0].bytes")));
}

TEST(MemoryTimeline, SampleRejectsBadRatesAndDurations) {
  ASSERT_OK_AND_ASSIGN(MemoryTimeline timeline,
                       MemoryTimeline::FromSteps({{Seconds(0), 1}}, Seconds(1)));
  EXPECT_THAT(timeline.Sample(0, Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rate_hz")));
  EXPECT_THAT(timeline.Sample(100, Seconds(-1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("duration")));
  EXPECT_THAT(timeline.Sample(1e6, Seconds(1e3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("samples")));
}

TEST(MemoryTimeline, BuildRejectsBadInputs) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, MakeChain(ThreeLayers(), 10));
  TableCost cost(ThreeLayers());
  EXPECT_THAT(BuildMemoryTimeline(graph, cost, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("per_gpu_batch")));
  TrainingMemoryOptions bad_moments;
  bad_moments.optimizer_moments = -1;
  EXPECT_THAT(BuildMemoryTimeline(graph, cost, 1, bad_moments),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("optimizer_moments")));
  TrainingMemoryOptions bad_update;
  bad_update.update_time = Ms(-1);
  EXPECT_THAT(BuildMemoryTimeline(graph, cost, 1, bad_update),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("update_time")));

  std::vector<TestLayer> negative = ThreeLayers();
  negative[2].backward_ms = -1;
  TableCost negative_cost(negative);
  EXPECT_THAT(BuildMemoryTimeline(graph, negative_cost, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("layer 2 (fc1)")));

  std::vector<TestLayer> instant = ThreeLayers();
  for (TestLayer& layer : instant) layer.forward_ms = layer.backward_ms = 0;
  TableCost instant_cost(instant);
  EXPECT_THAT(BuildMemoryTimeline(graph, instant_cost, 1),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("zero iteration time")));
}

}  // namespace
}  // namespace wavepool::planner
