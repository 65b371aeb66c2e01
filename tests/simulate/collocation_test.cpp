#include "wavepool/simulate/collocation.h"

#include <chrono>
#include <cmath>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/simulated_gpu.h"

namespace wavepool::simulate {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

JobCost WithKernel(double layer_seconds) {
  JobCost cost;
  cost.layer_seconds = layer_seconds;
  cost.iteration_seconds = 0.1;
  return cost;
}

// The foreground slowdown of Share is the one the agent's simulated GPU produces: a 1 ms
// high-priority foreground group of kernel k_f submitted beside a long low-priority background
// group of kernel k_b completes (1 + S_f) ms later.
TEST(CollocationModel, ForegroundSlowdownIsTheAgentsSimulatedGpus) {
  for (const auto& [kf_us, kb_us] : {std::pair{50, 50}, {20, 500}, {500, 20}, {100, 2000}}) {
    wavepool::testing::SimulatedClock clock;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<agent::SimulatedGpus> gpus,
                         agent::SimulatedGpus::Create(clock, agent::SimulatedGpuOptions{}));
    ASSERT_OK_AND_ASSIGN(
        agent::SimulatedTaskId fg,
        gpus->AddTask(0, {agent::Role::kForeground, 1, agent::StreamPriority::kHigh}));
    ASSERT_OK_AND_ASSIGN(
        agent::SimulatedTaskId bg,
        gpus->AddTask(0, {agent::Role::kBackground, 2, agent::StreamPriority::kLow}));
    ASSERT_OK(gpus->Submit(bg, {std::chrono::seconds(10), 1.0, microseconds(kb_us)}).status());
    ASSERT_OK_AND_ASSIGN(agent::OpGroupId group,
                         gpus->Submit(fg, {milliseconds(1), 1.0, microseconds(kf_us)}));
    ASSERT_OK_AND_ASSIGN(agent::GroupTiming timing, gpus->Timing(group));
    const double measured =
        static_cast<double>((timing.completion - timing.submitted).count()) / 1e6 - 1.0;

    CollocationModel model(CollocationOptions{});
    const SharedGpu shared = model.Share(WithKernel(kf_us * 1e-6), WithKernel(kb_us * 1e-6), 1.1);
    EXPECT_THAT(shared.foreground_group_slowdown, DoubleNear(measured, 1e-6))
        << kf_us << " us beside " << kb_us << " us";
  }
}

TEST(CollocationModel, FollowsTheAgentsInterferenceParameters) {
  CollocationOptions options;
  options.interference.foreground_blocking = 3.0;
  options.interference.background_sharing = 0.25;
  options.background_intensity = 0.5;
  CollocationModel model(options);
  const SharedGpu shared = model.Share(WithKernel(1e-4), WithKernel(3e-4), 1.1);
  EXPECT_DOUBLE_EQ(shared.foreground_group_slowdown,
                   agent::ForegroundSlowdown(options.interference, 0.5, microseconds(100),
                                             microseconds(300), /*high_priority=*/true));
  EXPECT_DOUBLE_EQ(shared.background_group_slowdown, 0.25);
}

// A group slowed within the SLO is never marked sensitive: it always runs beside the background.
TEST(CollocationModel, AGroupWithinTheSloAlwaysRunsCollocated) {
  CollocationModel model(CollocationOptions{});
  const FeedbackEquilibrium& e = model.Equilibrium(0.05, 1.1);
  EXPECT_DOUBLE_EQ(e.collocated_share, 1.0);
  EXPECT_DOUBLE_EQ(e.collocated_time_share, 1.0);
  EXPECT_NEAR(e.group_slowdown, 1.05, 1e-9);
}

// Past the SLO the loop cycles (deeppool-burst-parallel §5): one collocated group jumps the
// average to 1 + S, then n solo groups decay it by (1 - decay_weight) each until it is within the
// SLO again: n = ceil(log((SLO - 1) / S) / log(1 - w)), and the group's slowdown is 1 + S/(n + 1).
TEST(CollocationModel, PastTheSloTheLoopCyclesAsItsDecayDictates) {
  CollocationModel model(CollocationOptions{});
  const double w = agent::FeedbackConfig{}.decay_weight;
  for (double s : {0.15, 0.5, 1.0, 1.1}) {
    const FeedbackEquilibrium& e = model.Equilibrium(s, 1.1);
    const double n = std::ceil(std::log(0.1 / s) / std::log(1 - w));
    EXPECT_NEAR(e.collocated_share, 1 / (n + 1), 1e-9) << s;
    EXPECT_NEAR(e.group_slowdown, 1 + s / (n + 1), 1e-6) << s;
    EXPECT_LE(e.group_slowdown, 1.1) << s;
    EXPECT_NEAR(e.collocated_time_share, (1 + s) / (n + 1 + s), 1e-6) << s;
  }
}

// The agent's loop keeps the SLO for the slowdowns its default model can produce (S_f <= 1.1)
// down to an SLO of 1.05. Tighter, one collocated group per cycle is already too many: at 1.02 a
// group slowed 2x beside long background kernels runs over it, and the simulation reports that
// rather than hiding it.
TEST(CollocationModel, TheLoopKeepsTheSloDownToFivePercent) {
  CollocationModel model(CollocationOptions{});
  for (double slo : {1.05, 1.1, 1.2, 1.5}) {
    for (double s = 0.01; s <= 1.1; s += 0.01) {
      EXPECT_LE(model.Equilibrium(s, slo).group_slowdown, slo + 1e-9) << s << " under " << slo;
    }
  }
  EXPECT_GT(model.Equilibrium(1.0, 1.02).group_slowdown, 1.02);
}

TEST(CollocationModel, AnSloOfOneNeverLetsTheBackgroundRunBeside) {
  CollocationModel model(CollocationOptions{});
  const FeedbackEquilibrium& e = model.Equilibrium(0.3, 1.0);
  EXPECT_DOUBLE_EQ(e.collocated_share, 0.0);
  EXPECT_DOUBLE_EQ(e.group_slowdown, 1.0);
}

TEST(CollocationModel, BackgroundRateCountsIdleTimeAndSharedTime) {
  SharedGpu shared;
  shared.background_group_slowdown = 1.0;  // half speed beside the foreground
  shared.equilibrium = {1.0, 1.0, 1.05};
  // An idle foreground leaves the whole GPU.
  EXPECT_DOUBLE_EQ(CollocationModel::BackgroundRate(shared, 0.0, 1.0), 1.0);
  // Busy 60% of a solo iteration, stretched 1.05 (the gang's sigma equal to this GPU's): the
  // background runs alone 40% of the time, at half speed the other 60%.
  EXPECT_NEAR(CollocationModel::BackgroundRate(shared, 0.6, 1.05), 0.4 + 0.3, 1e-12);
  // A slower GPU elsewhere in the gang stretches the iteration: more time alone here.
  EXPECT_GT(CollocationModel::BackgroundRate(shared, 0.6, 1.2),
            CollocationModel::BackgroundRate(shared, 0.6, 1.05));
  // Never beside (the loop keeps it paused): only the idle time.
  shared.equilibrium = {0.0, 0.0, 1.0};
  EXPECT_NEAR(CollocationModel::BackgroundRate(shared, 0.6, 1.0), 0.4, 1e-12);
}

TEST(CollocationOptions, ErrorsNameTheField) {
  CollocationOptions o;
  o.foreground_intensity = 0;
  EXPECT_THAT(Validate(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("foreground_intensity: must be in (0, 1]")));
  o = {};
  o.interference.priority_factor = 2;
  EXPECT_THAT(Validate(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("interference.priority_factor")));
  o = {};
  o.feedback.decay_weight = 0;
  EXPECT_THAT(Validate(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("feedback: decay_weight")));
  EXPECT_OK(Validate(CollocationOptions{}));
}

}  // namespace
}  // namespace wavepool::simulate
