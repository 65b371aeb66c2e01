#include "wavepool/controller/gpu_claims.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/informer.h"

namespace wavepool::controller {
namespace {

// The pod's uid; empty when the pod does not decode (no incarnation to tell apart then).
std::string UidOf(const absl::StatusOr<kube::Pod>& pod) {
  return pod.ok() ? pod->metadata.uid : std::string();
}

// metadata.resourceVersion as the integer the API server writes; nullopt when the pod does not
// decode or the version is not one.
std::optional<std::uint64_t> ResourceVersionOf(const absl::StatusOr<kube::Pod>& pod) {
  std::uint64_t value = 0;
  if (!pod.ok() || !absl::SimpleAtoi(pod->metadata.resource_version, &value)) return std::nullopt;
  return value;
}

// Its GPUs: the decoding error first, then AssignmentFromPod's.
absl::StatusOr<std::optional<GpuAssignment>> AssignmentOf(const absl::StatusOr<kube::Pod>& pod) {
  if (!pod.ok()) return pod.status();
  return AssignmentFromPod(*pod);
}

bool KnownBefore(const Reservation& r, const std::string& resource_version) {
  return std::find(r.resource_versions.begin(), r.resource_versions.end(), resource_version) !=
         r.resource_versions.end();
}

// Invariant 4 (gpu_claims.h).
bool ReservationStands(const std::optional<ClaimantJob>& job, const Reservation& r) {
  return job.has_value() && !job->deleting && KnownBefore(r, job->resource_version);
}

// Invariant 5 (gpu_claims.h).
bool NominationStands(const std::optional<ClaimantJob>& job, const Nomination& n, WallTime now) {
  return now <= n.expires && job.has_value() && !job->deleting && !job->suspended &&
         job->uid == n.uid && job->generation == n.generation;
}

// Adds the pods of the entries (but `self`'s) that stand to `intents`, drops the others.
template <typename Entry, typename Stands>
void AddStanding(const std::string& self, std::map<std::string, Entry>& entries,
                 const JobLookup& lookup, Stands stands, std::set<std::string>& seen,
                 std::vector<GpuAssignment>& intents) {
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->first == self) {
      ++it;
      continue;
    }
    if (!stands(lookup(it->first), it->second)) {
      it = entries.erase(it);
      continue;
    }
    for (const GpuAssignment& a : it->second.pods) {
      if (seen.insert(a.pod).second) intents.push_back(a);
    }
    ++it;
  }
}

}  // namespace

GpuClaims::GpuClaims(Clock& clock, std::chrono::nanoseconds assume_timeout,
                     std::chrono::nanoseconds preempted_memory)
    : clock_(clock), assume_timeout_(assume_timeout), preempted_memory_(preempted_memory) {}

absl::Status GpuClaims::ObservePod(const nlohmann::json& pod) {
  return ObservePod(kube::ObjectKey(pod), kube::Pod::FromJson(pod));
}

absl::Status GpuClaims::ObservePod(const std::string& key,
                                   const absl::StatusOr<kube::Pod>& decoded) {
  const std::string uid = UidOf(decoded);
  absl::StatusOr<std::optional<GpuAssignment>> assignment = AssignmentOf(decoded);
  absl::MutexLock lock(&mu_);
  RememberUidLocked(uid);
  ObserveProgressLocked(ResourceVersionOf(decoded));
  changes_.Record(key);
  const auto assumed = assumed_.find(key);
  if (assumed != assumed_.end() && assumed->second.uid == uid) assumed_.erase(assumed);
  if (!assignment.ok() || !assignment->has_value()) {
    held_.erase(key);
    return assignment.status();
  }
  held_[key] = Held{uid, std::make_shared<const GpuAssignment>(**std::move(assignment))};
  return absl::OkStatus();
}

void GpuClaims::ObservePodDeleted(const nlohmann::json& pod) {
  const std::string key = kube::ObjectKey(pod);
  const absl::StatusOr<kube::Pod> decoded = kube::Pod::FromJson(pod);
  const std::string uid = UidOf(decoded);
  absl::MutexLock lock(&mu_);
  RememberUidLocked(uid);
  ObserveProgressLocked(ResourceVersionOf(decoded));
  changes_.Record(key);
  held_.erase(key);
  const auto assumed = assumed_.find(key);
  if (assumed != assumed_.end() && assumed->second.uid == uid) assumed_.erase(assumed);
}

void GpuClaims::AssumeCreated(const nlohmann::json& pod) {
  const absl::StatusOr<kube::Pod> decoded = kube::Pod::FromJson(pod);
  absl::StatusOr<std::optional<GpuAssignment>> assignment = AssignmentOf(decoded);
  if (!assignment.ok() || !assignment->has_value()) return;
  const std::string uid = UidOf(decoded);
  absl::MutexLock lock(&mu_);
  if (observed_uids_.count(uid) != 0) return;  // the cache was faster
  const MonotonicTime expires_at = clock_.Now() + assume_timeout_;
  const std::string key = kube::ObjectKey(pod);
  changes_.Record(key);
  assumed_[key] = Assumed{uid, std::make_shared<const GpuAssignment>(**std::move(assignment)),
                          expires_at, ResourceVersionOf(decoded)};
}

void GpuClaims::ObserveProgressLocked(std::optional<std::uint64_t> resource_version) {
  last_event_ = clock_.Now();
  if (resource_version.has_value()) {
    newest_resource_version_ = std::max(newest_resource_version_, *resource_version);
  }
}

bool GpuClaims::BehindLocked(const Assumed& assumed, MonotonicTime now) const {
  return assumed.resource_version.has_value() &&
         newest_resource_version_ < *assumed.resource_version && last_event_.has_value() &&
         now - *last_event_ < assume_timeout_;
}

void GpuClaims::RememberUidLocked(const std::string& uid) {
  if (uid.empty() || !observed_uids_.insert(uid).second) return;
  observed_order_.push_back(uid);
  if (observed_order_.size() > kObservedUidsKept) {
    observed_uids_.erase(observed_order_.front());
    observed_order_.pop_front();
  }
}

void GpuClaims::ExpireAssumedLocked() const {
  const MonotonicTime now = clock_.Now();
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    if (it->second.expires_at > now || BehindLocked(it->second, now)) {
      ++it;
      continue;
    }
    changes_.Record(it->first);
    it = assumed_.erase(it);
  }
}

std::shared_ptr<const GpuAssignment> GpuClaims::CurrentLocked(const std::string& key) const {
  if (const auto held = held_.find(key); held != held_.end()) return held->second.assignment;
  if (const auto assumed = assumed_.find(key); assumed != assumed_.end()) {
    return assumed->second.assignment;
  }
  return nullptr;
}

AssignmentChanges GpuClaims::PodChangesSince(std::uint64_t version) const {
  absl::MutexLock lock(&mu_);
  ExpireAssumedLocked();
  AssignmentChanges out;
  out.version = changes_.version();
  if (std::optional<std::vector<std::string>> keys = changes_.KeysSince(version)) {
    for (std::string& key : *keys) {
      std::shared_ptr<const GpuAssignment> now = CurrentLocked(key);
      out.changed.emplace_back(std::move(key), std::move(now));
    }
    return out;
  }
  out.complete = true;
  ForEachPodLocked([&out](const std::string& key, const std::shared_ptr<const GpuAssignment>& a) {
    out.changed.emplace_back(key, a);
  });
  return out;
}

std::vector<GpuAssignment> GpuClaims::PodAssignments() const {
  absl::MutexLock lock(&mu_);
  ExpireAssumedLocked();
  std::vector<GpuAssignment> out;
  out.reserve(held_.size() + assumed_.size());
  ForEachPodLocked([&out](const std::string&, const std::shared_ptr<const GpuAssignment>& a) {
    out.push_back(*a);
  });
  return out;
}

std::size_t GpuClaims::AssumedCount() const {
  absl::MutexLock lock(&mu_);
  ExpireAssumedLocked();
  return assumed_.size();
}

void GpuClaims::Reserve(const std::string& job, Reservation reservation) {
  absl::MutexLock lock(&mu_);
  reserved_[job] = std::move(reservation);
}

std::optional<Reservation> GpuClaims::ReservationOf(const std::string& job) const {
  absl::MutexLock lock(&mu_);
  const auto it = reserved_.find(job);
  if (it == reserved_.end()) return std::nullopt;
  return it->second;
}

void GpuClaims::Release(const std::string& job) {
  absl::MutexLock lock(&mu_);
  reserved_.erase(job);
}

void GpuClaims::Nominate(const std::string& job, Nomination nomination) {
  absl::MutexLock lock(&mu_);
  nominated_[job] = std::move(nomination);
}

void GpuClaims::DropNomination(const std::string& job) {
  absl::MutexLock lock(&mu_);
  nominated_.erase(job);
}

std::optional<Nomination> GpuClaims::NominationOf(const std::string& job) const {
  absl::MutexLock lock(&mu_);
  const auto it = nominated_.find(job);
  if (it == nominated_.end()) return std::nullopt;
  return it->second;
}

std::vector<GpuAssignment> GpuClaims::StandingIntents(const std::string& self, WallTime now,
                                                      const JobLookup& lookup,
                                                      std::set<std::string>& seen) {
  std::vector<GpuAssignment> intents;
  absl::MutexLock lock(&mu_);
  AddStanding(self, reserved_, lookup, ReservationStands, seen, intents);
  AddStanding(
      self, nominated_, lookup,
      [now](const std::optional<ClaimantJob>& job, const Nomination& n) {
        return NominationStands(job, n, now);
      },
      seen, intents);
  return intents;
}

void GpuClaims::RememberPreempted(const std::string& pod, const std::string& victim,
                                  const std::string& by, WallTime now) {
  absl::MutexLock lock(&mu_);
  for (auto it = preempted_.begin(); it != preempted_.end();) {
    it = now - it->second.when > preempted_memory_ ? preempted_.erase(it) : std::next(it);
  }
  preempted_[pod] = PreemptedPod{victim, by, now};
}

std::optional<std::string> GpuClaims::PreemptorOf(const std::string& pod,
                                                  const std::string& job) const {
  absl::MutexLock lock(&mu_);
  const auto it = preempted_.find(pod);
  if (it == preempted_.end() || it->second.job != job) return std::nullopt;
  return it->second.by;
}

void GpuClaims::ForgetJob(const std::string& job) {
  absl::MutexLock lock(&mu_);
  reserved_.erase(job);
  nominated_.erase(job);
  for (auto it = preempted_.begin(); it != preempted_.end();) {
    it = it->second.job == job ? preempted_.erase(it) : std::next(it);
  }
}

}  // namespace wavepool::controller
