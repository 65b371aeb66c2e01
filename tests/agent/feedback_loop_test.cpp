// The slowdown feedback loop closed around a real launch gate and the simulated GPU, on a
// simulated clock: a background job slows the foreground past its SLO, the loop finds the
// sensitive groups, and the foreground returns under its SLO while the background keeps making
// progress (deeppool-burst-parallel §5). Deterministic: one thread drives both workers, and time
// moves only from one group completion to the next.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/gate_test_util.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gate_segment.h"
#include "wavepool/agent/simulated_gpu.h"
#include "wavepool/agent/slowdown_feedback.h"

namespace wavepool::agent {
namespace {

using std::chrono::microseconds;
using ::wavepool::testing::TempDir;

struct ForegroundGroup {
  std::uint32_t id;
  OpKind kind;
  std::int64_t solo_us;
};

// One foreground training iteration: five op groups, then a gap in which it does not use the GPU
// (a burst-parallel stage on other GPUs, host work) and the background may run freely.
const std::vector<ForegroundGroup> kIteration = {{0, OpKind::kCompute, 300},
                                                 {1, OpKind::kCompute, 100},
                                                 {2, OpKind::kCompute, 200},
                                                 {3, OpKind::kCompute, 100},
                                                 {4, OpKind::kAllReduce, 150}};
constexpr std::int64_t kGapUs = 500;
constexpr std::int64_t kForegroundKernelUs = 25;
constexpr std::int64_t kBackgroundGroupUs = 100;
constexpr std::int64_t kBackgroundKernelUs = 25;
constexpr double kSlo = 1.10;

class FeedbackLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, TempDir::Create("wavepool-feedback"));
    dir_ = temp_dir_.path();
    ASSERT_OK_AND_ASSIGN(segment_, GateSegment::Create(dir_, 0, 4, 1));
    ASSERT_OK_AND_ASSIGN(gpus_, SimulatedGpus::Create(clock_, SimulatedGpuOptions{}));
    ASSERT_OK_AND_ASSIGN(fg_task_,
                         gpus_->AddTask(0, {Role::kForeground, 100, StreamPriority::kHigh}));
    fg_gate_ = Attach(Role::kForeground, 2);
  }
  std::unique_ptr<LaunchGate> Attach(Role role, int credits) {
    absl::StatusOr<Registered> registered = Register(*segment_, role, credits, 100);
    EXPECT_OK(registered.status());
    auto gate = LaunchGate::Attach(*registered, role);
    EXPECT_OK(gate.status());
    return *std::move(gate);
  }

  void AddBackground() {
    auto task = gpus_->AddTask(0, {Role::kBackground, 200, StreamPriority::kLow});
    ASSERT_OK(task.status());
    bg_task_ = *task;
    bg_gate_ = Attach(Role::kBackground, 1);
  }

  // Advances simulated time to `until`, letting the background complete and start groups.
  void RunBackgroundUntil(MonotonicTime until) {
    while (true) {
      if (bg_gate_ && !bg_group_ && bg_gate_->TryAcquire()) {
        bg_group_ = gpus_
                        ->Submit(*bg_task_, {microseconds(kBackgroundGroupUs), 1.0,
                                             microseconds(kBackgroundKernelUs)})
                        .value();
      }
      MonotonicTime next = until;
      if (bg_group_) next = std::min(next, gpus_->Timing(*bg_group_)->completion);
      if (next > clock_.Now()) clock_.Advance(next - clock_.Now());
      if (bg_group_ && gpus_->Timing(*bg_group_)->complete) {
        bg_group_.reset();
        bg_gate_->Release();
        ++bg_completed_;
        continue;  // the background may start its next group at once
      }
      if (clock_.Now() >= until) return;
    }
  }

  // One foreground iteration through the gate; returns its groups' time over their solo time.
  double RunIteration(bool background_present) {
    double observed = 0, solo = 0;
    for (const ForegroundGroup& g : kIteration) {
      EXPECT_TRUE(fg_gate_->TryAcquire());
      const bool sensitive = fg_gate_->IsSensitive(g.id);
      if (sensitive) fg_gate_->RaisePause();
      const MonotonicTime start = clock_.Now();
      const OpGroupId group =
          gpus_->Submit(fg_task_, {microseconds(g.solo_us), 0.6, microseconds(kForegroundKernelUs)})
              .value();
      // Until it completes (a projection that changes as the background comes and goes).
      while (!gpus_->Timing(group)->complete) RunBackgroundUntil(gpus_->Timing(group)->completion);
      const MonotonicTime end = gpus_->Timing(group)->completion;
      if (sensitive) fg_gate_->LowerPause();
      fg_gate_->Release();
      std::vector<SensitivityChange> changes;
      feedback_.Observe({g.id, g.kind, static_cast<std::uint64_t>((end - start).count())},
                        background_present, &changes);
      if (loop_closed_) {
        for (const SensitivityChange& c : changes)
          segment_->SetSensitive(0, c.op_group, c.sensitive);
      }
      observed += static_cast<double>((end - start).count());
      solo += static_cast<double>(g.solo_us) * 1000;
    }
    RunBackgroundUntil(clock_.Now() + microseconds(kGapUs));
    return observed / solo;
  }

  // The mean slowdown of `n` iterations.
  double Run(int n, bool background_present) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += RunIteration(background_present);
    return sum / n;
  }

  TempDir temp_dir_;  // removed after everything below
  std::string dir_;   // temp_dir_.path()
  testing::SimulatedClock clock_;
  std::unique_ptr<GateSegment> segment_;
  std::unique_ptr<SimulatedGpus> gpus_;
  SimulatedTaskId fg_task_ = 0;
  std::optional<SimulatedTaskId> bg_task_;
  std::unique_ptr<LaunchGate> fg_gate_, bg_gate_;
  std::optional<OpGroupId> bg_group_;
  long bg_completed_ = 0;
  SlowdownFeedback feedback_{kSlo};
  bool loop_closed_ = true;  // whether the sensitive set reaches the gate
};

TEST_F(FeedbackLoop, FindsTheSensitiveGroupsAndBringsTheForegroundBackUnderItsSlo) {
  // Alone, the foreground runs at solo speed and the loop learns each group's solo time.
  EXPECT_NEAR(Run(20, false), 1.0, 1e-9);
  EXPECT_EQ(feedback_.SensitiveCount(), 1u);  // only the all-reduce, by rule

  // The background arrives: before the loop reacts, the first iteration is slowed past the SLO.
  AddBackground();
  const double first = RunIteration(true);
  EXPECT_GT(first, kSlo);
  // The loop marks the groups the background slows down...
  Run(20, true);
  EXPECT_GE(feedback_.SensitiveCount(), 3u);
  // ...and once it has settled, the foreground stays under its SLO on average...
  const long bg_before = bg_completed_;
  const double settled = Run(200, true);
  EXPECT_LE(settled, kSlo);
  // ...while the background keeps making progress in the foreground's gaps.
  EXPECT_GT(bg_completed_ - bg_before, 200);
}

TEST_F(FeedbackLoop, WithoutItTheBackgroundKeepsTheForegroundOverItsSlo) {
  loop_closed_ = false;  // the loop still measures, but the gate never learns
  Run(20, false);
  AddBackground();
  Run(20, true);
  EXPECT_GT(Run(200, true), 1.4);  // pacing and priorities alone: about 1.56x
}

}  // namespace
}  // namespace wavepool::agent
