// EventRecorder: client-go's tools/record (recorder, EventCorrelator's de-duplication, the
// sink's create-or-patch), with one writer thread.
#include "wavepool/kube/event_recorder.h"

#include <ctime>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::kube {
namespace {

// metav1.Time: RFC 3339 in whole seconds, "2026-11-22T20:51:41Z".
std::string FormatTime(WallTime time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string StringField(const nlohmann::json& object, const char* field) {
  return api::FieldAs<std::string>(object, field).value_or("");
}

// The ObjectReference of an object, or of a reference given as one.
nlohmann::json ReferenceTo(const nlohmann::json& object) {
  if (!object.is_object()) return nlohmann::json::object();
  const nlohmann::json& metadata = api::FieldOrNull(object, "metadata");
  const nlohmann::json& meta = metadata.is_object() ? metadata : object;
  nlohmann::json reference = nlohmann::json::object();
  const auto put = [&](const char* field, const std::string& value) {
    if (!value.empty()) reference[field] = value;
  };
  put("apiVersion", StringField(object, "apiVersion"));
  put("kind", StringField(object, "kind"));
  put("namespace", StringField(meta, "namespace"));
  put("name", StringField(meta, "name"));
  put("uid", StringField(meta, "uid"));
  put("resourceVersion", StringField(meta, "resourceVersion"));
  put("fieldPath", StringField(object, "fieldPath"));
  return reference;
}

}  // namespace

EventRecorder::EventRecorder(Client& client, std::string component, std::string host)
    : EventRecorder(client, std::move(component), std::move(host), Options{}) {}

EventRecorder::EventRecorder(Client& client, std::string component, std::string host,
                             Options options)
    : client_(client),
      component_(std::move(component)),
      host_(std::move(host)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : RealClock()) {
  thread_ = std::thread([this] { Loop(); });
}

EventRecorder::~EventRecorder() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void EventRecorder::Event(const nlohmann::json& object, EventType type, std::string_view reason,
                          std::string_view message) {
  Pending pending{ReferenceTo(object), type == EventType::kWarning ? "Warning" : "Normal",
                  std::string(reason), std::string(message), clock_.WallNow()};
  const std::string name = StringField(pending.involved, "name");
  absl::ReleasableMutexLock lock(&mu_);
  if (name.empty() || queue_.size() >= options_.queue_capacity || stopping_) {
    ++dropped_;
    lock.Release();
    Log(absl::StrCat("dropped event ", pending.reason, " (",
                     name.empty() ? "the object has no name" : "the queue is full",
                     "): ", pending.message));
    return;
  }
  queue_.push_back(std::move(pending));
  ++queued_total_;
}

void EventRecorder::Flush() {
  absl::MutexLock lock(&mu_);
  const std::uint64_t target = queued_total_;
  const auto written = [this, target]()
                           ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_total_ >= target; };
  mu_.Await(absl::Condition(&written));
}

std::size_t EventRecorder::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

void EventRecorder::Log(std::string_view message) const {
  const std::string line = absl::StrCat("event recorder ", component_, ": ", std::string(message));
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << line << "\n";
  }
}

void EventRecorder::Loop() {
  absl::MutexLock lock(&mu_);
  const auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !queue_.empty();
  };
  for (;;) {
    mu_.Await(absl::Condition(&woken));
    if (queue_.empty()) return;  // stopping, and everything queued was written
    Pending pending = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    Write(pending);
    mu_.Lock();
    ++done_total_;
  }
}

void EventRecorder::Write(const Pending& p) {
  // client-go's getEventKey: source, involved object, type, reason and message.
  const nlohmann::json& ref = p.involved;
  const std::string key = absl::StrCat(
      component_, "\x1f", host_, "\x1f", StringField(ref, "kind"), "\x1f",
      StringField(ref, "namespace"), "\x1f", StringField(ref, "name"), "\x1f",
      StringField(ref, "fieldPath"), "\x1f", StringField(ref, "uid"), "\x1f",
      StringField(ref, "apiVersion"), "\x1f", p.type, "\x1f", p.reason, "\x1f", p.message);
  const auto seen = recorded_.find(key);
  if (seen == recorded_.end()) {
    Create(p, key);
    return;
  }
  Recorded recorded = seen->second;
  const nlohmann::json patch = {{"count", recorded.count + 1},
                                {"lastTimestamp", FormatTime(p.time)}};
  absl::StatusOr<nlohmann::json> patched =
      client_.Patch(kEvents, recorded.ns, recorded.name, PatchType::kMerge, patch);
  if (patched.ok()) {
    recorded.count = patched->value("count", recorded.count + 1);
    Remember(key, recorded);
    return;
  }
  if (kube::IsNotFound(patched.status())) {
    recorded_.erase(seen);  // Remember below re-inserts; drop the stale LRU entry first
    lru_.erase(recorded.lru);
    Create(p, key);
    return;
  }
  Log(absl::StrCat("patching event ", recorded.ns, "/", recorded.name,
                   " failed: ", patched.status().ToString()));
}

bool EventRecorder::Create(const Pending& p, const std::string& key) {
  std::string ns = StringField(p.involved, "namespace");
  if (ns.empty()) ns = "default";  // cluster-scoped objects: client-go's metav1.NamespaceDefault
  const std::string object_name = StringField(p.involved, "name");
  const std::string timestamp = FormatTime(p.time);
  const nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", NextName(object_name, p.time)}, {"namespace", ns}}},
      {"involvedObject", p.involved},
      {"type", p.type},
      {"reason", p.reason},
      {"message", p.message},
      {"source", {{"component", component_}, {"host", host_}}},
      {"reportingComponent", component_},
      {"reportingInstance", host_},
      {"firstTimestamp", timestamp},
      {"lastTimestamp", timestamp},
      {"count", 1}};
  absl::StatusOr<nlohmann::json> created = client_.Create(kEvents, event);
  if (!created.ok()) {
    Log(absl::StrCat("creating event ", p.reason, " for ", ns, "/", object_name,
                     " failed: ", created.status().ToString()));
    return false;
  }
  Recorded recorded;
  recorded.ns = ns;
  recorded.name = (*created)["metadata"].value("name", "");
  recorded.count = 1;
  const auto seen = recorded_.find(key);
  if (seen != recorded_.end()) {
    lru_.erase(seen->second.lru);
    recorded_.erase(seen);
  }
  Remember(key, recorded);
  return true;
}

std::string EventRecorder::NextName(const std::string& object_name, WallTime time) {
  // client-go names Events "<name>.<UnixNano in hex>"; two in the same nanosecond get the next.
  std::int64_t nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
  if (nanos <= last_name_nanos_) nanos = last_name_nanos_ + 1;
  last_name_nanos_ = nanos;
  return absl::StrFormat("%s.%x", object_name, static_cast<std::uint64_t>(nanos));
}

void EventRecorder::Remember(const std::string& key, Recorded recorded) {
  const auto seen = recorded_.find(key);
  if (seen != recorded_.end()) lru_.erase(seen->second.lru);
  lru_.push_front(key);
  recorded.lru = lru_.begin();
  recorded_[key] = std::move(recorded);
  while (recorded_.size() > options_.cache_size && !lru_.empty()) {
    recorded_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace wavepool::kube
