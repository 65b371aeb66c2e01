// A cache of informer objects decoded once per resourceVersion (DecodedCache), and what it
// keeps of each. Internal to the controller library.
#ifndef WAVEPOOL_CONTROLLER_SRC_CLUSTER_DECODED_CACHE_H_
#define WAVEPOOL_CONTROLLER_SRC_CLUSTER_DECODED_CACHE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/json_codec.h"
#include "wavepool/base/change_log.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/informer.h"

namespace wavepool::controller::internal {

// metadata.resourceVersion when it is a string; empty otherwise (the object is then decoded
// again, and T::FromJson names the field).
inline std::string ResourceVersionOf(const nlohmann::json& object) {
  return api::FieldAs<std::string>(api::FieldOrNull(object, "metadata"), "resourceVersion")
      .value_or("");
}

// What a decoded cache keeps of an object: all of it, except that pods and Services lose the JSON
// kept for re-encoding (kube::DropRawJson). The controller reads their typed fields only and
// never writes a cached one back, and that JSON was most of the cache's memory.
template <typename T>
void TrimForCache(T&) {}
inline void TrimForCache(kube::Pod& pod) { kube::DropRawJson(pod); }
inline void TrimForCache(kube::Service& service) { kube::DropRawJson(service); }

// Objects of one kind decoded once per resourceVersion, so that readers copy typed values
// instead of decoding JSON on every call (1,000 jobs and 100 GPUNodes are read on every
// placement decision), optionally indexed (the pods and Services of each job, by the informer's
// JobIndex keys "<namespace>/<wavepool.dev/job label>"). An object that does not decode is
// dropped and the error returned (for the log), so that no reader ever sees it. Safe for
// concurrent use.
template <typename T>
class DecodedCache {
 public:
  // The index keys of a decoded value, besides those Upsert is given (a TrainingJob's phase).
  using ValueIndex = std::function<std::vector<std::string>(const T&)>;

  DecodedCache() = default;
  explicit DecodedCache(ValueIndex value_index) : value_index_(std::move(value_index)) {}

  // Decodes `object` unless the entry under its key already has its resourceVersion, and files
  // it under `index_keys` and its value's own.
  absl::Status Upsert(const nlohmann::json& object, std::vector<std::string> index_keys = {}) {
    const std::string key = kube::ObjectKey(object);
    const std::string version = ResourceVersionOf(object);
    {
      absl::MutexLock lock(&mu_);
      const auto it = entries_.find(key);
      if (it != entries_.end() && !version.empty() && it->second.resource_version == version) {
        return absl::OkStatus();
      }
    }
    return Upsert(object, std::move(index_keys), T::FromJson(object));
  }
  // The same with `object` decoded already (`decoded`, T::FromJson's result), for a caller that
  // reads the decoded value too.
  absl::Status Upsert(const nlohmann::json& object, std::vector<std::string> index_keys,
                      absl::StatusOr<T> decoded) {
    const std::string key = kube::ObjectKey(object);
    if (decoded.ok()) TrimForCache(*decoded);
    absl::MutexLock lock(&mu_);
    RemoveLocked(key);
    if (!decoded.ok()) return decoded.status();
    if (value_index_) {
      for (std::string& index_key : value_index_(*decoded)) {
        index_keys.push_back(std::move(index_key));
      }
    }
    auto value = std::make_shared<const T>(*std::move(decoded));
    for (const std::string& index_key : index_keys) by_index_[index_key][key] = value;
    entries_[key] = Entry{ResourceVersionOf(object), std::move(value), std::move(index_keys)};
    return absl::OkStatus();
  }
  void Remove(const std::string& key) {
    absl::MutexLock lock(&mu_);
    RemoveLocked(key);
  }
  // The objects changed (upserted at a new resourceVersion, or removed) since `version`, for a
  // reader that keeps what it derives from them (ChangeLog).
  ChangeSet<T> ChangesSince(std::uint64_t version) const {
    absl::MutexLock lock(&mu_);
    ChangeSet<T> out;
    out.version = changes_.version();
    if (std::optional<std::vector<std::string>> keys = changes_.KeysSince(version)) {
      for (std::string& key : *keys) {
        const auto it = entries_.find(key);
        std::shared_ptr<const T> now = it == entries_.end() ? nullptr : it->second.value;
        out.changed.emplace_back(std::move(key), std::move(now));
      }
      return out;
    }
    out.complete = true;
    for (const auto& [key, entry] : entries_) out.changed.emplace_back(key, entry.value);
    return out;
  }
  std::optional<T> Get(const std::string& key) const {
    const std::shared_ptr<const T> value = Find(key);
    if (value == nullptr) return std::nullopt;
    return *value;
  }
  // The immutable value under `key`, shared, not copied; the same pointer until the entry
  // changes. nullptr when there is none.
  std::shared_ptr<const T> Find(const std::string& key) const {
    absl::MutexLock lock(&mu_);
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.value;
  }
  // By key.
  std::vector<T> List() const { return Copies(Values()); }
  // List() as one immutable value shared by every caller, copied once after each change: the
  // same pointer until an object is upserted at a new resourceVersion or removed, so a caller may
  // keep what it derives from the list under it.
  std::shared_ptr<const std::vector<T>> Snapshot() const {
    absl::MutexLock lock(&mu_);
    if (snapshot_ == nullptr) {
      auto list = std::make_shared<std::vector<T>>();
      list->reserve(entries_.size());
      for (const auto& [key, entry] : entries_) list->push_back(*entry.value);
      snapshot_ = std::move(list);
    }
    return snapshot_;
  }
  // The objects filed under `index_key`, by key.
  std::vector<T> Indexed(const std::string& index_key) const { return Copies(Values(&index_key)); }
  // Calls `visit` with every value (or those filed under `*index_key`), by key, outside the
  // lock: the values are immutable and shared, so none is copied.
  template <typename Visit>
  void ForEach(const Visit& visit, const std::string* index_key = nullptr) const {
    for (const auto& value : Values(index_key)) visit(*value);
  }

 private:
  struct Entry {
    std::string resource_version;
    std::shared_ptr<const T> value;  // immutable: copied outside the lock
    std::vector<std::string> index_keys;
  };

  // Every value, or those filed under `*index_key`.
  std::vector<std::shared_ptr<const T>> Values(const std::string* index_key = nullptr) const {
    absl::MutexLock lock(&mu_);
    std::vector<std::shared_ptr<const T>> values;
    if (index_key == nullptr) {
      values.reserve(entries_.size());
      for (const auto& [key, entry] : entries_) values.push_back(entry.value);
      return values;
    }
    const auto keys = by_index_.find(*index_key);
    if (keys == by_index_.end()) return values;
    values.reserve(keys->second.size());
    for (const auto& [key, value] : keys->second) values.push_back(value);
    return values;
  }
  static std::vector<T> Copies(const std::vector<std::shared_ptr<const T>>& values) {
    std::vector<T> out;
    out.reserve(values.size());
    for (const auto& value : values) out.push_back(*value);
    return out;
  }
  // Every change passes here (an upsert removes the old entry first).
  void RemoveLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    snapshot_.reset();
    changes_.Record(key);
    const auto it = entries_.find(key);
    if (it == entries_.end()) return;
    for (const std::string& index_key : it->second.index_keys) {
      const auto keys = by_index_.find(index_key);
      if (keys == by_index_.end()) continue;
      keys->second.erase(key);
      if (keys->second.empty()) by_index_.erase(keys);
    }
    entries_.erase(it);
  }

  const ValueIndex value_index_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Index key -> object key -> the entry's value.
  std::map<std::string, std::map<std::string, std::shared_ptr<const T>>> by_index_
      ABSL_GUARDED_BY(mu_);
  mutable std::shared_ptr<const std::vector<T>> snapshot_ ABSL_GUARDED_BY(mu_);  // Null: stale.
  ChangeLog changes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_CLUSTER_DECODED_CACHE_H_
