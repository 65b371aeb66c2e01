#include "wavepool/agent/client/worker_gate.h"

#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/agent/gate_test_util.h"
#include "tests/agent/socket_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/gate_segment.h"

namespace wavepool::agent {
namespace {

using ::wavepool::testing::TempDir;

// Gate files of several GPUs (or several agent lifetimes) in one directory.
class WorkerGateTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(dir_, TempDir::Create("wavepool-sock")); }

  GateSegment& Segment(std::uint32_t gpu) {
    while (segments_.size() <= gpu) {
      absl::StatusOr<std::unique_ptr<GateSegment>> segment = GateSegment::Create(
          dir_.path(), static_cast<std::uint32_t>(segments_.size()), kMaxSlotsPerGpu, 7);
      EXPECT_TRUE(segment.ok()) << segment.status();
      segments_.push_back(std::move(*segment));
    }
    return *segments_[gpu];
  }

  // A new slot of GPU `gpu`'s gate, attached; `slot` receives its index.
  std::unique_ptr<LaunchGate> Attach(std::uint32_t gpu, Role role, std::int32_t limit,
                                     std::uint32_t* slot = nullptr) {
    GateSegment& segment = Segment(gpu);
    absl::StatusOr<Registered> registered = Register(segment, role, limit);
    EXPECT_TRUE(registered.ok()) << registered.status();
    if (!registered.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<LaunchGate>> gate = LaunchGate::Attach(*registered, role);
    EXPECT_TRUE(gate.ok()) << gate.status();
    if (slot != nullptr) *slot = registered->slot;
    return gate.ok() ? std::move(*gate) : nullptr;
  }

  TempDir dir_;
  std::vector<std::unique_ptr<GateSegment>> segments_;
};

TEST_F(WorkerGateTest, UnboundFollowsTheAgentGoneRules) {
  WorkerGate fg(Role::kForeground);
  EXPECT_TRUE(fg.TryAcquire());
  EXPECT_FALSE(fg.Paused());
  EXPECT_FALSE(fg.agent_alive());
  fg.Release();  // unmatched: ignored
  EXPECT_EQ(fg.held(), 0);
  WorkerGate bg(Role::kBackground);
  EXPECT_FALSE(bg.TryAcquire());
  EXPECT_TRUE(bg.Paused());
  EXPECT_TRUE(absl::IsDeadlineExceeded(bg.Acquire(std::chrono::milliseconds(2))));
}

TEST_F(WorkerGateTest, ACreditGoesBackToTheGateItCameFrom) {
  WorkerGate gate(Role::kForeground);
  std::uint32_t old_slot = 0, new_slot = 0;
  gate.Bind(Attach(0, Role::kForeground, 2, &old_slot));
  ASSERT_TRUE(gate.TryAcquire());
  ASSERT_TRUE(gate.TryAcquire());
  gate.Bind(Attach(1, Role::kForeground, 2, &new_slot));  // the agent restarted
  ASSERT_OK(gate.Acquire(std::chrono::seconds(1)));
  EXPECT_EQ(Segment(0).Read(old_slot).in_flight, 2);
  EXPECT_EQ(Segment(1).Read(new_slot).in_flight, 1);
  EXPECT_EQ(gate.held(), 3);
  EXPECT_EQ(gate.CollectRetired(), 1u);  // still holds two credits
  gate.Release();
  gate.Release();  // the old gate drains first
  EXPECT_EQ(Segment(0).Read(old_slot).in_flight, 0);
  EXPECT_EQ(Segment(1).Read(new_slot).in_flight, 1);
  EXPECT_EQ(gate.CollectRetired(), 0u);  // unmapped
  gate.Release();
  EXPECT_EQ(Segment(1).Read(new_slot).in_flight, 0);
  gate.Release();  // unmatched: the new gate stays at 0
  EXPECT_EQ(Segment(1).Read(new_slot).in_flight, 0);
  EXPECT_EQ(gate.bind_count(), 2u);
}

TEST_F(WorkerGateTest, APauseIsLoweredOnTheGateItWasRaisedOn) {
  WorkerGate gate(Role::kForeground);
  gate.Bind(Attach(0, Role::kForeground, 2));
  gate.RaisePause();
  EXPECT_NE(Segment(0).ForegroundHold(), 0u);
  gate.Bind(Attach(1, Role::kForeground, 2));
  EXPECT_EQ(gate.CollectRetired(), 1u);  // kept mapped: its pause is up
  gate.LowerPause();
  EXPECT_EQ(Segment(0).ForegroundHold(), 0u);
  EXPECT_EQ(Segment(1).ForegroundHold(), 0u);
  EXPECT_EQ(gate.CollectRetired(), 0u);
}

TEST_F(WorkerGateTest, AbandonsTheOldestGateWhenEveryRetiredOneIsHeld) {
  WorkerGate gate(Role::kForeground);
  std::vector<std::uint32_t> slots(5);
  for (std::uint32_t g = 0; g < 5; ++g) {
    gate.Bind(Attach(g, Role::kForeground, 2, &slots[g]));
    ASSERT_TRUE(gate.TryAcquire());
  }
  // Four gates fit; binding the fifth abandoned the first with its credit.
  EXPECT_EQ(gate.abandoned_credits(), 1u);
  EXPECT_EQ(gate.held(), 5);                   // the abandoned one is still the worker's to return
  for (int i = 0; i < 5; ++i) gate.Release();  // the first pays the debt
  for (std::uint32_t g = 1; g < 5; ++g) EXPECT_EQ(Segment(g).Read(slots[g]).in_flight, 0) << g;
  EXPECT_EQ(gate.held(), 0);
  EXPECT_EQ(gate.CollectRetired(), 0u);
}

// Threads acquire and release while the gate is rebound 30 times: nothing crashes and every
// gate still mapped ends with nothing in flight; only abandoned credits stay counted, in gates
// that were already unmapped.
TEST_F(WorkerGateTest, StaysConsistentWhileReboundUnderLoad) {
  WorkerGate gate(Role::kForeground);
  std::vector<std::uint32_t> slots;
  std::uint32_t slot = 0;
  gate.Bind(Attach(0, Role::kForeground, 1000, &slot));
  slots.push_back(slot);
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        if (gate.TryAcquire()) {
          (void)gate.IsSensitive(3);
          (void)gate.Paused();
          gate.Release();
        }
      }
    });
  }
  for (int i = 0; i < 30; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    gate.Bind(Attach(0, Role::kForeground, 1000, &slot));
    slots.push_back(slot);
    gate.CollectRetired();
  }  // 31 gates: the file's 32 slots suffice
  stop.store(true);
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(gate.held(), 0);
  EXPECT_EQ(gate.CollectRetired(), 0u);
  // Every gate got back each credit it gave, except those abandoned with an unmapped gate.
  std::int64_t in_flight = 0;
  for (std::uint32_t s : slots) in_flight += Segment(0).Read(s).in_flight;
  EXPECT_EQ(in_flight, static_cast<std::int64_t>(gate.abandoned_credits()));
  EXPECT_EQ(Segment(0).Read(slots.back()).in_flight, 0);
}

}  // namespace
}  // namespace wavepool::agent
