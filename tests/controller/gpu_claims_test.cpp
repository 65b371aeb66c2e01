// The invariants stated in gpu_claims.h, one or more tests each.
#include "wavepool/controller/gpu_claims.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::SimulatedClock;
using Time = std::chrono::system_clock::time_point;

constexpr auto kAssumeTimeout = std::chrono::seconds(30);
constexpr auto kPreemptedMemory = std::chrono::minutes(30);
const Time kT0 = Time() + std::chrono::hours(24 * 365 * 56);

// A background pod of job `job` in namespace "ns" on `uuid`, as BuildPod labels it.
json BgPod(const std::string& name, const std::string& uid, const std::string& uuid,
           const std::string& phase = "Running", const std::string& job = "job") {
  return {{"metadata",
           {{"namespace", "ns"},
            {"name", name},
            {"uid", uid},
            {"labels", {{std::string(kLabelRole), "Background"}}},
            {"annotations",
             {{std::string(kAnnotationJobName), job},
              {std::string(kAnnotationGpuUuids), uuid},
              {std::string(kAnnotationMemoryPerGpu), "1024"}}},
            {"ownerReferences", json::array({{{"apiVersion", std::string(api::kApiVersion)},
                                              {"kind", std::string(api::kTrainingJobKind)},
                                              {"name", job},
                                              {"uid", "job-uid"},
                                              {"controller", true}}})}}},
          {"spec", {{"nodeName", "node-a"}}},
          {"status", {{"phase", phase}}}};
}

std::vector<std::string> PodsOf(const std::vector<GpuAssignment>& assignments) {
  std::vector<std::string> pods;
  for (const GpuAssignment& a : assignments) pods.push_back(a.pod);
  return pods;
}

std::vector<std::string> UuidsOf(const std::vector<GpuAssignment>& assignments) {
  std::vector<std::string> uuids;
  for (const GpuAssignment& a : assignments) {
    uuids.insert(uuids.end(), a.gpu_uuids.begin(), a.gpu_uuids.end());
  }
  return uuids;
}

GpuAssignment Claim(const std::string& pod, const std::string& uuid) {
  GpuAssignment a;
  a.pod = pod;
  a.job = "ns/fg";
  a.role = api::Role::kForeground;
  a.node = "node-a";
  a.gpu_uuids = {uuid};
  return a;
}

class GpuClaimsTest : public ::testing::Test {
 protected:
  SimulatedClock clock_;
  GpuClaims claims_{clock_, kAssumeTimeout, kPreemptedMemory};
  std::map<std::string, ClaimantJob> jobs_;  // What the cache shows, by "ns/name".
  JobLookup lookup_ = [this](const std::string& key) -> std::optional<ClaimantJob> {
    const auto it = jobs_.find(key);
    if (it == jobs_.end()) return std::nullopt;
    return it->second;
  };

  std::vector<std::string> Intents(const std::string& self, Time now) {
    std::set<std::string> seen;
    return PodsOf(claims_.StandingIntents(self, now, lookup_, seen));
  }

  // Reserves `pods` for `job`, whose resourceVersion before the intent write was "10".
  void Reserve(const std::string& job, std::vector<GpuAssignment> pods) {
    Reservation r;
    r.resource_versions = {"10"};
    r.pods = std::move(pods);
    claims_.Reserve(job, r);
  }

  // Nominates `pods` for `job` as it is at `uid` and `generation`, until `expires`.
  void Nominate(const std::string& job, const std::string& uid, std::int64_t generation,
                std::vector<GpuAssignment> pods, Time expires) {
    claims_.Nominate(job, Nomination{uid, generation, std::move(pods), expires, std::nullopt});
  }
};

// --- Invariants 1 to 3: pods ---

TEST_F(GpuClaimsTest, ObservedPodReplacesAssumedPodAndCountsOnce) {
  claims_.AssumeCreated(BgPod("p", "uid-1", "GPU-0"));
  EXPECT_THAT(PodsOf(claims_.PodAssignments()), ElementsAre("ns/p"));
  EXPECT_EQ(claims_.AssumedCount(), 1u);
  ASSERT_THAT(claims_.ObservePod(BgPod("p", "uid-1", "GPU-0")), IsOk());
  EXPECT_THAT(PodsOf(claims_.PodAssignments()), ElementsAre("ns/p"));
  EXPECT_EQ(claims_.AssumedCount(), 0u);
}

TEST_F(GpuClaimsTest, AssumedPodBesideHeldPodOfSameNameIsNotCountedTwice) {
  ASSERT_THAT(claims_.ObservePod(BgPod("p", "uid-old", "GPU-0")), IsOk());
  claims_.AssumeCreated(BgPod("p", "uid-new", "GPU-1"));
  // The held incarnation wins until the cache shows the new one.
  EXPECT_THAT(UuidsOf(claims_.PodAssignments()), ElementsAre("GPU-0"));
  ASSERT_THAT(claims_.ObservePod(BgPod("p", "uid-new", "GPU-1")), IsOk());
  EXPECT_THAT(UuidsOf(claims_.PodAssignments()), ElementsAre("GPU-1"));
  EXPECT_EQ(claims_.AssumedCount(), 0u);
}

TEST_F(GpuClaimsTest, AssumedPodExpiresAfterTimeout) {
  claims_.AssumeCreated(BgPod("p", "uid-1", "GPU-0"));
  clock_.Advance(kAssumeTimeout - std::chrono::nanoseconds(1));
  EXPECT_THAT(PodsOf(claims_.PodAssignments()), ElementsAre("ns/p"));
  clock_.Advance(std::chrono::nanoseconds(1));
  EXPECT_THAT(claims_.PodAssignments(), IsEmpty());
  EXPECT_EQ(claims_.AssumedCount(), 0u);
}

// A pod as the API server returns it, at resourceVersion `version`.
json AtVersion(json pod, int version) {
  pod["metadata"]["resourceVersion"] = std::to_string(version);
  return pod;
}

TEST_F(GpuClaimsTest, AssumedPodOutlivesTheTimeoutWhileTheCacheIsBehindItsCreation) {
  claims_.AssumeCreated(AtVersion(BgPod("p", "uid-p", "GPU-0"), 100));
  // The watch lags: for three timeouts it delivers only events from before the creation.
  for (int i = 0; i < 6; ++i) {
    clock_.Advance(kAssumeTimeout / 2);
    const std::string name = "q" + std::to_string(i);
    ASSERT_THAT(claims_.ObservePod(AtVersion(BgPod(name, "uid-" + name, "GPU-9"), 50 + i)), IsOk());
    EXPECT_THAT(PodsOf(claims_.PodAssignments()), Contains("ns/p"));
  }
  // Past the creation without showing the pod (it is gone), the timeout holds again.
  ASSERT_THAT(claims_.ObservePod(AtVersion(BgPod("r", "uid-r", "GPU-8"), 101)), IsOk());
  EXPECT_THAT(PodsOf(claims_.PodAssignments()), Not(Contains("ns/p")));
}

TEST_F(GpuClaimsTest, AnAssumptionTimesOutWhenTheCacheBehindItGoesQuiet) {
  ASSERT_THAT(claims_.ObservePod(AtVersion(BgPod("q", "uid-q", "GPU-9"), 50)), IsOk());
  claims_.AssumeCreated(AtVersion(BgPod("p", "uid-p", "GPU-0"), 100));
  clock_.Advance(kAssumeTimeout);  // no event since the one before the creation
  EXPECT_THAT(PodsOf(claims_.PodAssignments()), ElementsAre("ns/q"));
}

TEST_F(GpuClaimsTest, AssumptionAboutIncarnationAlreadySeenIsIgnored) {
  // The watch showed the pod created and deleted before CreatePod's response came back.
  ASSERT_THAT(claims_.ObservePod(BgPod("p", "uid-1", "GPU-0")), IsOk());
  claims_.ObservePodDeleted(BgPod("p", "uid-1", "GPU-0"));
  claims_.AssumeCreated(BgPod("p", "uid-1", "GPU-0"));
  EXPECT_THAT(claims_.PodAssignments(), IsEmpty());
  EXPECT_EQ(claims_.AssumedCount(), 0u);
}

TEST_F(GpuClaimsTest, DeletionOfAnotherIncarnationKeepsAssumedPod) {
  claims_.AssumeCreated(BgPod("p", "uid-new", "GPU-1"));
  claims_.ObservePodDeleted(BgPod("p", "uid-old", "GPU-0"));
  EXPECT_THAT(UuidsOf(claims_.PodAssignments()), ElementsAre("GPU-1"));
}

TEST_F(GpuClaimsTest, PreemptedPodFreesItsGpusOnceGone) {
  json pod = BgPod("victim", "uid-1", "GPU-0");
  ASSERT_THAT(claims_.ObservePod(pod), IsOk());
  claims_.RememberPreempted("ns/victim", "ns/job", "ns/fg", kT0);
  // Terminating (checkpointing): still holds its GPU.
  pod["metadata"]["deletionTimestamp"] = "2026-05-01T10:00:00Z";
  ASSERT_THAT(claims_.ObservePod(pod), IsOk());
  EXPECT_THAT(UuidsOf(claims_.PodAssignments()), ElementsAre("GPU-0"));
  claims_.ObservePodDeleted(pod);
  EXPECT_THAT(claims_.PodAssignments(), IsEmpty());
  // Its preemptor is still known to the victim's reconcile.
  EXPECT_EQ(claims_.PreemptorOf("ns/victim", "ns/job"), "ns/fg");
}

TEST_F(GpuClaimsTest, FinishedOrUnreadablePodHoldsNothing) {
  ASSERT_THAT(claims_.ObservePod(BgPod("done", "uid-1", "GPU-0")), IsOk());
  ASSERT_THAT(claims_.ObservePod(BgPod("done", "uid-1", "GPU-0", "Succeeded")), IsOk());
  json unreadable = BgPod("bad", "uid-2", "GPU-1");
  ASSERT_THAT(claims_.ObservePod(unreadable), IsOk());
  unreadable["spec"].erase("nodeName");
  EXPECT_FALSE(claims_.ObservePod(unreadable).ok());
  EXPECT_THAT(claims_.PodAssignments(), IsEmpty());
}

// --- Invariant 4: reservations ---

TEST_F(GpuClaimsTest, ReservationStandsUntilCacheShowsVersionAfterIntentWrite) {
  jobs_["ns/a"] = ClaimantJob{"uid-a", 1, "10", false, false};
  Reserve("ns/a", {Claim("ns/a-0", "GPU-0")});
  EXPECT_THAT(Intents("ns/b", kT0), ElementsAre("ns/a-0"));
  jobs_["ns/a"].resource_version = "11";  // The intent write's outcome is visible.
  EXPECT_THAT(Intents("ns/b", kT0), IsEmpty());
  EXPECT_EQ(claims_.ReservationOf("ns/a"), std::nullopt);  // Dropped, not only skipped.
}

TEST_F(GpuClaimsTest, ReservationOfDeletedOrDeletingJobDoesNotStand) {
  jobs_["ns/a"] = ClaimantJob{"uid-a", 1, "10", true, false};
  Reserve("ns/a", {Claim("ns/a-0", "GPU-0")});
  Reserve("ns/gone", {Claim("ns/a-0", "GPU-0")});
  EXPECT_THAT(Intents("ns/b", kT0), IsEmpty());
}

TEST_F(GpuClaimsTest, ReleaseEndsReservation) {
  jobs_["ns/a"] = ClaimantJob{"uid-a", 1, "10", false, false};
  Reserve("ns/a", {Claim("ns/a-0", "GPU-0")});
  claims_.Release("ns/a");
  EXPECT_THAT(Intents("ns/b", kT0), IsEmpty());
}

// --- Invariant 5: nominations ---

TEST_F(GpuClaimsTest, NominationExpires) {
  jobs_["ns/fg"] = ClaimantJob{"uid-fg", 3, "10", false, false};
  Nominate("ns/fg", "uid-fg", 3, {Claim("ns/fg-0", "GPU-0")}, kT0 + std::chrono::seconds(90));
  EXPECT_THAT(Intents("ns/bg", kT0 + std::chrono::seconds(90)), ElementsAre("ns/fg-0"));
  EXPECT_THAT(Intents("ns/bg", kT0 + std::chrono::seconds(91)), IsEmpty());
  EXPECT_EQ(claims_.NominationOf("ns/fg"), std::nullopt);
}

TEST_F(GpuClaimsTest, NominationEndsWhenJobChangesIsSuspendedOrGoes) {
  const Nomination n{
      "uid-fg", 3, {Claim("ns/fg-0", "GPU-0")}, kT0 + std::chrono::hours(1), std::nullopt};
  for (const ClaimantJob& changed :
       {ClaimantJob{"uid-other", 3, "10", false, false},
        ClaimantJob{"uid-fg", 4, "10", false, false}, ClaimantJob{"uid-fg", 3, "10", false, true},
        ClaimantJob{"uid-fg", 3, "10", true, false}}) {
    jobs_["ns/fg"] = ClaimantJob{"uid-fg", 3, "10", false, false};
    claims_.Nominate("ns/fg", n);
    EXPECT_THAT(Intents("ns/bg", kT0), ElementsAre("ns/fg-0"));
    jobs_["ns/fg"] = changed;
    EXPECT_THAT(Intents("ns/bg", kT0), IsEmpty()) << changed.uid << " " << changed.generation;
  }
  claims_.Nominate("ns/fg", n);
  jobs_.erase("ns/fg");
  EXPECT_THAT(Intents("ns/bg", kT0), IsEmpty());
}

TEST_F(GpuClaimsTest, DropNominationEndsItAndReserveKeepsItUntilDropped) {
  jobs_["ns/fg"] = ClaimantJob{"uid-fg", 3, "10", false, false};
  Nominate("ns/fg", "uid-fg", 3, {Claim("ns/fg-0", "GPU-0")}, kT0 + std::chrono::hours(1));
  Reserve("ns/fg", {Claim("ns/fg-0", "GPU-1")});
  // Both stand while the intent write is in flight; the pod is counted once.
  EXPECT_THAT(Intents("ns/bg", kT0), ElementsAre("ns/fg-0"));
  claims_.DropNomination("ns/fg");
  std::set<std::string> seen;
  EXPECT_THAT(UuidsOf(claims_.StandingIntents("ns/bg", kT0, lookup_, seen)), ElementsAre("GPU-1"));
}

TEST_F(GpuClaimsTest, PodsAlreadyCountedAreLeftOutOfIntents) {
  jobs_["ns/fg"] = ClaimantJob{"uid-fg", 3, "10", false, false};
  Nominate("ns/fg", "uid-fg", 3, {Claim("ns/fg-0", "GPU-0"), Claim("ns/fg-1", "GPU-1")},
           kT0 + std::chrono::hours(1));
  std::set<std::string> seen = {"ns/fg-0"};
  EXPECT_THAT(PodsOf(claims_.StandingIntents("ns/bg", kT0, lookup_, seen)), ElementsAre("ns/fg-1"));
  EXPECT_EQ(seen.count("ns/fg-1"), 1u);
}

// --- Invariant 6: a job never competes with its own claims ---

TEST_F(GpuClaimsTest, OwnReservationAndNominationAreNotIntents) {
  jobs_["ns/fg"] = ClaimantJob{"uid-fg", 3, "10", false, false};
  Nominate("ns/fg", "uid-fg", 3, {Claim("ns/fg-0", "GPU-0")}, kT0 + std::chrono::hours(1));
  Reserve("ns/fg", {Claim("ns/fg-1", "GPU-1")});
  EXPECT_THAT(Intents("ns/fg", kT0), IsEmpty());
  EXPECT_THAT(Intents("ns/other", kT0), ElementsAre("ns/fg-1", "ns/fg-0"));
}

// --- Invariant 7: preempted pods ---

TEST_F(GpuClaimsTest, PreemptedPodAnswersOnlyForItsJobAndIsForgottenAfterMemory) {
  claims_.RememberPreempted("ns/v-0", "ns/v", "ns/fg", kT0);
  EXPECT_EQ(claims_.PreemptorOf("ns/v-0", "ns/v"), "ns/fg");
  EXPECT_EQ(claims_.PreemptorOf("ns/v-0", "ns/other"), std::nullopt);
  EXPECT_EQ(claims_.PreemptorOf("ns/v-1", "ns/v"), std::nullopt);
  // Old entries go when another preemption is remembered.
  claims_.RememberPreempted("ns/w-0", "ns/w", "ns/fg", kT0 + kPreemptedMemory);
  EXPECT_EQ(claims_.PreemptorOf("ns/v-0", "ns/v"), "ns/fg");
  claims_.RememberPreempted("ns/x-0", "ns/x", "ns/fg",
                            kT0 + kPreemptedMemory + std::chrono::seconds(1));
  EXPECT_EQ(claims_.PreemptorOf("ns/v-0", "ns/v"), std::nullopt);
  EXPECT_EQ(claims_.PreemptorOf("ns/w-0", "ns/w"), "ns/fg");
}

// --- The change log (PodChangesSince) ---

// The changes as "ns/pod=GPU" ("ns/pod=-" for nothing held), in the order listed.
std::vector<std::string> Described(const AssignmentChanges& changes) {
  std::vector<std::string> out;
  for (const auto& [pod, now] : changes.changed) {
    out.push_back(pod + "=" + (now == nullptr ? std::string("-") : now->gpu_uuids.front()));
  }
  return out;
}

TEST_F(GpuClaimsTest, PodChangesSinceListEachChangedPodOnceAsItHoldsNow) {
  const AssignmentChanges start = claims_.PodChangesSince(0);
  EXPECT_FALSE(start.complete);
  EXPECT_THAT(start.changed, IsEmpty());
  ASSERT_THAT(claims_.ObservePod(BgPod("p", "uid-p", "GPU-0")), IsOk());
  claims_.AssumeCreated(BgPod("q", "uid-q", "GPU-1"));
  ASSERT_THAT(claims_.ObservePod(BgPod("p", "uid-p", "GPU-2")), IsOk());
  const AssignmentChanges first = claims_.PodChangesSince(start.version);
  EXPECT_FALSE(first.complete);
  EXPECT_THAT(Described(first), ElementsAre("ns/p=GPU-2", "ns/q=GPU-1"));
  EXPECT_THAT(claims_.PodChangesSince(first.version).changed, IsEmpty());

  claims_.ObservePodDeleted(BgPod("p", "uid-p", "GPU-2"));
  clock_.Advance(kAssumeTimeout);  // q's assumption ends: a change too.
  const AssignmentChanges second = claims_.PodChangesSince(first.version);
  EXPECT_THAT(Described(second), ElementsAre("ns/p=-", "ns/q=-"));
  EXPECT_THAT(claims_.PodAssignments(), IsEmpty());
}

TEST_F(GpuClaimsTest, PodChangesSinceAVersionTheLogNoLongerReachesListEveryPod) {
  ASSERT_THAT(claims_.ObservePod(BgPod("p", "uid-p", "GPU-0")), IsOk());
  const std::uint64_t version = claims_.PodChangesSince(0).version;
  // Not a version this log returned: every pod.
  const AssignmentChanges unknown = claims_.PodChangesSince(version + 1);
  EXPECT_TRUE(unknown.complete);
  EXPECT_THAT(Described(unknown), ElementsAre("ns/p=GPU-0"));
  for (std::size_t i = 0; i < GpuClaims::kPodChangesKept; ++i) {
    claims_.ObservePodDeleted(BgPod("gone", "uid-gone", "GPU-1"));
  }
  const AssignmentChanges reached = claims_.PodChangesSince(version);
  EXPECT_FALSE(reached.complete);
  EXPECT_THAT(Described(reached), ElementsAre("ns/gone=-"));
  claims_.AssumeCreated(BgPod("q", "uid-q", "GPU-1"));
  const AssignmentChanges forgotten = claims_.PodChangesSince(version);
  EXPECT_TRUE(forgotten.complete);
  EXPECT_THAT(Described(forgotten), ElementsAre("ns/p=GPU-0", "ns/q=GPU-1"));
  EXPECT_FALSE(claims_.PodChangesSince(forgotten.version).complete);
}

// --- Invariant 8: ForgetJob ---

TEST_F(GpuClaimsTest, ForgetJobDropsEverythingOfTheJobOnly) {
  jobs_["ns/a"] = ClaimantJob{"uid-a", 1, "10", false, false};
  jobs_["ns/b"] = ClaimantJob{"uid-b", 1, "10", false, false};
  Reserve("ns/a", {Claim("ns/a-0", "GPU-0")});
  Nominate("ns/a", "uid-a", 1, {Claim("ns/a-1", "GPU-1")}, kT0 + std::chrono::hours(1));
  Nominate("ns/b", "uid-b", 1, {Claim("ns/b-0", "GPU-2")}, kT0 + std::chrono::hours(1));
  claims_.RememberPreempted("ns/a-old", "ns/a", "ns/b", kT0);
  claims_.ForgetJob("ns/a");
  EXPECT_EQ(claims_.ReservationOf("ns/a"), std::nullopt);
  EXPECT_EQ(claims_.NominationOf("ns/a"), std::nullopt);
  EXPECT_EQ(claims_.PreemptorOf("ns/a-old", "ns/a"), std::nullopt);
  EXPECT_THAT(Intents("ns/c", kT0), ElementsAre("ns/b-0"));
}

}  // namespace
}  // namespace wavepool::controller
