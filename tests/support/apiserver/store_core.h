// The object store's internals, shared by its source files (object_store.cpp, store_delete.cpp,
// store_list.cpp, store_watch.cpp, store_persistence.cpp, custom_resources.cpp). Not a public
// header: everything here is guarded by StoreCore::mu unless said otherwise.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_STORE_CORE_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_STORE_CORE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/apiserver/structural_schema.h"

namespace wavepool::testing::apiserver::store_internal {

// One write, as watches replay it. `previous` is the object before the write (null for ADDED),
// so that a list at an older resourceVersion can be rebuilt by undoing later writes.
struct HistoryEntry {
  std::int64_t resource_version = 0;
  std::string resource;  // group resource, the storage key of the kind ("pods", "jobs.batch")
  EventType type = EventType::kAdded;
  nlohmann::json object;
  nlohmann::json previous;
};

// A bound pod being deleted gracefully: removed at `deadline` unless it is gone already.
struct GraceTimer {
  MonotonicTime deadline;
  std::string resource;
  std::string key;
  std::string uid;
};

// A served version of a CustomResourceDefinition and its parsed schema.
struct CustomVersion {
  ResourceInfo info;
  std::shared_ptr<const StructuralSchema> schema;
};

struct StoreCore {
  ObjectStore::Options options;

  mutable absl::Mutex mu;
  // Signalled on every write, DropWatches, watch Stop, new grace timers and shutdown (watches
  // wait on it; the grace-period thread waits for its own condition on mu).
  absl::CondVar changed;

  std::int64_t resource_version ABSL_GUARDED_BY(mu) = 1;
  // group resource -> object key ("ns/name" or "name") -> object, in key order (etcd's order).
  std::map<std::string, std::map<std::string, nlohmann::json>> objects ABSL_GUARDED_BY(mu);
  // uid -> (resource, key)
  std::map<std::string, std::pair<std::string, std::string>> by_uid ABSL_GUARDED_BY(mu);

  std::deque<HistoryEntry> history ABSL_GUARDED_BY(mu);
  // Watches and lists may start at any resourceVersion >= history_floor: every write after it is
  // still in `history`.
  std::int64_t history_floor ABSL_GUARDED_BY(mu) = 1;
  std::uint64_t drop_epoch ABSL_GUARDED_BY(mu) = 0;

  // Served custom resources, keyed by "group/version/plural".
  std::map<std::string, CustomVersion> custom ABSL_GUARDED_BY(mu);

  std::vector<GraceTimer> timers ABSL_GUARDED_BY(mu);
  bool shutting_down ABSL_GUARDED_BY(mu) = false;
  std::thread timer_thread;  // started by Initialize, joined by the destructor
};

// "ns/name" for namespaced resources, "name" for cluster-scoped ones.
std::string ObjectKey(const ResourceInfo& resource, std::string_view ns, std::string_view name);

// Small accessors for metadata fields ("" when absent or not a string).
std::string MetaString(const nlohmann::json& object, const char* field);
nlohmann::json& Meta(nlohmann::json& object);  // creates metadata when absent

// RFC 3339 in UTC to the second, as metav1.Time serialises ("2026-11-22T20:54:21Z"), for the
// system clock `seconds_from_now` from now.
std::string TimestampFromNow(std::int64_t seconds_from_now = 0);
// Seconds from now until an RFC 3339 timestamp (negative once past; 0 when unparsable).
std::int64_t SecondsUntil(const std::string& timestamp);
std::string NewUid();  // random UUID v4

// A served resource's info as it is now (CRD versions come and go): NotFound when it is not
// served.
absl::StatusOr<ResourceInfo> ResolveLocked(const StoreCore& core, const ResourceInfo& resource)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);

// Commits a create or update of `object` (already validated) under the next resourceVersion:
// persists it, stores it, indexes its uid, records history, wakes watchers. Returns the object as
// stored.
absl::StatusOr<nlohmann::json> CommitPutLocked(StoreCore& core, const std::string& resource,
                                               const std::string& key, nlohmann::json object)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);
// Removes an object under the next resourceVersion; returns it as the DELETED event carries it.
absl::StatusOr<nlohmann::json> CommitRemoveLocked(StoreCore& core, const std::string& resource,
                                                  const std::string& key)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);

// The object as a client of `resource` sees it (apiVersion of the version asked for).
nlohmann::json AsServed(const ResourceInfo& resource, nlohmann::json object);

// Persistence (store_persistence.cpp). Each is a no-op without a data_dir.
absl::Status PersistObject(const StoreCore& core, const std::string& resource,
                           const std::string& key, const nlohmann::json& object);
absl::Status PersistRemoval(const StoreCore& core, const std::string& resource,
                            const std::string& key);
absl::Status PersistResourceVersion(const StoreCore& core, std::int64_t resource_version);
// Loads objects and the counter from data_dir into `core` (before any CRD is served).
absl::Status LoadPersisted(StoreCore& core) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);

// Custom resources (custom_resources.cpp).
// Validates a CustomResourceDefinition and fills its status; InvalidFailure with causes.
absl::Status PrepareCrdLocked(const StoreCore& core, nlohmann::json& crd, bool creating)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);
// Serves the versions of a stored CRD (replacing what it served before).
void ServeCrdLocked(StoreCore& core, const nlohmann::json& crd)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);
void UnserveCrdLocked(StoreCore& core, const std::string& crd_name)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);
// Defaults, prunes (warnings or a strict-decoding 400) and validates a custom object; `old`, on
// an update, is the stored object (StructuralSchema::Validate: rules ratchet).
absl::Status ApplySchemaLocked(const StoreCore& core, const ResourceInfo& resource,
                               nlohmann::json& object, FieldValidation validation,
                               std::vector<std::string>& warnings,
                               const nlohmann::json* old = nullptr)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);

}  // namespace wavepool::testing::apiserver::store_internal

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STORE_CORE_H_
