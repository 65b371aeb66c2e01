// Nodes kept off limits to background jobs caught cheating there (node_quarantine.h).
#include "reconcile/node_quarantine.h"

#include <algorithm>

namespace wavepool::controller::internal {

void NodeQuarantine::Add(const std::string& key, const std::string& uid, const std::string& node,
                         TimePoint until) {
  absl::MutexLock lock(&mu_);
  Entry& entry = jobs_[key];
  if (entry.uid != uid) entry = Entry{uid, {}};
  auto [it, inserted] = entry.until_by_node.emplace(node, until);
  if (!inserted) it->second = std::max(it->second, until);
}

std::set<std::string> NodeQuarantine::NodesFor(const std::string& key, const std::string& uid,
                                               TimePoint now) {
  absl::MutexLock lock(&mu_);
  std::set<std::string> nodes;
  const auto job = jobs_.find(key);
  if (job == jobs_.end() || job->second.uid != uid) return nodes;
  auto& until_by_node = job->second.until_by_node;
  for (auto it = until_by_node.begin(); it != until_by_node.end();) {
    if (it->second <= now) {
      it = until_by_node.erase(it);
    } else {
      nodes.insert(it->first);
      ++it;
    }
  }
  if (until_by_node.empty()) jobs_.erase(job);
  return nodes;
}

void NodeQuarantine::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  jobs_.erase(key);
}

}  // namespace wavepool::controller::internal
