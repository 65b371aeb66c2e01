// Heartbeat freshness on the controller's clock (heartbeat_observations.h).
#include "reconcile/heartbeat_observations.h"

namespace wavepool::controller::internal {

bool HeartbeatObservations::ObserveFresh(const std::string& node, const std::string& heartbeat,
                                         WallTime now, std::chrono::nanoseconds timeout) {
  return ObserveFreshUntil(node, heartbeat, now, timeout).has_value();
}

std::optional<WallTime> HeartbeatObservations::ObserveFreshUntil(const std::string& node,
                                                                 const std::string& heartbeat,
                                                                 WallTime now,
                                                                 std::chrono::nanoseconds timeout) {
  absl::MutexLock lock(&mu_);
  auto it = seen_.find(node);
  if (it == seen_.end() || it->second.heartbeat != heartbeat) {
    // A new value: the agent is alive now, whatever its clock says the time is.
    it = seen_.insert_or_assign(node, Seen{heartbeat, now}).first;
  }
  return UntilOf(it->second, now, timeout);
}

std::optional<WallTime> HeartbeatObservations::FreshUntil(const std::string& node, WallTime now,
                                                          std::chrono::nanoseconds timeout) const {
  absl::MutexLock lock(&mu_);
  const auto it = seen_.find(node);
  if (it == seen_.end()) return std::nullopt;
  return UntilOf(it->second, now, timeout);
}

std::optional<WallTime> HeartbeatObservations::UntilOf(const Seen& seen, WallTime now,
                                                       std::chrono::nanoseconds timeout) {
  const WallTime until = seen.changed + timeout;
  if (seen.heartbeat.empty() || now > until) return std::nullopt;
  return until;
}

void HeartbeatObservations::Forget(const std::string& node) {
  absl::MutexLock lock(&mu_);
  seen_.erase(node);
}

void HeartbeatObservations::RetainOnly(const std::set<std::string>& nodes) {
  absl::MutexLock lock(&mu_);
  for (auto it = seen_.begin(); it != seen_.end();) {
    it = nodes.count(it->first) == 0 ? seen_.erase(it) : std::next(it);
  }
}

}  // namespace wavepool::controller::internal
