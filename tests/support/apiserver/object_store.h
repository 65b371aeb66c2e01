// The test API server's state: every resource it serves and every object, with kube-apiserver's
// semantics (docs/kube.md, "The test API server"). The HTTP layer (http_server.h) only decodes
// requests, calls the store and encodes answers; everything a client can observe about objects
// is decided here:
//  - one global resourceVersion counter; every write gets the next value;
//  - uid, creationTimestamp, generation (1 on create, +1 when anything outside metadata and
//    status changes), generateName;
//  - optimistic concurrency (409 Conflict on a stale metadata.resourceVersion);
//  - the status subresource (the main resource ignores status changes, /status ignores the rest);
//  - CustomResourceDefinitions: creating one serves its resource (its status then says
//    Established and NamesAccepted); its schema's defaults are applied, unknown fields pruned and
//    the schema enforced (422 with field causes); deleting it removes its objects;
//  - namespaces: namespaced objects need an existing, non-terminating namespace; deleting a
//    namespace deletes what is in it; default, kube-system, kube-public and kube-node-lease exist;
//  - deletion: preconditions, finalizers and deletionTimestamp, graceful deletion of pods bound to
//    a node, ownerReference garbage collection (Background and Orphan propagation);
//  - label and field selectors, limit/continue paging;
//  - watches from any resourceVersion still in the bounded history (410 Expired before it), with
//    ADDED/MODIFIED/DELETED events (and DELETED/ADDED when an object leaves or enters a selector);
//  - persistence to a directory, so that a restarted server keeps its objects and its counter.
//
// ObjectStore is safe for concurrent use.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_OBJECT_STORE_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_OBJECT_STORE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/base/clock.h"

namespace wavepool::testing::apiserver {

// A served resource, as discovery lists it.
struct ResourceInfo {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  std::string plural;
  std::string singular;
  std::string list_kind;  // "PodList"
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string>
      verbs;  // create, delete, deletecollection, get, list, patch, update, watch
  bool status_subresource = false;
  // Resources served from a CustomResourceDefinition: its name, and the CRD's entry for this
  // version (schema.openAPIV3Schema, additionalPrinterColumns, subresources). Empty for built-ins.
  std::string crd_name;
  nlohmann::json crd_version;

  std::string GroupVersion() const;   // "v1", "wavepool.dev/v1alpha1"
  std::string GroupResource() const;  // "pods", "trainingjobs.wavepool.dev"
};

struct ListQuery {
  std::string label_selector;  // the full grammar: =, ==, !=, in, notin, exists, !key
  std::string field_selector;  // metadata.name, metadata.namespace, and per-kind fields
  std::string resource_version;
  std::string resource_version_match;  // "", "NotOlderThan", "Exact"
  std::int64_t limit = 0;
  std::string continue_token;
};

struct ListResult {
  std::string resource_version;
  std::string continue_token;
  std::optional<std::int64_t> remaining_item_count;
  std::vector<nlohmann::json> items;
};

enum class FieldValidation { kIgnore, kWarn, kStrict };

struct WriteOptions {
  bool dry_run = false;  // validate and answer, store nothing
  FieldValidation field_validation = FieldValidation::kWarn;
};

// A write's result: the object as stored, and warnings for the Warning header (unknown fields
// dropped under kWarn, ...).
struct WriteResult {
  nlohmann::json object;
  std::vector<std::string> warnings;
};

struct DeleteRequest {
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::optional<std::int64_t> grace_period_seconds;
  std::string propagation_policy;  // "" (the kind's default), Background, Foreground, Orphan
  bool dry_run = false;
};

struct DeleteResult {
  nlohmann::json object;  // the object as deleted, or as it now is while terminating
  bool removed = false;   // false: finalizers or a grace period keep it for now
};

enum class EventType { kAdded, kModified, kDeleted, kBookmark };

struct StoreEvent {
  EventType type = EventType::kAdded;
  nlohmann::json object;  // kBookmark: apiVersion, kind and metadata.resourceVersion only
  std::int64_t resource_version = 0;
};

// One watch. Next and Stop may be called from different threads.
class StoreWatch {
 public:
  virtual ~StoreWatch() = default;

  // The next event, waiting at most `wait`. nullopt: nothing happened in time (the HTTP layer
  // sends a bookmark when the client asked for them). Expired (410) when the watch's start is no
  // longer in the history. Aborted once DropWatches() cut this watch (the HTTP layer then breaks
  // the connection without ending the stream); Cancelled after Stop().
  virtual absl::StatusOr<std::optional<StoreEvent>> Next(std::chrono::milliseconds wait) = 0;

  // The resourceVersion a bookmark sent now would carry.
  virtual std::int64_t BookmarkVersion() const = 0;

  virtual void Stop() = 0;
};

class ObjectStore {
 public:
  struct Options {
    std::string data_dir;               // empty: memory only
    std::size_t history_size = 10'000;  // events kept for watches
    // Time for timestamps is the system clock; waits (graceful pod deletion) use this clock.
    Clock* clock = &RealClock();
    // A bound pod deleted with a grace period is removed when the period ends, standing in for
    // the kubelet that would confirm it; false leaves it terminating until a DELETE with
    // gracePeriodSeconds=0 (what a test's simulated kubelet sends).
    bool finish_pod_deletion_after_grace = true;
  };

  static absl::StatusOr<std::unique_ptr<ObjectStore>> Open(const Options& options);
  virtual ~ObjectStore() = default;

  // Served resources: the built-ins, then one per served version of every established CRD.
  virtual std::vector<ResourceInfo> Resources() const = 0;
  virtual std::optional<ResourceInfo> FindResource(std::string_view group, std::string_view version,
                                                   std::string_view plural) const = 0;

  // `ns`: the namespace for namespaced resources ("" in List and Watch: every namespace); ignored
  // for cluster-scoped ones.
  virtual absl::StatusOr<nlohmann::json> Get(const ResourceInfo& resource, std::string_view ns,
                                             std::string_view name) const = 0;
  virtual absl::StatusOr<ListResult> List(const ResourceInfo& resource, std::string_view ns,
                                          const ListQuery& query) const = 0;
  virtual absl::StatusOr<WriteResult> Create(const ResourceInfo& resource, std::string_view ns,
                                             nlohmann::json object,
                                             const WriteOptions& options) = 0;
  // PUT of the object (`subresource` "") or of its status ("status").
  virtual absl::StatusOr<WriteResult> Update(const ResourceInfo& resource, std::string_view ns,
                                             std::string_view name, nlohmann::json object,
                                             std::string_view subresource,
                                             const WriteOptions& options) = 0;
  // Read-modify-write without a window for another writer (how PATCH is applied): `mutate` gets
  // the current object and returns the new one, which is then written like an Update.
  using Mutation = std::function<absl::StatusOr<nlohmann::json>(const nlohmann::json& current)>;
  virtual absl::StatusOr<WriteResult> Modify(const ResourceInfo& resource, std::string_view ns,
                                             std::string_view name, std::string_view subresource,
                                             const Mutation& mutate,
                                             const WriteOptions& options) = 0;
  virtual absl::StatusOr<DeleteResult> Delete(const ResourceInfo& resource, std::string_view ns,
                                              std::string_view name,
                                              const DeleteRequest& request) = 0;
  virtual absl::StatusOr<std::unique_ptr<StoreWatch>> Watch(const ResourceInfo& resource,
                                                            std::string_view ns,
                                                            const ListQuery& query) = 0;

  // Fault injection. DropWatches cuts every open watch; Compact forgets the history, so that a
  // watch or a continue token from before now gets 410 Expired.
  virtual void DropWatches() = 0;
  virtual void Compact() = 0;
  virtual std::int64_t CurrentResourceVersion() const = 0;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_OBJECT_STORE_H_
