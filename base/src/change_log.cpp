#include "wavepool/base/change_log.h"

#include <unordered_set>

namespace wavepool {

void ChangeLog::Record(const std::string& key) {
  ++version_;
  keys_.push_back(key);
  if (keys_.size() > kept_) keys_.pop_front();
}

std::optional<std::vector<std::string>> ChangeLog::KeysSince(std::uint64_t version) const {
  if (version > version_ || version_ - version > keys_.size()) return std::nullopt;
  std::vector<std::string> keys;
  std::unordered_set<std::string> listed;
  for (auto it = keys_.end() - static_cast<std::ptrdiff_t>(version_ - version); it != keys_.end();
       ++it) {
    if (listed.insert(*it).second) keys.push_back(*it);
  }
  return keys;
}

}  // namespace wavepool
