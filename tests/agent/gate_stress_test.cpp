// The gate under contention: threads and forked processes acquiring and releasing at once, a
// foreground raising and lowering its pause while background workers run, and workers killed
// while they hold credits and a raised pause. Every wait is bounded; no timing is asserted.
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/gate_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gate_segment.h"

namespace wavepool::agent {
namespace {

class GateStressTest : public GateTest {};

using std::chrono::seconds;
using ::wavepool::testing::StatusIs;

std::int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

constexpr std::int64_t kSecondNs = 1'000'000'000;

// --- Threads ----------------------------------------------------------------------------------

TEST_F(GateStressTest, EightThreadsNeverExceedTheLimitAndTheCountsBalance) {
  constexpr int kThreads = 8;
  constexpr int kAttemptsPerThread = 20'000;
  constexpr std::int32_t kLimit = 3;
  auto gate = NewGate(Role::kForeground, kLimit);
  ASSERT_NE(gate, nullptr);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> acquired{0};
  std::int32_t sampled_min = 0;
  std::int32_t sampled_max = 0;
  std::thread checker([&] {
    while (!done.load()) {
      const std::int32_t now = gate->in_flight();
      sampled_min = std::min(sampled_min, now);
      sampled_max = std::max(sampled_max, now);
    }
  });
  std::atomic<std::int32_t> seen_max{0};  // by the workers, right after their acquires
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&] {
      std::uint64_t mine = 0;
      for (int i = 0; i < kAttemptsPerThread; ++i) {
        // Up to two credits at once, as a worker pipelining two launch groups.
        int held = 0;
        for (int k = 0; k < 2; ++k) {
          if (!gate->TryAcquire()) break;
          ++held;
          std::int32_t now = gate->in_flight();
          std::int32_t max = seen_max.load();
          while (now > max && !seen_max.compare_exchange_weak(max, now)) {
          }
        }
        mine += static_cast<std::uint64_t>(held);
        for (; held > 0; --held) gate->Release();
      }
      acquired.fetch_add(mine);
    });
  }
  for (auto& worker : workers) worker.join();
  done.store(true);
  checker.join();
  EXPECT_GE(sampled_min, 0);
  EXPECT_LE(sampled_max, kLimit);
  EXPECT_LE(seen_max.load(), kLimit);
  EXPECT_GT(acquired.load(), 0u);
  EXPECT_EQ(gate->in_flight(), 0);
  EXPECT_EQ(segment_->Read(gate->slot()).acquired_total, acquired.load());
}

// --- The pause handshake, shared by the thread and process versions ---------------------------

// Lives in memory shared by every participant (an anonymous shared mapping across fork).
struct Board {
  // Odd while a foreground has raised its pause, seen every background slot drained, and runs
  // its "sensitive group". A background worker holding a credit must never see it odd.
  std::atomic<std::uint64_t> window{0};
  std::atomic<std::uint64_t> violations{0};
  std::atomic<std::uint64_t> background_acquired{0};  // by all background workers
  std::atomic<std::uint64_t> acquired[4] = {};        // per background worker
  std::atomic<std::uint64_t> rounds{0};
  std::atomic<bool> foreground_done{false};
};

enum ExitCode : int {
  kOk = 0,
  kAttachFailed = 10,
  kTimedOut = 11,
  kAcquireFailed = 12,
  kBackgroundSawOpenWindow = 13,
  kLimitExceeded = 14,
};

// A foreground: up to `rounds` times within kRoundsBudgetNs (a loaded machine gets fewer
// rounds, not a failure), wait until a background took a credit since the last round (so that
// every raise races live background launches), take a credit, raise the pause, wait for the
// background slots to drain (the agent's view, GateSegment::Read), open the window, close it,
// lower the pause, release. Every wait is bounded by kHangNs.
constexpr std::int64_t kRoundsBudgetNs = 1'500'000'000;
constexpr std::int64_t kHangNs = 20 * kSecondNs;

int RunForeground(LaunchGate& gate, const GateSegment& segment,
                  const std::vector<std::uint32_t>& background_slots, int rounds, Board& board) {
  const std::int64_t start = NowNs();
  const std::int64_t deadline = start + kHangNs;
  int code = kOk;
  for (int round = 0; round < rounds && code == kOk; ++round) {
    const std::uint64_t seen = board.background_acquired.load();
    while (board.background_acquired.load() == seen && code == kOk) {
      if (NowNs() > deadline) code = kTimedOut;
      sched_yield();
    }
    if (code != kOk) break;
    if (round > 0 && NowNs() > start + kRoundsBudgetNs) break;
    if (!gate.Acquire(seconds(5)).ok()) {
      code = kAcquireFailed;
      break;
    }
    gate.RaisePause();
    for (std::uint32_t slot : background_slots) {
      while (segment.Read(slot).in_flight != 0 && code == kOk) {
        if (NowNs() > deadline) code = kTimedOut;
        sched_yield();
      }
    }
    board.window.fetch_add(1);  // open
    for (int i = 0; i < 100; ++i) {
      if (gate.in_flight() > gate.credit_limit()) code = kLimitExceeded;
    }
    board.window.fetch_add(1);  // closed
    gate.LowerPause();
    gate.Release();
    board.rounds.fetch_add(1);
  }
  board.foreground_done.store(true);
  return code;
}

// A background worker (number `index`): until the foreground is done, take a credit whenever it
// can, look at the window 20 times while holding it (its "launch group"), release. It goes on
// after a violation (counted), so that the foreground is never left waiting for it.
int RunBackground(LaunchGate& gate, int index, Board& board) {
  const std::int64_t deadline = NowNs() + kHangNs;
  int code = kOk;
  while (!board.foreground_done.load()) {
    if (NowNs() > deadline) return kTimedOut;
    if (!gate.TryAcquire()) {
      sched_yield();
      continue;
    }
    board.acquired[index].fetch_add(1);
    board.background_acquired.fetch_add(1);
    if (gate.in_flight() > gate.credit_limit()) code = kLimitExceeded;
    for (int look = 0; look < 20; ++look) {
      if ((board.window.load() & 1) != 0) {
        board.violations.fetch_add(1);
        code = kBackgroundSawOpenWindow;
        break;
      }
    }
    gate.Release();
  }
  return code;
}

TEST_F(GateStressTest, BackgroundThreadsNeverRunInsideARaisedPause) {
  constexpr int kRounds = 2'000;
  auto foreground = NewGate(Role::kForeground, 2);
  auto first = NewGate(Role::kBackground, 1);
  auto second = NewGate(Role::kBackground, 1);
  ASSERT_NE(foreground, nullptr);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  Board board;
  int codes[3] = {-1, -1, -1};
  const std::vector<std::uint32_t> slots = {first->slot(), second->slot()};
  std::thread fg([&] { codes[0] = RunForeground(*foreground, *segment_, slots, kRounds, board); });
  std::thread bg1([&] { codes[1] = RunBackground(*first, 0, board); });
  std::thread bg2([&] { codes[2] = RunBackground(*second, 1, board); });
  fg.join();
  bg1.join();
  bg2.join();
  EXPECT_THAT(codes, ::testing::Each(kOk));
  EXPECT_EQ(board.violations.load(), 0u);
  EXPECT_GE(board.rounds.load(), 1u);
  EXPECT_LE(board.rounds.load(), std::uint64_t{kRounds});
  EXPECT_GE(board.background_acquired.load(), board.rounds.load());
  EXPECT_EQ(segment_->Read(first->slot()).acquired_total, board.acquired[0].load());
  EXPECT_EQ(segment_->Read(second->slot()).acquired_total, board.acquired[1].load());
  EXPECT_EQ(segment_->Read(foreground->slot()).acquired_total, board.rounds.load());
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
  EXPECT_EQ(foreground->in_flight(), 0);
  EXPECT_EQ(first->in_flight(), 0);
  EXPECT_EQ(second->in_flight(), 0);
}

// --- Processes --------------------------------------------------------------------------------

// Forks a child that runs `body` and exits with its code. The parent is single-threaded when it
// forks, so the child may allocate (Attach does). alarm() bounds a child that would hang.
pid_t Spawn(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(30);
    _exit(body());
  }
  return pid;
}

// Waits up to `timeout_ns` for `pid`; kills it past that. Returns the raw wait status, or -1.
int WaitBounded(pid_t pid, std::int64_t timeout_ns) {
  const std::int64_t deadline = NowNs() + timeout_ns;
  int status = 0;
  while (NowNs() < deadline) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

std::string DescribeStatus(int status) {
  if (status == -1) return "timed out";
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Memory shared with forked children.
class SharedBoard {
 public:
  SharedBoard() {
    void* address =
        mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (address != MAP_FAILED) board_ = new (address) Board;
  }
  ~SharedBoard() {
    if (board_ != nullptr) munmap(board_, sizeof(Board));
  }
  SharedBoard(const SharedBoard&) = delete;
  SharedBoard& operator=(const SharedBoard&) = delete;
  Board* get() const { return board_; }

 private:
  Board* board_ = nullptr;
};

int AttachAnd(const Registered& registered, Role role,
              const std::function<int(LaunchGate&)>& body) {
  absl::StatusOr<std::unique_ptr<LaunchGate>> gate = LaunchGate::Attach(registered, role);
  if (!gate.ok()) return kAttachFailed;
  return body(**gate);
}

TEST_F(GateStressTest, ProcessesShareGatesWithoutExceedingLimitsOrOverlappingPauses) {
  constexpr int kRounds = 2'000;
  constexpr int kPairs = 50'000;
  SharedBoard shared;
  ASSERT_NE(shared.get(), nullptr);
  Board& board = *shared.get();
  // GPU 0 (this fixture's gate): a foreground and two backgrounds. GPU 1: a foreground alone.
  ASSERT_OK_AND_ASSIGN(Registered fg, Register(*segment_, Role::kForeground, 2));
  ASSERT_OK_AND_ASSIGN(Registered bg1, Register(*segment_, Role::kBackground, 1));
  ASSERT_OK_AND_ASSIGN(Registered bg2, Register(*segment_, Role::kBackground, 1));
  ASSERT_OK_AND_ASSIGN(auto gpu1, GateSegment::Create(directory_, 1, 4, kTestEpoch));
  ASSERT_OK_AND_ASSIGN(Registered alone, Register(*gpu1, Role::kForeground, 2));
  const std::vector<std::uint32_t> background_slots = {bg1.slot, bg2.slot};
  const GateSegment& gpu0 = *segment_;

  std::vector<pid_t> children;
  children.push_back(Spawn([&] {
    return AttachAnd(fg, Role::kForeground, [&](LaunchGate& gate) {
      return RunForeground(gate, gpu0, background_slots, kRounds, board);
    });
  }));
  for (int index : {0, 1}) {
    const Registered& bg = index == 0 ? bg1 : bg2;
    children.push_back(Spawn([&] {
      return AttachAnd(bg, Role::kBackground,
                       [&](LaunchGate& gate) { return RunBackground(gate, index, board); });
    }));
  }
  children.push_back(Spawn([&] {
    return AttachAnd(alone, Role::kForeground, [&](LaunchGate& gate) {
      for (int done = 0; done < kPairs;) {
        if (!gate.TryAcquire()) continue;
        if (gate.in_flight() > gate.credit_limit()) return static_cast<int>(kLimitExceeded);
        gate.Release();
        ++done;
      }
      return static_cast<int>(kOk);
    });
  }));
  for (pid_t child : children) {
    ASSERT_GT(child, 0);
    const int status = WaitBounded(child, 60 * kSecondNs);
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == kOk)
        << "child " << child << ": " << DescribeStatus(status);
  }
  EXPECT_EQ(board.violations.load(), 0u);
  EXPECT_GE(board.rounds.load(), 1u);
  EXPECT_LE(board.rounds.load(), std::uint64_t{kRounds});
  EXPECT_GE(board.background_acquired.load(), board.rounds.load());
  EXPECT_EQ(segment_->Read(bg1.slot).acquired_total, board.acquired[0].load());
  EXPECT_EQ(segment_->Read(bg2.slot).acquired_total, board.acquired[1].load());
  EXPECT_EQ(segment_->Read(fg.slot).acquired_total, board.rounds.load());
  EXPECT_EQ(gpu1->Read(alone.slot).acquired_total, std::uint64_t{kPairs});
  for (std::uint32_t slot : {fg.slot, bg1.slot, bg2.slot}) {
    EXPECT_EQ(segment_->Read(slot).in_flight, 0) << slot;
  }
  EXPECT_EQ(gpu1->Read(alone.slot).in_flight, 0);
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
}

// Reads one byte from `fd` within `timeout_ms`; false on timeout or EOF.
bool ReadByte(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return false;
  char byte;
  return read(fd, &byte, 1) == 1;
}

TEST_F(GateStressTest, AKilledWorkersCreditsAndPauseAreReclaimed) {
  auto background = NewGate(Role::kBackground, 1);
  ASSERT_NE(background, nullptr);
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kForeground, 2));
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = Spawn([&] {
    return AttachAnd(registered, Role::kForeground, [&](LaunchGate& gate) {
      if (!gate.TryAcquire() || !gate.TryAcquire()) return static_cast<int>(kAcquireFailed);
      gate.RaisePause();
      const char byte = 'r';
      if (write(ready[1], &byte, 1) != 1) return 1;
      for (;;) pause();  // until SIGKILL (or the alarm)
    });
  });
  ASSERT_GT(child, 0);
  close(ready[1]);
  ASSERT_TRUE(ReadByte(ready[0], 20'000));
  close(ready[0]);
  EXPECT_EQ(segment_->Read(registered.slot).in_flight, 2);
  EXPECT_EQ(segment_->ForegroundHold(), 1u);
  EXPECT_TRUE(background->Paused());

  ASSERT_EQ(kill(child, SIGKILL), 0);
  const int status = WaitBounded(child, 20 * kSecondNs);
  ASSERT_TRUE(status != -1 && WIFSIGNALED(status)) << DescribeStatus(status);
  // A dead worker's credits and pause stay until the agent reclaims its slot.
  EXPECT_EQ(segment_->Read(registered.slot).in_flight, 2);
  EXPECT_TRUE(background->Paused());

  segment_->Reclaim(registered.slot);
  EXPECT_EQ(segment_->Read(registered.slot).in_flight, 0);
  EXPECT_EQ(segment_->Read(registered.slot).state, SlotState::kFree);
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
  EXPECT_FALSE(background->Paused());
  EXPECT_TRUE(background->TryAcquire());

  ASSERT_OK_AND_ASSIGN(Registered again, Register(*segment_, Role::kForeground, 2));
  EXPECT_EQ(again.slot, registered.slot);
  EXPECT_NE(again.gate_generation, registered.gate_generation);
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::HasSubstr("generation")));
  ASSERT_OK_AND_ASSIGN(auto gate, LaunchGate::Attach(again, Role::kForeground));
  EXPECT_EQ(gate->in_flight(), 0);
  EXPECT_TRUE(gate->TryAcquire());
}

// Kills a foreground at arbitrary points of its acquire/raise/lower/release loop: whatever
// instruction it died on, Reclaim leaves no credit and no hold behind.
TEST_F(GateStressTest, KillingAWorkerAnywhereLeavesNothingAfterReclaim) {
  auto background = NewGate(Role::kBackground, 1);
  ASSERT_NE(background, nullptr);
  for (int round = 0; round < 5; ++round) {
    ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kForeground, 2));
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t child = Spawn([&] {
      return AttachAnd(registered, Role::kForeground, [&](LaunchGate& gate) {
        const char byte = 'r';
        if (write(ready[1], &byte, 1) != 1) return 1;
        for (;;) {
          if (!gate.TryAcquire()) continue;
          gate.RaisePause();
          gate.LowerPause();
          gate.Release();
        }
      });
    });
    ASSERT_GT(child, 0);
    close(ready[1]);
    ASSERT_TRUE(ReadByte(ready[0], 20'000));
    close(ready[0]);
    // Let it run (bounded) before the kill lands somewhere in its loop.
    const std::int64_t deadline = NowNs() + 20 * kSecondNs;
    while (segment_->Read(registered.slot).acquired_total == 0 && NowNs() < deadline) {
      sched_yield();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(300 * (round + 1)));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    const int status = WaitBounded(child, 20 * kSecondNs);
    ASSERT_TRUE(status != -1 && WIFSIGNALED(status)) << DescribeStatus(status);
    EXPECT_GT(segment_->Read(registered.slot).acquired_total, 0u) << round;
    segment_->Reclaim(registered.slot);
    EXPECT_EQ(segment_->Read(registered.slot).in_flight, 0) << round;
    EXPECT_EQ(segment_->ForegroundHold(), 0u) << round;
    EXPECT_FALSE(background->Paused()) << round;
  }
}

}  // namespace
}  // namespace wavepool::agent
