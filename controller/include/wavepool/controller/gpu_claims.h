// GpuClaims: every way the controller counts a GPU as taken, in one place. Placement
// (placement.h) decides from an Inventory of GpuAssignments; those come from here:
//
//   * Held pods: controller-owned pods as the pod cache shows them (AssignmentFromPod), not
//     Succeeded or Failed (terminating pods still hold their GPUs).
//   * Assumed pods: pods this controller created whose creation the cache has not shown yet.
//   * Reservations: a job's placement recorded (or being recorded) in status.placement whose
//     pods are not all created yet.
//   * Nominations: the GPUs a foreground gang chose while the background pods it preempted
//     checkpoint and exit.
//   * Preempted pods: who preempted which pod, so that the victim's reconcile reports Preempted
//     rather than a lost pod even when it runs after the pod (and its annotation) is gone.
//
// Invariants (each is tested in tests/controller/gpu_claims_test.cpp):
//   1. A pod is counted at most once: by its namespace/name, the observed pod replaces the
//      assumed one, and PodAssignments() never lists an assumed pod whose name is held.
//   2. An assumed pod ends when the cache shows that incarnation (uid) created, updated or
//      deleted, or after `assume_timeout` on the clock, whichever comes first; an assumption
//      about an incarnation the cache has shown already is ignored (the watch was faster than
//      CreatePod's response). A pod deleted before the cache ever saw it holds nothing once the
//      timeout passes. But while the cache is behind the creation, the timeout waits: an
//      assumption whose creation's resourceVersion is above every one the cache has shown stands
//      as long as pod events keep coming (one within `assume_timeout`), so that a watch that lags
//      by more than the timeout under load never frees GPUs its pods hold. (resourceVersions are
//      compared as the integers the API server writes; one that is not an integer times out as
//      before.)
//   3. A pod that is gone (deleted, or no longer holding GPUs: finished, or unreadable) holds
//      nothing: a preempted pod's GPUs are free once the cache shows it gone.
//   4. A reservation stands while its job exists, is not being deleted, and the cache shows it
//      at a resourceVersion known before the intent write (the write's outcome is not visible
//      yet); then status.placement (or its absence) speaks for it and the reservation is dropped.
//   5. A nomination stands until `expires`, and while its job exists unchanged (same uid and
//      generation), not being deleted and not suspended; DropNomination (the gang's intent is
//      written: its reservation holds the GPUs from then on, or nothing is placeable any more)
//      and ForgetJob end it at once.
//   6. A job never competes with its own claims: StandingIntents leaves out the asking job's
//      reservation and nomination.
//   7. A preempted pod is remembered for `preempted_memory` after its preemption, and only
//      answers for the job it belonged to.
//   8. ForgetJob drops everything held in memory for the job: reservation, nomination and its
//      preempted pods. Nothing here survives a controller restart: the pod cache is re-listed,
//      status.placement re-read, and a preempting gang re-derives (placement.h breaks ties
//      deterministically) and nominates again.
//
// Whether a GPU is free for a pod (one foreground pod per GPU, background limits) is decided by
// Inventory from these claims, not here: GpuClaims only says who claims what.
//
// Thread-safe: every method takes the object's own mutex. The JobLookup passed to
// StandingIntents runs under that mutex and must not call back into the same GpuClaims.
#ifndef WAVEPOOL_CONTROLLER_GPU_CLAIMS_H_
#define WAVEPOOL_CONTROLLER_GPU_CLAIMS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/training_job.h"
#include "wavepool/base/change_log.h"
#include "wavepool/base/clock.h"
#include "wavepool/controller/placement.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::controller {

// The GPUs a foreground gang waits for while its victims stop.
struct Nomination {
  std::string uid;                  // The gang's job, as it was when it nominated.
  std::int64_t generation = 0;      // metadata.generation.
  std::vector<GpuAssignment> pods;  // The gang's pods on the GPUs it waits for.
  WallTime expires;
  // When the gang's decision first strayed from these GPUs (to more nodes) while it stood; the
  // gang keeps waiting for them a short while from then (reconcile_placement.cpp).
  std::optional<WallTime> strayed_since;
};

// A placement recorded (or being recorded) whose pods are not all created.
struct Reservation {
  // The job's resourceVersions known before the intent write.
  std::vector<std::string> resource_versions;
  std::vector<api::PodPlacement> placement;  // status.placement as written.
  std::int64_t gang_generation = 0;          // status.gangGeneration as written.
  std::vector<GpuAssignment> pods;           // The same, as the inventory counts them.
};

// Who preempted a pod.
struct PreemptedPod {
  std::string job;  // "ns/job" of the victim.
  std::string by;   // "ns/job" of the preempting gang.
  WallTime when;
};

// A job as the cache shows it, for deciding whether its reservation or nomination stands.
struct ClaimantJob {
  std::string uid;
  std::int64_t generation = 0;
  std::string resource_version;
  bool deleting = false;   // metadata.deletionTimestamp set.
  bool suspended = false;  // spec.suspend.
};
// "ns/name" -> the job as the cache shows it; nullopt when it does not exist.
using JobLookup = std::function<std::optional<ClaimantJob>(const std::string& key)>;

class GpuClaims {
 public:
  // `clock` times assumed pods (invariant 2) and outlives the GpuClaims.
  // REQUIRES: assume_timeout > 0.
  explicit GpuClaims(Clock& clock = RealClock(),
                     std::chrono::nanoseconds assume_timeout = std::chrono::seconds(30),
                     std::chrono::nanoseconds preempted_memory = std::chrono::minutes(30));

  GpuClaims(const GpuClaims&) = delete;
  GpuClaims& operator=(const GpuClaims&) = delete;

  // --- Pods ---

  // The pods come as the cache and the API server hold them, JSON, and are decoded here
  // (kube::Pod::FromJson), once per event.
  // A pod the cache shows (added or updated). Returns the decoding error (naming the pod and the
  // field) or AssignmentFromPod's for a pod it cannot read; that pod then holds nothing.
  absl::Status ObservePod(const nlohmann::json& pod);
  // The same for the pod under `key` ("namespace/name") decoded already (`decoded`,
  // kube::Pod::FromJson's result), for a caller that reads the decoded pod too.
  absl::Status ObservePod(const std::string& key, const absl::StatusOr<kube::Pod>& decoded);
  // A pod the cache shows deleted.
  void ObservePodDeleted(const nlohmann::json& pod);
  // A pod this controller just created (the API server's response, with its uid).
  void AssumeCreated(const nlohmann::json& pod);
  // The GPUs held by pods, held ones by namespace/name, then assumed ones.
  std::vector<GpuAssignment> PodAssignments() const;
  std::size_t AssumedCount() const;
  // The pods whose assignment changed (observed, deleted, assumed, an assumption ended) after
  // `version`, a value an earlier call returned (0 before the first), each with what it holds
  // now; every pod's, `complete`, when more than kPodChangesKept changes happened since (or
  // `version` is not one this object returned). An inventory kept between decisions applies
  // these rather than reading every pod again.
  AssignmentChanges PodChangesSince(std::uint64_t version) const;
  static constexpr std::size_t kPodChangesKept = ChangeLog::kDefaultKept;

  // --- Reservations and nominations ---

  // Records the job's reservation, replacing an earlier one.
  void Reserve(const std::string& job, Reservation reservation);
  std::optional<Reservation> ReservationOf(const std::string& job) const;
  void Release(const std::string& job);
  void Nominate(const std::string& job, Nomination nomination);
  void DropNomination(const std::string& job);
  std::optional<Nomination> NominationOf(const std::string& job) const;

  // The pods of the reservations and nominations of jobs other than `self` that still stand
  // (invariants 4 and 5) at `now`, leaving out pods named in `seen` and adding the others to it;
  // entries that no longer stand are dropped.
  std::vector<GpuAssignment> StandingIntents(const std::string& self, WallTime now,
                                             const JobLookup& lookup, std::set<std::string>& seen);

  // --- Preempted pods ---

  // Remembers that `pod` ("ns/pod") of `victim` was preempted by `by` at `now`; forgets entries
  // older than preempted_memory.
  void RememberPreempted(const std::string& pod, const std::string& victim, const std::string& by,
                         WallTime now);
  // Who preempted `pod` ("ns/pod") of `job`; nullopt when not remembered (or another job's).
  std::optional<std::string> PreemptorOf(const std::string& pod, const std::string& job) const;

  // Drops the job's reservation, nomination and preempted pods (invariant 8).
  void ForgetJob(const std::string& job);

 private:
  struct Held {
    std::string uid;
    std::shared_ptr<const GpuAssignment> assignment;
  };
  struct Assumed {
    std::string uid;
    std::shared_ptr<const GpuAssignment> assignment;
    MonotonicTime expires_at;
    std::optional<std::uint64_t> resource_version;  // the creation's
  };
  // Uids the cache has shown, newest last, so that an assumption that loses the race with the
  // pod's own events (created, seen, even deleted before CreatePod returned) is ignored.
  static constexpr std::size_t kObservedUidsKept = 8192;
  void RememberUidLocked(const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireAssumedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Notes how far the cache has got: a pod event (its resourceVersion, when an integer) now.
  void ObserveProgressLocked(std::optional<std::uint64_t> resource_version)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The cache has not shown `assumed`'s creation yet and is still delivering events (invariant 2).
  bool BehindLocked(const Assumed& assumed, MonotonicTime now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls visit(key, assignment) for every pod holding GPUs: held ones by namespace/name, then
  // assumed ones not held (invariant 1).
  template <typename Visit>
  void ForEachPodLocked(const Visit& visit) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [key, held] : held_) visit(key, held.assignment);
    for (const auto& [key, assumed] : assumed_) {
      if (held_.count(key) == 0) visit(key, assumed.assignment);
    }
  }
  // What pod `key` holds now: held, else assumed; nullptr when neither.
  std::shared_ptr<const GpuAssignment> CurrentLocked(const std::string& key) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  const std::chrono::nanoseconds assume_timeout_;
  const std::chrono::nanoseconds preempted_memory_;
  mutable absl::Mutex mu_;
  std::map<std::string, Held> held_ ABSL_GUARDED_BY(mu_);                // by ns/name
  mutable std::map<std::string, Assumed> assumed_ ABSL_GUARDED_BY(mu_);  // by ns/name
  std::set<std::string> observed_uids_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> observed_order_ ABSL_GUARDED_BY(mu_);
  // The newest pod event the cache showed: its resourceVersion, and when it came.
  std::uint64_t newest_resource_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<MonotonicTime> last_event_ ABSL_GUARDED_BY(mu_);
  // The pods whose assignment changed, for PodChangesSince. Mutable: expiring an assumption is
  // a change.
  mutable ChangeLog changes_ ABSL_GUARDED_BY(mu_){kPodChangesKept};
  std::map<std::string, Reservation> reserved_ ABSL_GUARDED_BY(mu_);    // by ns/job
  std::map<std::string, Nomination> nominated_ ABSL_GUARDED_BY(mu_);    // by ns/job
  std::map<std::string, PreemptedPod> preempted_ ABSL_GUARDED_BY(mu_);  // by ns/pod
};

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_GPU_CLAIMS_H_
