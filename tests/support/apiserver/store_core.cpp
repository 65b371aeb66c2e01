// The store's commit path: every write takes the next value of the one resourceVersion counter,
// is persisted before it is visible, and is recorded for watches.
#include "tests/support/apiserver/store_core.h"

#include <chrono>
#include <ctime>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/builtin_resources.h"

namespace wavepool::testing::apiserver::store_internal {
namespace {

void RecordLocked(StoreCore& core, HistoryEntry entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
  core.history.push_back(std::move(entry));
  while (core.history.size() > core.options.history_size && !core.history.empty()) {
    core.history_floor = core.history.front().resource_version;
    core.history.pop_front();
  }
  core.changed.SignalAll();
}

}  // namespace

std::string ObjectKey(const ResourceInfo& resource, std::string_view ns, std::string_view name) {
  if (!resource.namespaced) return std::string(name);
  return absl::StrCat(std::string(ns), "/", std::string(name));
}

std::string MetaString(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto value = meta->find(field);
  if (value == meta->end() || !value->is_string()) return "";
  return value->get<std::string>();
}

nlohmann::json& Meta(nlohmann::json& object) {
  nlohmann::json& meta = object["metadata"];
  if (!meta.is_object()) meta = nlohmann::json::object();
  return meta;
}

std::string TimestampFromNow(std::int64_t seconds_from_now) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) +
                        static_cast<std::time_t>(seconds_from_now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::int64_t SecondsUntil(const std::string& timestamp) {
  std::tm tm{};
  if (strptime(timestamp.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return 0;
  const std::time_t then = timegm(&tm);
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return static_cast<std::int64_t>(then - now);
}

std::string NewUid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::uint64_t hi = rng(), lo = rng();
  // Version 4 (random) in the 13th hex digit, variant 10xx in the 17th (RFC 4122 §4.4).
  const std::uint64_t h = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  const std::uint64_t l = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", h >> 32, (h >> 16) & 0xFFFF, h & 0xFFFF,
                         l >> 48, l & 0xFFFFFFFFFFFFULL);
}

absl::StatusOr<ResourceInfo> ResolveLocked(const StoreCore& core, const ResourceInfo& resource) {
  if (resource.crd_name.empty()) {
    for (const ResourceInfo& builtin : BuiltinResources()) {
      if (builtin.group == resource.group && builtin.version == resource.version &&
          builtin.plural == resource.plural) {
        return builtin;
      }
    }
  } else {
    auto it =
        core.custom.find(absl::StrCat(resource.group, "/", resource.version, "/", resource.plural));
    if (it != core.custom.end()) return it->second.info;
  }
  return ApiFailure(404, "NotFound", "the server could not find the requested resource",
                    {{"group", resource.group}, {"kind", resource.plural}});
}

absl::StatusOr<nlohmann::json> CommitPutLocked(StoreCore& core, const std::string& resource,
                                               const std::string& key, nlohmann::json object) {
  const std::int64_t next = core.resource_version + 1;
  Meta(object)["resourceVersion"] = std::to_string(next);
  if (absl::Status s = PersistObject(core, resource, key, object); !s.ok()) return s;
  if (absl::Status s = PersistResourceVersion(core, next); !s.ok()) return s;
  core.resource_version = next;
  nlohmann::json& slot = core.objects[resource][key];
  nlohmann::json previous = std::move(slot);
  slot = object;
  core.by_uid[MetaString(object, "uid")] = {resource, key};
  const EventType type = previous.is_null() ? EventType::kAdded : EventType::kModified;
  RecordLocked(core, {next, resource, type, object, std::move(previous)});
  return object;
}

absl::StatusOr<nlohmann::json> CommitRemoveLocked(StoreCore& core, const std::string& resource,
                                                  const std::string& key) {
  auto bucket = core.objects.find(resource);
  if (bucket == core.objects.end() || bucket->second.count(key) == 0) {
    return absl::InternalError(absl::StrCat("no object ", key, " of ", resource, " to remove"));
  }
  const std::int64_t next = core.resource_version + 1;
  if (absl::Status s = PersistRemoval(core, resource, key); !s.ok()) return s;
  if (absl::Status s = PersistResourceVersion(core, next); !s.ok()) return s;
  core.resource_version = next;
  nlohmann::json previous = std::move(bucket->second[key]);
  bucket->second.erase(key);
  core.by_uid.erase(MetaString(previous, "uid"));
  nlohmann::json gone = previous;
  Meta(gone)["resourceVersion"] = std::to_string(next);
  RecordLocked(core, {next, resource, EventType::kDeleted, gone, std::move(previous)});
  return gone;
}

nlohmann::json AsServed(const ResourceInfo& resource, nlohmann::json object) {
  if (object.is_object()) {
    object["apiVersion"] = resource.GroupVersion();
    object["kind"] = resource.kind;
  }
  return object;
}

}  // namespace wavepool::testing::apiserver::store_internal
