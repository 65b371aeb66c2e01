// The worker's side of the launch gate (LaunchGate) against a real GateSegment file: credit
// limits, pauses, sensitive op groups, statistics, heartbeats and the agent-gone rules.
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/gate_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gate_segment.h"

namespace wavepool::agent {
namespace {

class LaunchGateTest : public GateTest {};

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

TEST_F(LaunchGateTest, ForegroundTakesCreditsUpToItsLimit) {
  auto gate = NewGate(Role::kForeground, 2);
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->credit_limit(), 2);
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_FALSE(gate->TryAcquire());  // 2 in flight = the limit
  EXPECT_EQ(gate->in_flight(), 2);
  gate->Release();
  EXPECT_EQ(gate->in_flight(), 1);
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_FALSE(gate->TryAcquire());
  gate->Release();
  gate->Release();
  EXPECT_EQ(gate->in_flight(), 0);
  // 3 successful acquires; failures are not counted.
  EXPECT_EQ(segment_->Read(gate->slot()).acquired_total, 3u);
}

TEST_F(LaunchGateTest, ZeroLimitAdmitsNothing) {
  auto gate = NewGate(Role::kForeground, 0);
  ASSERT_NE(gate, nullptr);
  EXPECT_FALSE(gate->TryAcquire());
  EXPECT_EQ(gate->in_flight(), 0);
}

TEST_F(LaunchGateTest, LoweredLimitLetsInFlightDrain) {
  auto gate = NewGate(Role::kForeground, 3);
  ASSERT_NE(gate, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(gate->TryAcquire());
  segment_->SetCreditLimit(gate->slot(), 1);
  EXPECT_EQ(gate->credit_limit(), 1);
  // 3 in flight, limit 1: nothing new until in_flight drops under 1.
  EXPECT_FALSE(gate->TryAcquire());
  gate->Release();  // 2
  EXPECT_FALSE(gate->TryAcquire());
  gate->Release();  // 1
  EXPECT_FALSE(gate->TryAcquire());
  gate->Release();  // 0
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_EQ(gate->in_flight(), 1);
  segment_->SetCreditLimit(gate->slot(), 2);
  EXPECT_TRUE(gate->TryAcquire());
}

TEST_F(LaunchGateTest, ReleaseNeverTakesInFlightBelowZero) {
  auto gate = NewGate(Role::kForeground, 2);
  ASSERT_NE(gate, nullptr);
  gate->Release();  // a caller bug: nothing was taken
  EXPECT_EQ(gate->in_flight(), 0);
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_FALSE(gate->TryAcquire());
}

TEST_F(LaunchGateTest, BackgroundWaitsWhileAForegroundPauseIsRaised) {
  auto foreground = NewGate(Role::kForeground, 2);
  auto background = NewGate(Role::kBackground, 1);
  ASSERT_NE(foreground, nullptr);
  ASSERT_NE(background, nullptr);
  EXPECT_FALSE(background->Paused());
  foreground->RaisePause();
  EXPECT_EQ(segment_->ForegroundHold(), 1u);
  EXPECT_TRUE(segment_->Read(foreground->slot()).pause);
  EXPECT_TRUE(background->Paused());
  EXPECT_FALSE(background->TryAcquire());
  EXPECT_EQ(background->in_flight(), 0);
  EXPECT_FALSE(foreground->Paused());  // the foreground itself is never paused
  EXPECT_TRUE(foreground->TryAcquire());
  foreground->LowerPause();
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
  EXPECT_FALSE(background->Paused());
  EXPECT_TRUE(background->TryAcquire());
  EXPECT_FALSE(background->TryAcquire());  // its limit is 1
}

TEST_F(LaunchGateTest, RaisePauseIsAFlagPerForegroundWorker) {
  auto first = NewGate(Role::kForeground, 2);
  auto second = NewGate(Role::kForeground, 2);
  auto background = NewGate(Role::kBackground, 1);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_NE(background, nullptr);
  first->RaisePause();
  first->RaisePause();
  EXPECT_EQ(segment_->ForegroundHold(), 1u);  // raised twice, counted once
  second->RaisePause();
  EXPECT_EQ(segment_->ForegroundHold(), 2u);
  first->LowerPause();
  EXPECT_EQ(segment_->ForegroundHold(), 1u);
  EXPECT_TRUE(background->Paused());  // the second foreground still holds it
  first->LowerPause();
  EXPECT_EQ(segment_->ForegroundHold(), 1u);
  second->LowerPause();
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
  EXPECT_FALSE(background->Paused());
  // A background worker cannot raise the foreground hold.
  background->RaisePause();
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
}

TEST_F(LaunchGateTest, DestroyingAForegroundGateLowersItsPause) {
  auto foreground = NewGate(Role::kForeground, 2);
  ASSERT_NE(foreground, nullptr);
  foreground->RaisePause();
  EXPECT_EQ(segment_->ForegroundHold(), 1u);
  foreground.reset();
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
}

TEST_F(LaunchGateTest, BackgroundStopPausesEveryBackgroundSlotButNoForeground) {
  auto foreground = NewGate(Role::kForeground, 2);
  auto first = NewGate(Role::kBackground, 1);
  auto second = NewGate(Role::kBackground, 1);
  ASSERT_NE(foreground, nullptr);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  segment_->SetBackgroundStop(true);
  EXPECT_TRUE(first->Paused());
  EXPECT_TRUE(second->Paused());
  EXPECT_FALSE(first->TryAcquire());
  EXPECT_FALSE(second->TryAcquire());
  EXPECT_FALSE(foreground->Paused());
  EXPECT_TRUE(foreground->TryAcquire());
  segment_->SetBackgroundStop(false);
  EXPECT_TRUE(first->TryAcquire());
  EXPECT_TRUE(second->TryAcquire());
}

TEST_F(LaunchGateTest, AgentPausesOneBackgroundSlot) {
  auto foreground = NewGate(Role::kForeground, 2);
  auto first = NewGate(Role::kBackground, 1);
  auto second = NewGate(Role::kBackground, 1);
  ASSERT_NE(foreground, nullptr);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  segment_->SetPaused(first->slot(), true);
  EXPECT_TRUE(segment_->Read(first->slot()).pause);
  EXPECT_TRUE(first->Paused());
  EXPECT_FALSE(first->TryAcquire());
  EXPECT_FALSE(second->Paused());
  EXPECT_TRUE(second->TryAcquire());
  // SetPaused does not apply to foreground slots (their pause is their own hold bit).
  segment_->SetPaused(foreground->slot(), true);
  EXPECT_FALSE(segment_->Read(foreground->slot()).pause);
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
  segment_->SetPaused(first->slot(), false);
  EXPECT_TRUE(first->TryAcquire());
}

TEST_F(LaunchGateTest, SensitiveBitsFollowTheAgent) {
  auto gate = NewGate(Role::kForeground, 2);
  auto other = NewGate(Role::kForeground, 2);
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(other, nullptr);
  for (std::uint32_t group : {0u, 63u, 64u, 4095u}) {
    EXPECT_FALSE(gate->IsSensitive(group)) << group;
    segment_->SetSensitive(gate->slot(), group, true);
    EXPECT_TRUE(gate->IsSensitive(group)) << group;
  }
  // Neighbours of set bits (word edges) stay clear, and so does the other slot.
  EXPECT_FALSE(gate->IsSensitive(1));
  EXPECT_FALSE(gate->IsSensitive(62));
  EXPECT_FALSE(gate->IsSensitive(65));
  EXPECT_FALSE(gate->IsSensitive(4094));
  EXPECT_FALSE(other->IsSensitive(63));
  segment_->SetSensitive(gate->slot(), 63, false);
  EXPECT_FALSE(gate->IsSensitive(63));
  EXPECT_TRUE(gate->IsSensitive(64));
  // Out of range: ignored by the agent's setter, never sensitive for the worker.
  segment_->SetSensitive(gate->slot(), kMaxOpGroups, true);
  EXPECT_FALSE(gate->IsSensitive(kMaxOpGroups));
  EXPECT_FALSE(gate->IsSensitive(0xffffffffu));
}

TEST_F(LaunchGateTest, AcquireTimesOutAndAccountsTheWait) {
  auto gate = NewGate(Role::kForeground, 1);
  ASSERT_NE(gate, nullptr);
  ASSERT_TRUE(gate->TryAcquire());
  EXPECT_THAT(gate->Acquire(milliseconds(2)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr(segment_->path() + " slot " + std::to_string(gate->slot()))));
  const SlotSnapshot slot = segment_->Read(gate->slot());
  // The loop ends only once the 2 ms budget is spent; nothing paused a foreground.
  EXPECT_GE(slot.wait_ns_total, 2'000'000u);
  EXPECT_EQ(slot.paused_ns_total, 0u);
  EXPECT_EQ(slot.acquired_total, 1u);
  EXPECT_EQ(gate->in_flight(), 1);
}

TEST_F(LaunchGateTest, PausedBackgroundWaitIsAllPaused) {
  auto foreground = NewGate(Role::kForeground, 2);
  auto background = NewGate(Role::kBackground, 1);
  ASSERT_NE(foreground, nullptr);
  ASSERT_NE(background, nullptr);
  foreground->RaisePause();
  EXPECT_THAT(background->Acquire(milliseconds(2)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("paused")));
  const SlotSnapshot slot = segment_->Read(background->slot());
  EXPECT_GE(slot.wait_ns_total, 2'000'000u);
  // Paused at every look, so every interval of the wait counts as paused.
  EXPECT_EQ(slot.paused_ns_total, slot.wait_ns_total);
  EXPECT_EQ(slot.acquired_total, 0u);
}

TEST_F(LaunchGateTest, AcquireWithoutTimeBudgetTriesOnce) {
  auto gate = NewGate(Role::kForeground, 1);
  ASSERT_NE(gate, nullptr);
  EXPECT_OK(gate->Acquire(std::chrono::nanoseconds(0)));
  EXPECT_THAT(gate->Acquire(std::chrono::nanoseconds(-5)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("in flight 1 of 1")));
}

TEST_F(LaunchGateTest, AcquireGetsTheCreditAnotherThreadReleases) {
  auto gate = NewGate(Role::kBackground, 1);
  ASSERT_NE(gate, nullptr);
  ASSERT_TRUE(gate->TryAcquire());
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(5));
    gate->Release();
  });
  // Bounded: the release comes after ~5 ms; 10 s only guards against a hang.
  EXPECT_OK(gate->Acquire(std::chrono::seconds(10)));
  releaser.join();
  EXPECT_EQ(gate->in_flight(), 1);
  EXPECT_EQ(segment_->Read(gate->slot()).acquired_total, 2u);
  EXPECT_EQ(segment_->Read(gate->slot()).paused_ns_total, 0u);
}

TEST_F(LaunchGateTest, HeartbeatsCrossTheSegment) {
  auto gate = NewGate(Role::kBackground, 1);
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(segment_->Read(gate->slot()).heartbeat_ns, 0);
  gate->Heartbeat(123'456'789);
  EXPECT_EQ(segment_->Read(gate->slot()).heartbeat_ns, 123'456'789);
  EXPECT_EQ(gate->AgentHeartbeat(), 0);
  segment_->Beat(987'654'321);
  EXPECT_EQ(gate->AgentHeartbeat(), 987'654'321);
}

TEST_F(LaunchGateTest, AgentGoneForegroundRunsUnpacedWithoutCounting) {
  auto gate = NewGate(Role::kForeground, 1);
  ASSERT_NE(gate, nullptr);
  ASSERT_TRUE(gate->TryAcquire());  // counted: in_flight 1
  gate->SetAgentAlive(false);
  EXPECT_FALSE(gate->agent_alive());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(gate->TryAcquire());  // past the limit of 1
  EXPECT_FALSE(gate->Paused());
  EXPECT_OK(gate->Acquire(std::chrono::nanoseconds(0)));
  EXPECT_EQ(gate->in_flight(), 1);
  EXPECT_EQ(segment_->Read(gate->slot()).acquired_total, 1u);
  // 7 credits out, 1 counted: releasing all 7 returns the count to 0 and never below.
  for (int i = 0; i < 7; ++i) gate->Release();
  EXPECT_EQ(gate->in_flight(), 0);
  gate->SetAgentAlive(true);
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_FALSE(gate->TryAcquire());  // paced again
}

TEST_F(LaunchGateTest, AgentGoneBackgroundStaysPaused) {
  auto gate = NewGate(Role::kBackground, 4);
  ASSERT_NE(gate, nullptr);
  gate->SetAgentAlive(false);
  EXPECT_TRUE(gate->Paused());
  EXPECT_FALSE(gate->TryAcquire());
  EXPECT_THAT(gate->Acquire(milliseconds(1)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("agent gone")));
  EXPECT_EQ(gate->in_flight(), 0);
  gate->SetAgentAlive(true);
  EXPECT_FALSE(gate->Paused());
  EXPECT_TRUE(gate->TryAcquire());
}

TEST_F(LaunchGateTest, RevokedGateFollowsAgentGoneRulesAndLeavesTheNewOwnerAlone) {
  auto old_foreground = NewGate(Role::kForeground, 1);
  auto old_background = NewGate(Role::kBackground, 1);
  ASSERT_NE(old_foreground, nullptr);
  ASSERT_NE(old_background, nullptr);
  ASSERT_TRUE(old_foreground->TryAcquire());
  ASSERT_TRUE(old_background->TryAcquire());
  segment_->Reclaim(old_foreground->slot());
  segment_->Reclaim(old_background->slot());
  EXPECT_TRUE(old_foreground->Revoked());
  EXPECT_TRUE(old_background->Revoked());
  EXPECT_TRUE(old_foreground->TryAcquire());  // unpaced
  EXPECT_FALSE(old_background->TryAcquire());
  EXPECT_TRUE(old_background->Paused());
  // The slots go to new workers; the old gates must not disturb them.
  auto new_foreground = NewGate(Role::kForeground, 2);
  auto new_background = NewGate(Role::kBackground, 2);
  ASSERT_NE(new_foreground, nullptr);
  ASSERT_NE(new_background, nullptr);
  ASSERT_EQ(new_foreground->slot(), old_foreground->slot());
  ASSERT_EQ(new_background->slot(), old_background->slot());
  ASSERT_TRUE(new_foreground->TryAcquire());
  ASSERT_TRUE(new_background->TryAcquire());
  old_foreground->Release();
  old_background->Release();
  old_foreground->RaisePause();
  old_foreground->Heartbeat(42);
  EXPECT_EQ(new_foreground->in_flight(), 1);
  EXPECT_EQ(new_background->in_flight(), 1);
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
  EXPECT_EQ(segment_->Read(new_foreground->slot()).heartbeat_ns, 0);
  new_foreground->RaisePause();
  old_foreground.reset();  // its destructor must not lower the new owner's pause
  EXPECT_EQ(segment_->ForegroundHold(), 1u);
}

}  // namespace
}  // namespace wavepool::agent
