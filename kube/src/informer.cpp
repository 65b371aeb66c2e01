// SharedInformer: the reflector (list, then watch from the list's resourceVersion) and the thread
// that hands changes to the handlers (client-go tools/cache reflector.go, shared_informer.go).
#include "wavepool/kube/informer.h"

#include <algorithm>
#include <iostream>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::kube {
namespace {

// A wait with nothing scheduled still ends now and then, keeping deadlines far from the end of
// the clock's range.
constexpr std::chrono::hours kIdleWait(1);

// metadata.resourceVersion when it is a string; "" otherwise.
std::string ResourceVersionOf(const nlohmann::json& object) {
  return api::FieldAs<std::string>(api::FieldOrNull(object, "metadata"), "resourceVersion")
      .value_or("");
}

}  // namespace

SharedInformer::SharedInformer(Client& client, ResourceType type, Options options)
    : client_(client),
      type_(std::move(type)),
      options_(std::move(options)),
      clock_(*options_.clock) {}

SharedInformer::~SharedInformer() { Stop(); }

absl::Status SharedInformer::AddEventHandler(ResourceEventHandlers handlers) {
  absl::MutexLock lock(&mu_);
  if (running_) {
    return absl::FailedPreconditionError(
        absl::StrCat("informer for ", type_.plural, ": add handlers before Run"));
  }
  handlers_.push_back(std::move(handlers));
  return absl::OkStatus();
}

absl::Status SharedInformer::AddIndexer(const std::string& name, IndexFunc index) {
  {
    absl::MutexLock lock(&mu_);
    if (running_) {
      return absl::FailedPreconditionError(
          absl::StrCat("informer for ", type_.plural, ": add indexers before Run"));
    }
  }
  return store_.AddIndexer(name, std::move(index));
}

void SharedInformer::Run() {
  absl::MutexLock lock(&mu_);
  if (running_ || stopping_) return;
  running_ = true;
  reflector_ = std::thread([this] { ReflectorLoop(); });
  dispatcher_ = std::thread([this] { DispatchLoop(); });
}

void SharedInformer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (watch_) watch_->Stop();
  }
  if (reflector_.joinable()) reflector_.join();
  if (dispatcher_.joinable()) dispatcher_.join();
}

bool SharedInformer::HasSynced() const {
  absl::MutexLock lock(&mu_);
  return synced_;
}

bool SharedInformer::WaitForSync(std::chrono::nanoseconds timeout) {
  absl::MutexLock lock(&mu_);
  const MonotonicTime deadline = clock_.Now() + timeout;
  const auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return synced_ || stopping_; };
  return clock_.WaitUntil(mu_, deadline, absl::Condition(&ended)) && synced_;
}

std::string SharedInformer::LastSyncResourceVersion() const {
  absl::MutexLock lock(&mu_);
  return last_resource_version_;
}

void SharedInformer::Log(std::string_view message) const {
  const std::string line = absl::StrCat("informer ", type_.plural, ": ", std::string(message));
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << line << "\n";
  }
}

bool SharedInformer::WaitForBackoff(std::chrono::nanoseconds delay) {
  absl::MutexLock lock(&mu_);
  clock_.WaitUntil(mu_, clock_.Now() + delay, absl::Condition(&stopping_));
  return !stopping_;
}

void SharedInformer::ReflectorLoop() {
  bool need_list = true;
  std::chrono::nanoseconds backoff = options_.initial_backoff;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    absl::Status status = need_list ? ListAndReplace() : WatchOnce();
    if (status.ok()) {
      // A list, or a watch the server ended: watch (again) from the last version at once.
      need_list = false;
      backoff = options_.initial_backoff;
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;  // the failure is Stop() cancelling the watch
    }
    if (IsGone(status)) {
      // The version left the server's history: only a new list can catch up.
      Log(absl::StrCat("resourceVersion too old, listing again: ", status.ToString()));
      need_list = true;
      continue;
    }
    // A watch that was open before it broke starts the backoff over (client-go resets its
    // backoff after a healthy stretch); repeated failures to open one keep doubling it.
    if (!need_list && watch_opened_) backoff = options_.initial_backoff;
    Log(absl::StrCat(need_list ? "list" : "watch", " failed, retrying in ",
                     std::chrono::duration<double>(backoff).count(), " s: ", status.ToString()));
    if (!WaitForBackoff(backoff)) return;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

absl::Status SharedInformer::ListAndReplace() {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  absl::StatusOr<ObjectList> list = client_.ListAll(type_, options_.ns, list_options);
  // A continue token that expired mid-way is no reason to wait: start the list over.
  if (!list.ok() && IsGone(list.status())) {
    list = client_.ListAll(type_, options_.ns, list_options);
  }
  if (!list.ok()) return list.status();

  std::set<std::string> listed;
  for (nlohmann::json& item : list->items) {
    // List items carry no kind; watch events do. Make both look alike to handlers.
    if (!item.contains("kind")) item["kind"] = type_.kind;
    if (!item.contains("apiVersion")) item["apiVersion"] = type_.ApiVersion();
    const std::string key = ObjectKey(item);
    listed.insert(key);
    const std::string version = ResourceVersionOf(item);
    std::optional<nlohmann::json> old = store_.Upsert(StoredForm(item));
    if (!old) {
      Enqueue({NoticeType::kAdd, nullptr, std::move(item)});
    } else if (ResourceVersionOf(*old) != version) {
      Enqueue({NoticeType::kUpdate, std::move(*old), std::move(item)});
    }
  }
  // Whatever the list no longer has was deleted while no watch was looking.
  for (const std::string& key : store_.ListKeys()) {
    if (listed.count(key) > 0) continue;
    if (std::optional<nlohmann::json> gone = store_.Remove(key)) {
      Enqueue({NoticeType::kDelete, nullptr, std::move(*gone)});
    }
  }
  {
    absl::MutexLock lock(&mu_);
    last_resource_version_ = list->resource_version;
  }
  if (!listed_once_) {
    listed_once_ = true;
    Enqueue({NoticeType::kSynced, nullptr, nullptr});
  }
  return absl::OkStatus();
}

absl::Status SharedInformer::WatchOnce() {
  ListOptions watch_options;
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.resource_version = LastSyncResourceVersion();
  watch_options.timeout = options_.watch_timeout;
  watch_options.allow_watch_bookmarks = true;
  watch_opened_ = false;
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WatchStream> stream,
                            client_.Watch(type_, options_.ns, watch_options));
  watch_opened_ = true;

  WatchStream* watch = stream.get();
  {
    absl::MutexLock lock(&mu_);
    watch_ = std::move(stream);
    if (stopping_) watch_->Stop();  // Stop() came between the request and now
  }
  absl::Status result;
  for (;;) {
    absl::StatusOr<std::optional<WatchEvent>> event = watch->Next();
    if (!event.ok()) {
      result = event.status();
      break;
    }
    if (!event->has_value()) break;  // the server ended the stream
    ApplyEvent(**event);
  }
  absl::MutexLock lock(&mu_);
  watch_.reset();
  return result;
}

void SharedInformer::ApplyEvent(const WatchEvent& event) {
  const std::string version = ResourceVersionOf(event.object);
  switch (event.type) {
    case WatchEventType::kAdded:
    case WatchEventType::kModified: {
      std::optional<nlohmann::json> old = store_.Upsert(StoredForm(event.object));
      if (old) {
        Enqueue({NoticeType::kUpdate, std::move(*old), event.object});
      } else {
        Enqueue({NoticeType::kAdd, nullptr, event.object});
      }
      break;
    }
    case WatchEventType::kDeleted:
      store_.Remove(ObjectKey(event.object));
      Enqueue({NoticeType::kDelete, nullptr, event.object});
      break;
    case WatchEventType::kBookmark:
    case WatchEventType::kError:
      break;
  }
  if (!version.empty()) {
    absl::MutexLock lock(&mu_);
    last_resource_version_ = version;
  }
}

nlohmann::json SharedInformer::StoredForm(const nlohmann::json& object) const {
  if (!options_.store_transform) return object;
  nlohmann::json stored = options_.store_transform(object);
  if (!stored.is_object()) stored = nlohmann::json::object();
  // What the informer itself reads: the key, the version a re-list compares, and what handlers
  // are told the object is.
  for (const char* field : {"kind", "apiVersion"}) {
    const nlohmann::json& value = api::FieldOrNull(object, field);
    if (!value.is_null()) stored[field] = value;
  }
  const nlohmann::json& meta = api::FieldOrNull(object, "metadata");
  if (!meta.is_object()) return stored;
  nlohmann::json& stored_meta = stored["metadata"];
  if (!stored_meta.is_object()) stored_meta = nlohmann::json::object();
  for (const char* field : {"name", "namespace", "resourceVersion"}) {
    const nlohmann::json& value = api::FieldOrNull(meta, field);
    if (!value.is_null()) stored_meta[field] = value;
  }
  return stored;
}

void SharedInformer::Enqueue(Notice notice) {
  {
    absl::MutexLock lock(&mu_);
    notices_.push_back(std::move(notice));
  }
}

void SharedInformer::DispatchLoop() {
  const bool resyncs = options_.resync_period.count() > 0;
  MonotonicTime next_resync = clock_.Now() + options_.resync_period;
  absl::MutexLock lock(&mu_);
  const auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !notices_.empty();
  };
  for (;;) {
    const MonotonicTime now = clock_.Now();
    const MonotonicTime deadline = resyncs ? next_resync : now + kIdleWait;
    clock_.WaitUntil(mu_, deadline, absl::Condition(&woken));
    if (stopping_) return;
    if (!notices_.empty()) {
      Notice notice = std::move(notices_.front());
      notices_.pop_front();
      mu_.Unlock();
      Deliver(notice);
      mu_.Lock();
      continue;
    }
    if (resyncs && clock_.Now() >= next_resync) {
      mu_.Unlock();
      Resync();
      mu_.Lock();
      next_resync = clock_.Now() + options_.resync_period;
    }
  }
}

void SharedInformer::Deliver(const Notice& notice) {
  if (notice.type == NoticeType::kSynced) {
    {
      absl::MutexLock lock(&mu_);
      synced_ = true;
    }
    for (const ResourceEventHandlers& handlers : handlers_) {
      if (handlers.on_synced) handlers.on_synced();
    }
    return;
  }
  for (const ResourceEventHandlers& handlers : handlers_) {
    switch (notice.type) {
      case NoticeType::kAdd:
        if (handlers.on_add) handlers.on_add(notice.object);
        break;
      case NoticeType::kUpdate:
        if (handlers.on_update) handlers.on_update(notice.old_object, notice.object);
        break;
      case NoticeType::kDelete:
        if (handlers.on_delete) handlers.on_delete(notice.object);
        break;
      case NoticeType::kSynced:
        break;
    }
  }
}

void SharedInformer::Resync() {
  // Level-based controllers look at everything again now and then (client-go's resync).
  for (const nlohmann::json& object : store_.List()) {
    for (const ResourceEventHandlers& handlers : handlers_) {
      if (handlers.on_update) handlers.on_update(object, object);
    }
  }
}

}  // namespace wavepool::kube
