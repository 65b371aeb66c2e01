// The cheat detector alone: gate readings every 100 ms and utilisation samples every second, as
// the agent's loops feed it, with no NVML and no agent.
#include "wavepool/agent/cheat_detector.h"

#include <chrono>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr std::int32_t kPid = 4242;
constexpr std::chrono::nanoseconds kNano{1};
constexpr std::chrono::nanoseconds kMillis = std::chrono::milliseconds(1);
constexpr std::chrono::nanoseconds kSecond = std::chrono::seconds(1);

// The time `since` after the clock's epoch.
constexpr MonotonicTime At(std::chrono::nanoseconds since) { return MonotonicTime(since); }

CheatDetectorOptions Options() {
  CheatDetectorOptions options;
  options.sm_threshold = 0.05;
  options.flag_after = 3;
  options.quiet_period = std::chrono::seconds(5);
  options.drain = std::chrono::milliseconds(200);
  return options;
}

// What the gate does over one stretch of time.
struct Gate {
  bool paused = false;
  std::int32_t credit_limit = 4;
  std::int32_t in_flight = 0;
  std::uint64_t acquisitions_per_reading = 0;  // credits granted every 100 ms
};

// Drives one process through [from, to): gate readings every 100 ms, a utilisation sample on
// every whole second. Returns the transitions, one per sample.
class Driver {
 public:
  explicit Driver(CheatDetector* detector, Role role = Role::kBackground)
      : detector_(detector), role_(role) {}

  std::vector<CheatTransition> Run(MonotonicTime until, const Gate& gate, double utilization) {
    std::vector<CheatTransition> transitions;
    for (; now_ < until; now_ += 100 * kMillis) {
      acquired_ += gate.acquisitions_per_reading;
      detector_->ObserveGate(kPid,
                             {now_, gate.paused, gate.credit_limit, gate.in_flight, acquired_});
      if (now_.time_since_epoch() % kSecond == std::chrono::nanoseconds::zero()) {
        transitions.push_back(detector_->ObserveUtilization(now_, kPid, role_, utilization));
      }
    }
    return transitions;
  }
  MonotonicTime now() const { return now_; }

 private:
  CheatDetector* detector_;
  Role role_;
  MonotonicTime now_;
  std::uint64_t acquired_ = 0;
};

int Count(const std::vector<CheatTransition>& transitions, CheatTransition kind) {
  int n = 0;
  for (CheatTransition t : transitions) n += t == kind ? 1 : 0;
  return n;
}

TEST(CheatDetector, HonestBackgroundIsNeverFlagged) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  // Busy while the gate grants credits, idle while it holds the pause.
  const Gate granting{false, 4, 2, 10};
  Gate pausing;
  pausing.paused = true;
  for (int round = 0; round < 5; ++round) {
    EXPECT_EQ(
        Count(driver.Run(driver.now() + 4 * kSecond, granting, 0.9), CheatTransition::kFlagged), 0);
    EXPECT_EQ(
        Count(driver.Run(driver.now() + 4 * kSecond, pausing, 0.0), CheatTransition::kFlagged), 0);
  }
  EXPECT_FALSE(detector.Cheating(kPid));
  ASSERT_TRUE(detector.Verdict(kPid).has_value());
  EXPECT_EQ(detector.Verdict(kPid)->detections, 0);
}

TEST(CheatDetector, WorkLaunchedJustBeforeAPauseIsNotSuspicious) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  driver.Run(At(3 * kSecond + 900 * kMillis), Gate{false, 4, 1, 5}, 0.8);
  // The pause begins 100 ms before the sample at 4 s and lasts: the interval (3 s, 4 s] was
  // partly granted, and the next one, (4 s, 5 s], starts within the drain of the pause's start.
  Gate pausing;
  pausing.paused = true;
  const std::vector<CheatTransition> during = driver.Run(At(5 * kSecond) + kNano, pausing, 0.8);
  EXPECT_THAT(during, ::testing::Each(CheatTransition::kNone));
  EXPECT_FALSE(detector.Cheating(kPid));
}

TEST(CheatDetector, LaunchesInGapsOfAHoldBetweenReadingsAreNotFlagged) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  // Every reading sees the hold raised, but the worker keeps acquiring credits: the hold had
  // gaps between the readings and the gate granted them.
  Gate held{true, 4, 1, 3};
  EXPECT_EQ(Count(driver.Run(At(20 * kSecond), held, 0.4), CheatTransition::kFlagged), 0);
  EXPECT_FALSE(detector.Cheating(kPid));
}

TEST(CheatDetector, AdversarialLaunchesWhilePausedAreFlaggedAfterConsecutiveSamples) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  Gate pausing;
  pausing.paused = true;
  // Samples at 0 s (starts the interval), 1 s (no gate reading from before its interval's drain:
  // unknown), then 2, 3 and 4 s: the third suspicious one flags.
  std::vector<CheatTransition> t = driver.Run(At(4 * kSecond), pausing, 0.6);
  EXPECT_THAT(t, ::testing::Each(CheatTransition::kNone));
  EXPECT_FALSE(detector.Cheating(kPid));
  t = driver.Run(At(4 * kSecond) + kNano, pausing, 0.6);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], CheatTransition::kFlagged);
  EXPECT_TRUE(detector.Cheating(kPid));
  const std::optional<CheatVerdict> verdict = detector.Verdict(kPid);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, CheatKind::kWhilePaused);
  EXPECT_THAT(verdict->reason, HasSubstr("held it paused"));
  EXPECT_THAT(verdict->reason, HasSubstr("0.60"));
  EXPECT_EQ(verdict->detections, 1);
  // Staying flagged is not a new detection.
  EXPECT_EQ(Count(driver.Run(At(10 * kSecond), pausing, 0.6), CheatTransition::kFlagged), 0);
  EXPECT_EQ(detector.Verdict(kPid)->detections, 1);
}

TEST(CheatDetector, AdversarialUseWithoutCreditsIsFlagged) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  // Not paused, but the gate grants nothing and nothing is in flight: all its work went around
  // the gate.
  const std::vector<CheatTransition> t = driver.Run(At(6 * kSecond), Gate{false, 4, 0, 0}, 0.7);
  EXPECT_EQ(Count(t, CheatTransition::kFlagged), 1);
  ASSERT_TRUE(detector.Verdict(kPid).has_value());
  EXPECT_EQ(detector.Verdict(kPid)->kind, CheatKind::kWithoutCredits);
  EXPECT_THAT(detector.Verdict(kPid)->reason, HasSubstr("no launch credit"));
}

TEST(CheatDetector, ACreditLimitOfZeroWithStaleInFlightCountsAsNoCredit) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  // A worker that left in_flight at 3 in its own segment cannot claim credits the agent cut to 0.
  const std::vector<CheatTransition> t = driver.Run(At(6 * kSecond), Gate{false, 0, 3, 0}, 0.7);
  EXPECT_EQ(Count(t, CheatTransition::kFlagged), 1);
}

TEST(CheatDetector, IntermittentSuspicionDoesNotFlag) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  Gate pausing;
  pausing.paused = true;
  for (int round = 0; round < 6; ++round) {
    driver.Run(driver.now() + 2 * kSecond, pausing, 0.6);               // two suspicious samples
    driver.Run(driver.now() + 1 * kSecond, Gate{false, 4, 1, 5}, 0.6);  // one granted
  }
  EXPECT_FALSE(detector.Cheating(kPid));
}

TEST(CheatDetector, AFlagClearsAfterAQuietPeriod) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  Gate pausing;
  pausing.paused = true;
  driver.Run(At(6 * kSecond), pausing, 0.6);
  ASSERT_TRUE(detector.Cheating(kPid));
  const MonotonicTime last_suspicious = At(5 * kSecond);
  // Quiet (idle while paused) for less than the quiet period: still flagged.
  std::vector<CheatTransition> t = driver.Run(last_suspicious + 5 * kSecond, pausing, 0.0);
  EXPECT_EQ(Count(t, CheatTransition::kCleared), 0);
  EXPECT_TRUE(detector.Cheating(kPid));
  t = driver.Run(last_suspicious + 5 * kSecond + kNano, pausing, 0.0);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], CheatTransition::kCleared);
  EXPECT_FALSE(detector.Cheating(kPid));
  // Cheating again is a second detection.
  driver.Run(driver.now() + 5 * kSecond, pausing, 0.6);
  EXPECT_TRUE(detector.Cheating(kPid));
  EXPECT_EQ(detector.Verdict(kPid)->detections, 2);
}

TEST(CheatDetector, AForegroundIsNeverFlagged) {
  CheatDetector detector(Options());
  Driver driver(&detector, Role::kForeground);
  Gate pausing;
  pausing.paused = true;
  const std::vector<CheatTransition> t = driver.Run(At(20 * kSecond), pausing, 1.0);
  EXPECT_EQ(Count(t, CheatTransition::kFlagged), 0);
  EXPECT_FALSE(detector.Cheating(kPid));
  EXPECT_FALSE(detector.Verdict(kPid).has_value());
}

TEST(CheatDetector, WithoutGateReadingsNothingIsJudged) {
  CheatDetector detector(Options());
  for (MonotonicTime t = At(kSecond); t <= At(10 * kSecond); t += kSecond) {
    EXPECT_EQ(detector.ObserveUtilization(t, kPid, Role::kBackground, 1.0), CheatTransition::kNone);
  }
  EXPECT_FALSE(detector.Cheating(kPid));
}

TEST(CheatDetector, ForgetDropsAFlaggedProcess) {
  CheatDetector detector(Options());
  Driver driver(&detector);
  Gate pausing;
  pausing.paused = true;
  driver.Run(At(6 * kSecond), pausing, 0.6);
  ASSERT_TRUE(detector.Cheating(kPid));
  detector.Forget(kPid);
  EXPECT_FALSE(detector.Cheating(kPid));
  EXPECT_FALSE(detector.Verdict(kPid).has_value());
}

TEST(CheatDetector, ValidateNamesTheBadOption) {
  CheatDetectorOptions options = Options();
  options.flag_after = 0;
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("flag_after")));
  options = Options();
  options.sm_threshold = 1.5;
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sm_threshold")));
  options = Options();
  options.quiet_period = std::chrono::seconds(0);
  EXPECT_THAT(Validate(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("quiet_period")));
  EXPECT_TRUE(Validate(Options()).ok());
}

}  // namespace
}  // namespace wavepool::agent
