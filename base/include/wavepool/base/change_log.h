// ChangeLog: numbers the changes to a set of keyed objects and remembers the keys of the latest
// ones, so that a reader who keeps something derived from the objects (the controller's
// placement inventory, its list of gangs being created) asks what changed since it last looked
// instead of reading every object again.
//
// Not synchronised: the owner records and reads under its own lock.
#ifndef WAVEPOOL_BASE_CHANGE_LOG_H_
#define WAVEPOOL_BASE_CHANGE_LOG_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wavepool {

class ChangeLog {
 public:
  // Remembers the keys of the last `kept` changes. REQUIRES: kept > 0.
  explicit ChangeLog(std::size_t kept = kDefaultKept) : kept_(kept) {}

  // Numbers one change to the object of `key`.
  void Record(const std::string& key);

  // The number of the latest change; 0 before the first.
  std::uint64_t version() const { return version_; }

  // The distinct keys changed after `version` (a value version() gave), in the order of their
  // first change since; nullopt when the log no longer reaches back that far, or `version` is
  // not one it gave: the reader must then read every object again.
  std::optional<std::vector<std::string>> KeysSince(std::uint64_t version) const;

  static constexpr std::size_t kDefaultKept = std::size_t{1} << 16;

 private:
  const std::size_t kept_;
  std::uint64_t version_ = 0;
  std::deque<std::string> keys_;  // Changes version_ - size + 1 to version_, oldest first.
};

// What an owner of a ChangeLog answers a reader: the objects changed since the version asked
// about, each as it is now.
template <typename T>
struct ChangeSet {
  std::uint64_t version = 0;  // Ask for the changes since this one next time.
  // True: `changed` lists every object and there are no others (the log did not reach back to
  // the version asked about). False: only the objects that changed.
  bool complete = false;
  // Key -> the object now; nullptr when it is gone.
  std::vector<std::pair<std::string, std::shared_ptr<const T>>> changed;
};

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_CHANGE_LOG_H_
