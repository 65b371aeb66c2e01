// LeaderElector: client-go's tools/leaderelection/leaderelection.go over a Lease.
#include "wavepool/kube/leader_election.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::kube {
namespace {

// client-go's JitterFactor: the renew deadline must leave room for more than one retry.
constexpr double kJitterFactor = 1.2;

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

bool StopSignal::stopped() const {
  absl::MutexLock lock(&mu_);
  return stopped_;
}

void StopSignal::Wait() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&stopped_));
}

bool StopSignal::WaitFor(std::chrono::nanoseconds timeout) const {
  absl::MutexLock lock(&mu_);
  return clock_.WaitUntil(mu_, clock_.Now() + timeout, absl::Condition(&stopped_));
}

void StopSignal::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
}

absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  const auto bad = [](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("leader election: ", message));
  };
  if (c.lease_name.empty()) return bad("lease_name: must not be empty");
  if (c.identity.empty()) return bad("identity: must not be empty (use the pod name)");
  if (c.retry_period.count() <= 0) return bad("retry_period: must be > 0");
  if (c.lease_duration <= c.renew_deadline) {
    return bad(absl::StrFormat("lease_duration (%gs) must be greater than renew_deadline (%gs)",
                               Seconds(c.lease_duration), Seconds(c.renew_deadline)));
  }
  if (Seconds(c.renew_deadline) <= kJitterFactor * Seconds(c.retry_period)) {
    return bad(absl::StrFormat("renew_deadline (%gs) must be greater than retry_period * 1.2 (%gs)",
                               Seconds(c.renew_deadline), kJitterFactor * Seconds(c.retry_period)));
  }
  if (!c.callbacks.on_started_leading) return bad("callbacks.on_started_leading: required");
  if (!c.callbacks.on_stopped_leading) return bad("callbacks.on_stopped_leading: required");
  if (c.clock == nullptr) return bad("clock: must not be null");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(Client& client,
                                                                     LeaderElectionConfig config) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateLeaderElectionConfig(config));
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, std::move(config)));
}

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config)
    : client_(client), config_(std::move(config)), clock_(*config_.clock) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void LeaderElector::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool LeaderElector::IsLeader() const {
  absl::MutexLock lock(&mu_);
  return leading_;
}

std::string LeaderElector::GetLeader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

bool LeaderElector::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool LeaderElector::WaitFor(std::chrono::nanoseconds delay) {
  absl::MutexLock lock(&mu_);
  clock_.WaitUntil(mu_, clock_.Now() + delay, absl::Condition(&stopping_));
  return !stopping_;
}

void LeaderElector::Log(std::string_view message) const {
  const std::string line =
      absl::StrCat("leader election ", config_.lease_namespace, "/", config_.lease_name, " (",
                   config_.identity, "): ", std::string(message));
  if (config_.log) {
    config_.log(line);
  } else {
    std::cerr << line << "\n";
  }
}

void LeaderElector::Loop() {
  while (Acquire()) Lead();
}

bool LeaderElector::Acquire() {
  for (;;) {
    if (Stopping()) return false;
    if (TryAcquireOrRenew()) return true;
    if (!WaitFor(config_.retry_period)) return false;
  }
}

void LeaderElector::Lead() {
  auto stop = std::make_shared<StopSignal>(clock_);
  {
    absl::MutexLock lock(&mu_);
    leading_ = true;
  }
  Log("became leader");
  std::thread work([stop, this] { config_.callbacks.on_started_leading(*stop); });
  // Renew at once and then every retry period (client-go's wait.Until over PollImmediateUntil).
  bool lost = false;
  while (!Stopping()) {
    if (!RenewRound()) {
      lost = !Stopping();
      break;
    }
    if (!WaitFor(config_.retry_period)) break;
  }
  // Stop acting first: this runs before the Lease can have expired for anyone else.
  {
    absl::MutexLock lock(&mu_);
    leading_ = false;
  }
  stop->Stop();
  if (lost) Log("could not renew within the renew deadline; stopped leading");
  config_.callbacks.on_stopped_leading();
  work.join();
  if (!lost && config_.release_on_cancel) Release();
}

bool LeaderElector::RenewRound() {
  // Tries every retry period until one succeeds or the renew deadline has passed.
  const MonotonicTime deadline = clock_.Now() + config_.renew_deadline;
  for (;;) {
    if (TryAcquireOrRenew()) return true;
    const MonotonicTime now = clock_.Now();
    if (now >= deadline || Stopping()) return false;
    const auto wait = std::min<std::chrono::nanoseconds>(config_.retry_period, deadline - now);
    if (!WaitFor(wait)) return false;
    if (clock_.Now() >= deadline) return false;
  }
}

void LeaderElector::Observe(const nlohmann::json& spec) {
  if (spec == observed_spec_) return;
  observed_spec_ = spec;
  observed_time_ = clock_.Now();
  const std::string holder = spec.value("holderIdentity", "");
  std::string previous;
  {
    absl::MutexLock lock(&mu_);
    previous = std::exchange(leader_, holder);
  }
  if (!holder.empty() && holder != previous && config_.callbacks.on_new_leader) {
    config_.callbacks.on_new_leader(holder);
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now_text = FormatMicroTime(clock_.WallNow());
  const auto lease_seconds = static_cast<std::int64_t>(
      std::ceil(std::chrono::duration<double>(config_.lease_duration).count()));
  absl::StatusOr<nlohmann::json> lease =
      client_.Get(kLeases, config_.lease_namespace, config_.lease_name);
  if (!lease.ok()) {
    if (!kube::IsNotFound(lease.status())) {
      Log(absl::StrCat("reading the lease failed: ", lease.status().ToString()));
      return false;
    }
    const nlohmann::json spec = {{"holderIdentity", config_.identity},
                                 {"leaseDurationSeconds", lease_seconds},
                                 {"acquireTime", now_text},
                                 {"renewTime", now_text},
                                 {"leaseTransitions", 0}};
    const nlohmann::json object = {
        {"apiVersion", kLeases.ApiVersion()},
        {"kind", kLeases.kind},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec", spec}};
    absl::StatusOr<nlohmann::json> created = client_.Create(kLeases, object);
    if (!created.ok()) {
      if (!kube::IsAlreadyExists(created.status())) {
        Log(absl::StrCat("creating the lease failed: ", created.status().ToString()));
      }
      return false;
    }
    Observe(created->value("spec", spec));
    return true;
  }

  const nlohmann::json old_spec = lease->value("spec", nlohmann::json::object());
  Observe(old_spec);
  const std::string holder = old_spec.value("holderIdentity", "");
  // The record's own duration decides, as client-go's; the configured one if it has none.
  const std::int64_t held_seconds = old_spec.value("leaseDurationSeconds", std::int64_t{0});
  const std::chrono::nanoseconds expiry =
      held_seconds > 0 ? std::chrono::seconds(held_seconds) : config_.lease_duration;
  if (!holder.empty() && holder != config_.identity && observed_time_ + expiry > clock_.Now()) {
    return false;  // held by another candidate and not yet expired on our clock
  }

  nlohmann::json spec = old_spec;
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = lease_seconds;
  spec["renewTime"] = now_text;
  if (holder != config_.identity || !spec.contains("acquireTime")) {
    spec["acquireTime"] = now_text;
    spec["leaseTransitions"] =
        old_spec.value("leaseTransitions", std::int64_t{0}) + (holder == config_.identity ? 0 : 1);
  }
  nlohmann::json updated = *lease;
  updated["spec"] = spec;  // metadata.resourceVersion stays: a concurrent writer gets a conflict
  absl::StatusOr<nlohmann::json> written = client_.Update(kLeases, updated);
  if (!written.ok()) {
    if (!kube::IsConflict(written.status())) {
      Log(absl::StrCat("updating the lease failed: ", written.status().ToString()));
    }
    return false;
  }
  Observe(written->value("spec", spec));
  return true;
}

void LeaderElector::Release() {
  // Empty holder and a 1 s duration: the others may take over at once (client-go's release).
  absl::StatusOr<nlohmann::json> lease =
      client_.Get(kLeases, config_.lease_namespace, config_.lease_name);
  if (!lease.ok()) {
    Log(absl::StrCat("release: reading the lease failed: ", lease.status().ToString()));
    return;
  }
  nlohmann::json& spec = (*lease)["spec"];
  if (!spec.is_object() || spec.value("holderIdentity", "") != config_.identity) return;
  const std::string now_text = FormatMicroTime(clock_.WallNow());
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["acquireTime"] = now_text;
  spec["renewTime"] = now_text;
  absl::StatusOr<nlohmann::json> written = client_.Update(kLeases, *lease);
  if (!written.ok()) {
    Log(absl::StrCat("release failed: ", written.status().ToString()));
    return;
  }
  Observe(written->value("spec", spec));
}

}  // namespace wavepool::kube
