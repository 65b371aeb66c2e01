// Deletion as kube-apiserver and the controllers behind it carry it out, done synchronously:
//  - preconditions (uid, resourceVersion) -> 409;
//  - finalizers keep an object, with deletionTimestamp set, until an update removes the last one;
//  - a pod bound to a node terminates gracefully (spec.terminationGracePeriodSeconds, 30 s by
//    default) until the kubelet confirms with gracePeriodSeconds=0, or the period ends here;
//  - ownerReference garbage collection (the garbage collector controller): Background removes the
//    owner, then every dependent whose owners are all gone, and strips references to the removed
//    owner from dependents that keep another; Foreground removes the dependents first (the owner
//    does not linger with a foregroundDeletion finalizer); Orphan strips the references;
//  - a deleted namespace turns Terminating, its contents are deleted, and it goes once empty
//    (the namespace controller).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/builtin_resources.h"
#include "tests/support/apiserver/store_impl.h"

namespace wavepool::testing::apiserver::store_internal {
namespace {

constexpr std::int64_t kDefaultPodGraceSeconds = 30;

bool HasFinalizers(const nlohmann::json& object) {
  const nlohmann::json& meta = object["metadata"];
  return meta.contains("finalizers") && meta["finalizers"].is_array() &&
         !meta["finalizers"].empty();
}

bool OwnedBy(const nlohmann::json& object, const std::string& uid) {
  const nlohmann::json& refs = object["metadata"].value("ownerReferences", nlohmann::json());
  if (!refs.is_array()) return false;
  return std::any_of(refs.begin(), refs.end(), [&](const nlohmann::json& ref) {
    return ref.is_object() && ref.value("uid", "") == uid;
  });
}

// The grace period a DELETE gives this object: bound, running pods only (pod strategy
// CheckGracefulDelete); everything else goes at once.
std::int64_t GracePeriodFor(const std::string& group_resource, const nlohmann::json& object,
                            const DeleteRequest& request) {
  if (group_resource != "pods") return 0;
  const nlohmann::json& spec = object.value("spec", nlohmann::json::object());
  const std::string phase = object.value("status", nlohmann::json::object()).value("phase", "");
  if (spec.value("nodeName", "").empty() || phase == "Succeeded" || phase == "Failed") return 0;
  if (request.grace_period_seconds.has_value()) {
    return std::max<std::int64_t>(0, *request.grace_period_seconds);
  }
  const nlohmann::json& from_spec = spec.value("terminationGracePeriodSeconds", nlohmann::json());
  return from_spec.is_number_integer() ? std::max<std::int64_t>(0, from_spec.get<std::int64_t>())
                                       : kDefaultPodGraceSeconds;
}

absl::Status CheckPreconditions(const std::string& gr, const std::string& name,
                                const nlohmann::json& object, const DeleteRequest& request) {
  const std::string uid = MetaString(object, "uid");
  if (!request.precondition_uid.empty() && request.precondition_uid != uid) {
    return ConflictFailure(gr, name,
                           absl::StrCat("Precondition failed: UID in precondition: ",
                                        request.precondition_uid, ", UID in object meta: ", uid));
  }
  const std::string rv = MetaString(object, "resourceVersion");
  if (!request.precondition_resource_version.empty() &&
      request.precondition_resource_version != rv) {
    return ConflictFailure(gr, name,
                           absl::StrCat("Precondition failed: ResourceVersion in precondition: ",
                                        request.precondition_resource_version,
                                        ", ResourceVersion in object meta: ", rv));
  }
  const std::string& policy = request.propagation_policy;
  if (!policy.empty() && policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    return InvalidFailure("DeleteOptions", "meta.k8s.io", "",
                          {{"FieldValueNotSupported", "propagationPolicy",
                            absl::StrCat("Unsupported value: \"", policy,
                                         "\": supported values: \"Foreground\", \"Background\", "
                                         "\"Orphan\"")}});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeleteResult> StoreImpl::Delete(const ResourceInfo& resource, std::string_view ns,
                                               std::string_view name,
                                               const DeleteRequest& request) {
  absl::MutexLock lock(&core_->mu);
  absl::StatusOr<ResourceInfo> info = ResolveLocked(*core_, resource);
  if (!info.ok()) return info.status();
  const std::string gr = info->GroupResource();
  const std::string key = ObjectKey(*info, ns, name);
  if (core_->objects[gr].count(key) == 0) return NotFoundFailure(gr, name);
  if (gr == "namespaces" && (name == "default" || name == "kube-system" || name == "kube-public")) {
    return ApiFailure(403, "Forbidden",
                      absl::StrCat("namespaces \"", std::string(name),
                                   "\" is forbidden: this namespace may not be deleted"),
                      {{"name", std::string(name)}, {"kind", "namespaces"}});
  }
  return DeleteLocked(*info, key, request);
}

absl::StatusOr<DeleteResult> StoreImpl::DeleteLocked(const ResourceInfo& info,
                                                     const std::string& key,
                                                     const DeleteRequest& request) {
  const std::string gr = info.GroupResource();
  nlohmann::json object = core_->objects[gr][key];
  const std::string name = MetaString(object, "name");
  if (absl::Status s = CheckPreconditions(gr, name, object, request); !s.ok()) return s;
  const std::int64_t grace = GracePeriodFor(gr, object, request);
  const bool terminating = !MetaString(object, "deletionTimestamp").empty();
  const std::int64_t current_grace =
      object["metadata"].value("deletionGracePeriodSeconds", std::int64_t{0});
  DeleteResult result;
  if (terminating) {
    // A second DELETE may only shorten a grace period; 0 removes the object unless finalizers
    // hold it (the kubelet's confirmation).
    if (grace >= current_grace) {
      result.object = AsServed(info, std::move(object));
      return result;
    }
    if (request.dry_run) {
      result.removed = grace == 0 && !HasFinalizers(object);
      result.object = AsServed(info, std::move(object));
      return result;
    }
    if (grace == 0 && !HasFinalizers(object)) {
      absl::StatusOr<nlohmann::json> gone = RemoveLocked(info, key, request.propagation_policy);
      if (!gone.ok()) return gone.status();
      result.removed = true;
      result.object = AsServed(info, *std::move(gone));
      return result;
    }
  }
  const bool keep = HasFinalizers(object) || grace > 0 || gr == "namespaces";
  if (request.dry_run) {
    if (keep) {
      Meta(object)["deletionTimestamp"] = TimestampFromNow(grace);
      Meta(object)["deletionGracePeriodSeconds"] = grace;
    }
    result.removed = !keep;
    result.object = AsServed(info, std::move(object));
    return result;
  }
  if (request.propagation_policy == "Orphan") OrphanDependentsLocked(MetaString(object, "uid"));
  if (!keep) {
    absl::StatusOr<nlohmann::json> gone = RemoveLocked(info, key, request.propagation_policy);
    if (!gone.ok()) return gone.status();
    result.removed = true;
    result.object = AsServed(info, *std::move(gone));
    return result;
  }
  nlohmann::json& meta = Meta(object);
  meta["deletionTimestamp"] = TimestampFromNow(grace);
  meta["deletionGracePeriodSeconds"] = grace;
  if (gr == "namespaces") object["status"]["phase"] = "Terminating";
  absl::StatusOr<nlohmann::json> stored = CommitPutLocked(*core_, gr, key, std::move(object));
  if (!stored.ok()) return stored.status();
  result.object = AsServed(info, *stored);
  if (grace > 0 && core_->options.finish_pod_deletion_after_grace) {
    ArmGraceTimerLocked(info, key, grace);
  }
  if (gr == "namespaces") {
    DeleteNamespaceContentsLocked(name);
    MaybeFinishNamespaceLocked(name);
    auto still = core_->objects[gr].find(key);
    result.removed = still == core_->objects[gr].end();
    if (!result.removed) result.object = AsServed(info, still->second);
  }
  return result;
}

absl::StatusOr<nlohmann::json> StoreImpl::RemoveLocked(const ResourceInfo& info,
                                                       const std::string& key,
                                                       const std::string& policy) {
  const std::string gr = info.GroupResource();
  const nlohmann::json object = core_->objects[gr][key];
  const std::string uid = MetaString(object, "uid");
  if (policy == "Foreground") DeleteDependentsLocked(uid);
  if (gr == kCrdResource) {  // its custom objects go first, then it stops being served
    const std::string plural = object["spec"]["names"].value("plural", "");
    const std::string instances = absl::StrCat(plural, ".", object["spec"].value("group", ""));
    std::vector<std::string> keys;
    for (const auto& [k, unused] : core_->objects[instances]) keys.push_back(k);
    for (const std::string& k : keys) {
      absl::StatusOr<nlohmann::json> gone = CommitRemoveLocked(*core_, instances, k);
      if (!gone.ok()) return gone.status();
    }
    UnserveCrdLocked(*core_, MetaString(object, "name"));
  }
  absl::StatusOr<nlohmann::json> gone = CommitRemoveLocked(*core_, gr, key);
  if (!gone.ok()) return gone;
  if (policy != "Orphan" && policy != "Foreground") DeleteDependentsLocked(uid);
  if (info.namespaced) MaybeFinishNamespaceLocked(MetaString(object, "namespace"));
  return gone;
}

void StoreImpl::DeleteDependentsLocked(const std::string& owner_uid) {
  // Collect first: deleting changes the maps being walked.
  std::vector<std::pair<std::string, std::string>> dependents;
  for (const auto& [gr, bucket] : core_->objects) {
    for (const auto& [key, object] : bucket) {
      if (OwnedBy(object, owner_uid)) dependents.emplace_back(gr, key);
    }
  }
  for (const auto& [gr, key] : dependents) {
    auto bucket = core_->objects.find(gr);
    if (bucket == core_->objects.end() || bucket->second.count(key) == 0) continue;
    nlohmann::json object = bucket->second[key];
    nlohmann::json remaining = nlohmann::json::array();
    bool owner_alive = false;
    for (const nlohmann::json& ref : object["metadata"]["ownerReferences"]) {
      if (ref.is_object() && ref.value("uid", "") == owner_uid) continue;
      remaining.push_back(ref);
      if (ref.is_object() && core_->by_uid.count(ref.value("uid", "")) != 0) owner_alive = true;
    }
    std::optional<ResourceInfo> info = InfoForStorageLocked(*core_, gr);
    if (!info.has_value()) continue;
    if (owner_alive) {  // another owner keeps it: only the dangling reference goes
      Meta(object)["ownerReferences"] = remaining;
      (void)CommitPutLocked(*core_, gr, key, std::move(object));
    } else {
      (void)DeleteLocked(*info, key, DeleteRequest{});
    }
  }
}

void StoreImpl::OrphanDependentsLocked(const std::string& owner_uid) {
  for (auto& [gr, bucket] : core_->objects) {
    std::vector<std::string> keys;
    for (const auto& [key, object] : bucket) {
      if (OwnedBy(object, owner_uid)) keys.push_back(key);
    }
    for (const std::string& key : keys) {
      nlohmann::json object = bucket[key];
      nlohmann::json& refs = Meta(object)["ownerReferences"];
      refs.erase(std::remove_if(refs.begin(), refs.end(),
                                [&](const nlohmann::json& ref) {
                                  return ref.is_object() && ref.value("uid", "") == owner_uid;
                                }),
                 refs.end());
      if (refs.empty()) Meta(object).erase("ownerReferences");
      (void)CommitPutLocked(*core_, gr, key, std::move(object));
    }
  }
}

void StoreImpl::DeleteNamespaceContentsLocked(const std::string& ns) {
  const std::string prefix = ns + "/";
  std::vector<std::pair<std::string, std::string>> contents;
  for (const auto& [gr, bucket] : core_->objects) {
    for (auto it = bucket.lower_bound(prefix); it != bucket.end(); ++it) {
      if (it->first.compare(0, prefix.size(), prefix) != 0) break;
      contents.emplace_back(gr, it->first);
    }
  }
  for (const auto& [gr, key] : contents) {
    if (core_->objects[gr].count(key) == 0) continue;  // gone with an owner already
    std::optional<ResourceInfo> info = InfoForStorageLocked(*core_, gr);
    if (info.has_value() && info->namespaced) (void)DeleteLocked(*info, key, DeleteRequest{});
  }
}

void StoreImpl::MaybeFinishNamespaceLocked(const std::string& ns) {
  auto& namespaces = core_->objects["namespaces"];
  auto it = namespaces.find(ns);
  if (it == namespaces.end() || MetaString(it->second, "deletionTimestamp").empty() ||
      HasFinalizers(it->second)) {
    return;
  }
  const std::string prefix = ns + "/";
  for (const auto& [gr, bucket] : core_->objects) {
    auto first = bucket.lower_bound(prefix);
    if (first != bucket.end() && first->first.compare(0, prefix.size(), prefix) == 0) return;
  }
  (void)CommitRemoveLocked(*core_, "namespaces", ns);
}

void StoreImpl::ArmGraceTimerLocked(const ResourceInfo& resource, const std::string& key,
                                    std::int64_t grace_seconds) {
  const nlohmann::json& object = core_->objects[resource.GroupResource()][key];
  core_->timers.push_back({core_->options.clock->Now() + std::chrono::seconds(grace_seconds),
                           resource.GroupResource(), key, MetaString(object, "uid")});
  ++timers_epoch_;
  core_->changed.SignalAll();
}

void StoreImpl::TimerLoop() {
  absl::MutexLock lock(&core_->mu);
  Clock& clock = *core_->options.clock;
  while (!core_->shutting_down) {
    MonotonicTime next = clock.Now() + std::chrono::hours(1);  // re-check now and then
    for (const GraceTimer& t : core_->timers) next = std::min(next, t.deadline);
    const std::uint64_t seen = timers_epoch_;
    const auto woken = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu) {
      return core_->shutting_down || timers_epoch_ != seen;
    };
    clock.WaitUntil(core_->mu, next, absl::Condition(&woken));
    if (core_->shutting_down) break;
    const MonotonicTime now = clock.Now();
    std::vector<GraceTimer> due;
    auto split = std::partition(core_->timers.begin(), core_->timers.end(),
                                [&](const GraceTimer& t) { return t.deadline > now; });
    due.assign(split, core_->timers.end());
    core_->timers.erase(split, core_->timers.end());
    for (const GraceTimer& t : due) {
      auto bucket = core_->objects.find(t.resource);
      if (bucket == core_->objects.end()) continue;
      auto it = bucket->second.find(t.key);
      if (it == bucket->second.end() || MetaString(it->second, "uid") != t.uid) continue;
      std::optional<ResourceInfo> info = InfoForStorageLocked(*core_, t.resource);
      if (!info.has_value()) continue;
      if (HasFinalizers(it->second)) {  // the grace is over; the finalizers still hold it
        nlohmann::json object = it->second;
        Meta(object)["deletionGracePeriodSeconds"] = 0;
        (void)CommitPutLocked(*core_, t.resource, t.key, std::move(object));
      } else {
        (void)RemoveLocked(*info, t.key, "");
      }
    }
  }
}

}  // namespace wavepool::testing::apiserver::store_internal
