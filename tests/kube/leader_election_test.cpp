#include "wavepool/kube/leader_election.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

#ifdef WAVEPOOL_TEST_APISERVER
#include "tests/kube/partitionable_transport.h"
#include "tests/support/apiserver/test_server.h"
#include "wavepool/kube/http_transport.h"
#endif

namespace wavepool::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

LeaderElectionConfig ValidConfig() {
  LeaderElectionConfig config;
  config.lease_name = "wavepool-controller";
  config.identity = "pod-a";
  config.callbacks.on_started_leading = [](const StopSignal&) {};
  config.callbacks.on_stopped_leading = [] {};
  return config;
}

TEST(LeaderElectionConfig, DefaultsAreClientGosAndValid) {
  const LeaderElectionConfig config = ValidConfig();
  EXPECT_EQ(config.lease_duration, seconds(15));
  EXPECT_EQ(config.renew_deadline, seconds(10));
  EXPECT_EQ(config.retry_period, seconds(2));
  EXPECT_THAT(ValidateLeaderElectionConfig(config), IsOk());
}

TEST(LeaderElectionConfig, RejectsDurationsOutOfOrder) {
  LeaderElectionConfig config = ValidConfig();
  config.lease_duration = seconds(10);  // == renew deadline
  EXPECT_THAT(
      ValidateLeaderElectionConfig(config),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("lease_duration (10s) must be greater than renew_deadline (10s)")));
  config = ValidConfig();
  // 1.2 * 2 s = 2.4 s: a renew deadline of 2.4 s leaves no room for a second try.
  config.renew_deadline = milliseconds(2400);
  EXPECT_THAT(ValidateLeaderElectionConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("retry_period * 1.2")));
  config.renew_deadline = milliseconds(2500);
  EXPECT_THAT(ValidateLeaderElectionConfig(config), IsOk());
  config.retry_period = seconds(0);
  EXPECT_THAT(ValidateLeaderElectionConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("retry_period")));
}

TEST(LeaderElectionConfig, RejectsMissingNamesAndCallbacks) {
  LeaderElectionConfig config = ValidConfig();
  config.identity.clear();
  EXPECT_THAT(ValidateLeaderElectionConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("identity")));
  config = ValidConfig();
  config.lease_name.clear();
  EXPECT_THAT(ValidateLeaderElectionConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lease_name")));
  config = ValidConfig();
  config.callbacks.on_stopped_leading = nullptr;
  EXPECT_THAT(ValidateLeaderElectionConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("on_stopped_leading")));
}

TEST(FormatMicroTime, IsRfc3339WithMicroseconds) {
  // 2026-11-22T20:51:41Z is 1795380701 s after the epoch: 2026-01-01 is 1767225600, plus
  // 325 days (304 before November, 21 in it) * 86400 = 28080000, plus 20:51:41 = 75101.
  const std::chrono::system_clock::time_point time(std::chrono::microseconds(1795380701123456));
  EXPECT_EQ(FormatMicroTime(time), "2026-11-22T20:51:41.123456Z");
  EXPECT_EQ(FormatMicroTime(std::chrono::system_clock::time_point(seconds(1))),
            "1970-01-01T00:00:01.000000Z");
}

#ifdef WAVEPOOL_TEST_APISERVER

// A simulated clock that also knows when every thread waiting on it has caught up: Settle(n)
// returns once `n` threads wait with deadlines still ahead, i.e. every wait that was due has
// ended and its thread has done its work (its requests) and waits again. Stepping with it
// makes each elector act at the simulated instant it meant to.
class SteppedClock final : public Clock {
 public:
  MonotonicTime Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  WallTime WallNow() const override {
    return WallTime(seconds(1777629600)) +
           std::chrono::duration_cast<WallTime::duration>(Now().time_since_epoch());
  }
  void SleepFor(std::chrono::nanoseconds d) override {
    absl::Mutex mu;
    absl::MutexLock lock(&mu);
    const bool never = false;
    WaitUntil(mu, Now() + d, absl::Condition(&never));
  }
  bool WaitUntil(absl::Mutex& mu, MonotonicTime deadline, const absl::Condition& done) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const int id = Register(deadline);
    bool result = false;
    for (;;) {
      if (done.Eval()) {
        result = true;
        break;
      }
      if (Now() >= deadline) break;
      mu.AwaitWithTimeout(done, absl::Milliseconds(1));
    }
    Unregister(id);
    return result;
  }
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  void Settle(int n) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        int ahead = 0;
        for (const auto& [id, deadline] : waiters_) ahead += deadline > now_ ? 1 : 0;
        if (ahead >= n) return;
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
  }

 private:
  int Register(MonotonicTime deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    waiters_[next_id_] = deadline;
    return next_id_++;
  }
  void Unregister(int id) {
    std::lock_guard<std::mutex> lock(mu_);
    waiters_.erase(id);
  }
  mutable std::mutex mu_;
  MonotonicTime now_;
  std::map<int, MonotonicTime> waiters_;
  int next_id_ = 0;
};

using ::wavepool::kube::testing::PartitionableTransport;

struct Candidate {
  std::unique_ptr<Client> client;
  PartitionableTransport* transport = nullptr;
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::mutex mu;
  std::vector<std::string> new_leaders;  // guarded by mu

  std::vector<std::string> NewLeaders() {
    std::lock_guard<std::mutex> lock(mu);
    return new_leaders;
  }
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, ::wavepool::testing::apiserver::TestApiServer::Start({}));
  }

  std::unique_ptr<Candidate> MakeCandidate(const std::string& identity) {
    auto candidate = std::make_unique<Candidate>();
    ClientConfig config;
    config.server = server_->url();
    auto http = NewHttpTransport(config);
    EXPECT_THAT(http, IsOk());
    auto transport = std::make_unique<PartitionableTransport>(std::move(*http));
    candidate->transport = transport.get();
    candidate->client = std::make_unique<Client>(config, std::move(transport));
    LeaderElectionConfig election;
    election.lease_name = "wavepool-controller";
    election.identity = identity;
    election.clock = &clock_;
    election.log = [](std::string_view line) {
      if (std::getenv("WAVEPOOL_TEST_VERBOSE")) std::cerr << line << "\n";
    };
    Candidate* raw = candidate.get();
    election.callbacks.on_started_leading = [raw](const StopSignal& stop) {
      ++raw->started;
      stop.Wait();
    };
    election.callbacks.on_stopped_leading = [raw] { ++raw->stopped; };
    election.callbacks.on_new_leader = [raw](const std::string& leader) {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->new_leaders.push_back(leader);
    };
    auto elector = LeaderElector::Create(*candidate->client, std::move(election));
    EXPECT_THAT(elector, IsOk());
    candidate->elector = std::move(*elector);
    return candidate;
  }

  nlohmann::json Lease() {
    auto lease =
        server_->store().Get(*server_->store().FindResource("coordination.k8s.io", "v1", "leases"),
                             "default", "wavepool-controller");
    EXPECT_THAT(lease, IsOk());
    return lease.ok() ? *lease : nlohmann::json();
  }

  SteppedClock clock_;
  std::unique_ptr<::wavepool::testing::apiserver::TestApiServer> server_;
};

TEST_F(LeaderElectionTest, OneLeadsTheOtherTakesOverOnlyAfterTheLeaseExpires) {
  auto a = MakeCandidate("pod-a");
  auto b = MakeCandidate("pod-b");
  a->elector->Start();
  clock_.Settle(1);
  ASSERT_TRUE(a->elector->IsLeader());
  b->elector->Start();
  clock_.Settle(2);
  EXPECT_FALSE(b->elector->IsLeader());
  EXPECT_EQ(b->elector->GetLeader(), "pod-a");
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "pod-a");
  EXPECT_THAT(Lease()["spec"]["renewTime"].get<std::string>(),
              MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z"));

  // Twenty simulated seconds of renewals: the leader keeps the lease.
  const auto step = milliseconds(100);
  for (int i = 0; i < 200; ++i) {
    clock_.Advance(step);
    clock_.Settle(2);
    ASSERT_TRUE(a->elector->IsLeader());
    ASSERT_FALSE(b->elector->IsLeader());
  }

  // Cut pod-a off. It must stop acting before pod-b may act: never both at one instant.
  a->transport->set_partitioned(true);
  constexpr MonotonicTime kNotYet = MonotonicTime::min();
  const MonotonicTime cut_at = clock_.Now();
  MonotonicTime a_stopped_at = kNotYet;
  MonotonicTime b_started_at = kNotYet;
  while (b_started_at == kNotYet && clock_.Now() - cut_at < seconds(60)) {
    clock_.Advance(step);
    clock_.Settle(2);
    const bool a_leads = a->elector->IsLeader();
    const bool b_leads = b->elector->IsLeader();
    ASSERT_FALSE(a_leads && b_leads) << "both lead at " << ToMonotonicNanos(clock_.Now()) << " ns";
    if (!a_leads && a_stopped_at == kNotYet) a_stopped_at = clock_.Now();
    if (b_leads) b_started_at = clock_.Now();
  }
  ASSERT_NE(a_stopped_at, kNotYet);
  ASSERT_NE(b_started_at, kNotYet) << "pod-b never took over";
  // pod-a renewed last at most 2 s before the cut and gives up 2 s + 10 s after that at the
  // latest; pod-b needs 15 s without a change after its last read of pod-a's record.
  EXPECT_LE(a_stopped_at - cut_at, seconds(12));
  EXPECT_GE(b_started_at - cut_at, seconds(13));
  EXPECT_LT(a_stopped_at, b_started_at);
  EXPECT_EQ(a->stopped.load(), 1);
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "pod-b");
  EXPECT_EQ(Lease()["spec"]["leaseTransitions"], 1);

  // pod-a heals: it sees pod-b renewing and stays a follower.
  a->transport->set_partitioned(false);
  for (int i = 0; i < 100; ++i) {
    clock_.Advance(step);
    clock_.Settle(2);
    ASSERT_FALSE(a->elector->IsLeader());
    ASSERT_TRUE(b->elector->IsLeader());
  }
  EXPECT_EQ(a->elector->GetLeader(), "pod-b");

  // pod-b stops gracefully and releases: pod-a takes over within a retry period, not a lease.
  b->elector->Stop();
  EXPECT_EQ(b->stopped.load(), 1);
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "");
  const MonotonicTime released_at = clock_.Now();
  while (!a->elector->IsLeader() && clock_.Now() - released_at < seconds(15)) {
    clock_.Advance(step);
    clock_.Settle(1);
  }
  EXPECT_TRUE(a->elector->IsLeader());
  EXPECT_LE(clock_.Now() - released_at, seconds(2));
  EXPECT_EQ(Lease()["spec"]["leaseTransitions"], 2);
  a->elector->Stop();
  EXPECT_EQ(a->started.load(), 2);
  EXPECT_EQ(a->stopped.load(), 2);
  EXPECT_THAT(a->NewLeaders(), ElementsAre("pod-a", "pod-b", "pod-a"));
  EXPECT_THAT(b->NewLeaders(), ElementsAre("pod-a", "pod-b"));
}

TEST_F(LeaderElectionTest, ConflictingCandidatesNeverBothAcquire) {
  // Both start at the same simulated instant against a missing lease: one create wins.
  auto a = MakeCandidate("pod-a");
  auto b = MakeCandidate("pod-b");
  a->elector->Start();
  b->elector->Start();
  clock_.Settle(2);
  for (int i = 0; i < 50; ++i) {
    EXPECT_NE(a->elector->IsLeader(), b->elector->IsLeader());
    clock_.Advance(milliseconds(500));
    clock_.Settle(2);
  }
  a->elector->Stop();
  b->elector->Stop();
}

#endif  // WAVEPOOL_TEST_APISERVER

}  // namespace
}  // namespace wavepool::kube
