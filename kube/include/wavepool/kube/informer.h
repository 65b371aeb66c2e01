// A cache of one resource type that stays current, and tells handlers what changed: client-go's
// tools/cache (Reflector, thread-safe indexed Store, SharedInformer).
//
//   SharedInformer::Options options;
//   options.ns = "team-a";
//   SharedInformer informer(client, kPods, options);
//   ResourceEventHandlers handlers;
//   handlers.on_add = [&](const nlohmann::json& pod) { queue.Add(ObjectKey(pod)); };
//   informer.AddEventHandler(handlers);
//   informer.Run();
//   informer.WaitForSync(std::chrono::seconds(30));
//   auto pods = informer.store().ByIndex(kNamespaceIndex, "team-a");
//
// The reflector lists (every page) and then watches from the list's resourceVersion with
// bookmarks, keeping the last resourceVersion it saw (bookmarks move it on too). A watch that
// the server ends is started again at once from there; one that breaks, or cannot be opened, is
// started again after a backoff (options.initial_backoff, doubling up to options.max_backoff while
// watches cannot even be opened). 410 Gone (the version left the server's history) makes it list
// again and replace the store: objects that changed are delivered as updates, objects that are gone
// as deletes carrying their last known state (what client-go wraps as DeletedFinalStateUnknown).
#ifndef WAVEPOOL_KUBE_INFORMER_H_
#define WAVEPOOL_KUBE_INFORMER_H_

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
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "wavepool/base/clock.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/resource.h"

namespace wavepool::kube {

// The store's key of an object: "namespace/name", or "name" for cluster-scoped objects (client-go's
// MetaNamespaceKeyFunc).
std::string ObjectKey(const nlohmann::json& object);

// A label selector in the API's grammar: "a=b,c==d,e!=f,g in (x,y),h notin (z),i,!j". A plain
// value; safe to share once built.
class LabelSelector {
 public:
  // InvalidArgument naming the bad requirement. An empty text selects everything.
  static absl::StatusOr<LabelSelector> Parse(std::string_view text);

  // `labels` is metadata.labels (null or absent: no labels).
  bool Matches(const nlohmann::json& labels) const;

 private:
  enum class Op { kIn, kNotIn, kExists, kNotExists };  // "=" is "in" with one value
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::set<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

// Index functions map an object to the index values it is found under.
using IndexFunc = std::function<std::vector<std::string>(const nlohmann::json& object)>;
inline constexpr char kNamespaceIndex[] = "namespace";  // metadata.namespace
inline constexpr char kLabelIndex[] = "label";          // "key=value" for every label

// Objects by key, with indexes. Safe for concurrent use; readers get copies. Every Store has the
// namespace and label indexes.
class Store {
 public:
  Store();

  // AlreadyExists when `name` is taken. Objects already stored are indexed at once.
  absl::Status AddIndexer(const std::string& name, IndexFunc index);

  std::optional<nlohmann::json> Get(const std::string& key) const;
  std::vector<std::string> ListKeys() const;  // sorted
  std::vector<nlohmann::json> List() const;   // by key
  // InvalidArgument for a selector that does not parse.
  absl::StatusOr<std::vector<nlohmann::json>> List(std::string_view label_selector) const;
  // The objects whose index `index` yields `value`, by key; NotFound for an unknown index.
  absl::StatusOr<std::vector<nlohmann::json>> ByIndex(const std::string& index,
                                                      const std::string& value) const;
  // ByIndex(kLabelIndex, "key=value").
  std::vector<nlohmann::json> ByLabel(const std::string& key, const std::string& value) const;
  std::size_t size() const;

  // Writes (the informer's). Each returns the object stored under the key before, if any.
  std::optional<nlohmann::json> Upsert(nlohmann::json object);
  std::optional<nlohmann::json> Remove(const std::string& key);

 private:
  struct Index {
    IndexFunc func;
    std::map<std::string, std::set<std::string>> keys_by_value;
  };
  void IndexLocked(const std::string& key, const nlohmann::json& object, bool add)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, nlohmann::json> items_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Index> indexes_ ABSL_GUARDED_BY(mu_);
};

// What an informer's handlers are told. Any member may be empty.
struct ResourceEventHandlers {
  std::function<void(const nlohmann::json& object)> on_add;
  // Also called every resync period with old == new for every object.
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& new_object)> on_update;
  // The object's final state, or its last known one when a re-list found it gone.
  std::function<void(const nlohmann::json& object)> on_delete;
  // Once, after the first list's adds were handed to every handler; HasSynced() is true by then.
  // Lets a caller wait on its own condition for the caches rather than poll HasSynced.
  std::function<void()> on_synced;
};

// One resource type in one namespace (or all), optionally narrowed by selectors. Safe for
// concurrent use. Run starts two threads (the reflector and the one that calls handlers, in order,
// never concurrently); Stop (and the destructor) ends and joins them. `client` outlives it.
class SharedInformer {
 public:
  struct Options {
    std::string ns;  // "": every namespace (ignored for cluster-scoped types)
    std::string label_selector;
    std::string field_selector;
    std::chrono::nanoseconds resync_period{0};  // 0: never
    std::int64_t page_size = 500;
    std::chrono::seconds watch_timeout{300};  // each watch request's timeoutSeconds
    std::chrono::nanoseconds initial_backoff = std::chrono::milliseconds(800);
    std::chrono::nanoseconds max_backoff = std::chrono::seconds(30);
    Clock* clock = &RealClock();  // resyncs, backoffs and WaitForSync; outlives the informer
    std::function<void(std::string_view)> log;  // empty: standard error
    // What the store keeps of each object, so that a cache of large objects whose handlers keep
    // what they need stays small (client-go's SetTransform, which there changes what handlers see
    // too). Handlers still get each added, updated or watch-deleted object whole; an update's old
    // object, a delete found by a re-list and a resync's objects are the kept form, and indexes
    // and store reads see only it. Whatever it returns, the informer keeps the object's kind,
    // apiVersion and metadata.name, namespace and resourceVersion. Must not throw. Empty: the
    // whole object.
    std::function<nlohmann::json(const nlohmann::json&)> store_transform;
  };

  SharedInformer(Client& client, ResourceType type, Options options);
  ~SharedInformer();

  SharedInformer(const SharedInformer&) = delete;
  SharedInformer& operator=(const SharedInformer&) = delete;

  // FailedPrecondition once Run was called.
  absl::Status AddEventHandler(ResourceEventHandlers handlers);
  // FailedPrecondition once Run was called; AlreadyExists for a taken name.
  absl::Status AddIndexer(const std::string& name, IndexFunc index);

  const Store& store() const { return store_; }
  const ResourceType& type() const { return type_; }

  // Starts the reflector and the handler thread; returns at once. A second call does nothing.
  void Run();
  // Stops both threads; no handler runs after it returns. A request in flight (a list) is waited
  // for, at most the client's request timeout. REQUIRES: not called from a handler.
  void Stop();

  // True once the first list is in the store and its adds were handed to every handler.
  bool HasSynced() const;
  // Waits (on the clock) until HasSynced or `timeout`; returns HasSynced().
  bool WaitForSync(std::chrono::nanoseconds timeout);
  // The resourceVersion the next watch would start from ("" before the first list).
  std::string LastSyncResourceVersion() const;

 private:
  enum class NoticeType { kAdd, kUpdate, kDelete, kSynced };
  struct Notice {
    NoticeType type;
    nlohmann::json old_object;
    nlohmann::json object;
  };

  // The reflector (informer.cpp).
  void ReflectorLoop();
  absl::Status ListAndReplace();
  absl::Status WatchOnce();
  void ApplyEvent(const WatchEvent& event);
  // What the store keeps of `object` (Options::store_transform).
  nlohmann::json StoredForm(const nlohmann::json& object) const;
  bool WaitForBackoff(std::chrono::nanoseconds delay);
  void Log(std::string_view message) const;

  // The handler thread.
  void Enqueue(Notice notice);
  void DispatchLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void Deliver(const Notice& notice) ABSL_LOCKS_EXCLUDED(mu_);
  void Resync() ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  Client& client_;
  const ResourceType type_;
  const Options options_;
  Clock& clock_;

  Store store_;
  std::vector<ResourceEventHandlers> handlers_;  // fixed once running

  // Waits on mu_: stop, synced, new notices.
  mutable absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  bool listed_once_ = false;   // reflector thread only
  bool watch_opened_ = false;  // reflector thread only: the last watch was open
  std::string last_resource_version_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<WatchStream> watch_ ABSL_GUARDED_BY(mu_);  // the watch being read
  std::deque<Notice> notices_ ABSL_GUARDED_BY(mu_);
  std::thread reflector_;
  std::thread dispatcher_;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_INFORMER_H_
