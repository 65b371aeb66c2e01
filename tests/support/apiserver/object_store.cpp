// Reads and writes: the create and update strategies kube-apiserver applies to every object
// (pkg/registry/rest BeforeCreate/BeforeUpdate) and to the built-ins this server knows.
#include "tests/support/apiserver/object_store.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/builtin_resources.h"
#include "tests/support/apiserver/names.h"
#include "tests/support/apiserver/store_impl.h"

namespace wavepool::testing::apiserver {
namespace store_internal {
namespace {

constexpr char kModified[] =
    "the object has been modified; please apply your changes to the latest version and try again";

// generateName's suffix: 5 characters from the alphabet of k8s.io/apiserver's rand.String
// (no vowels, no confusable digits).
std::string RandomSuffix() {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  static thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(0, sizeof(kAlphabet) - 2);
  std::string out;
  for (int i = 0; i < 5; ++i) out += kAlphabet[pick(rng)];
  return out;
}

absl::Status CheckTypeMeta(const ResourceInfo& resource, nlohmann::json& object) {
  if (!object.is_object()) {
    return BadRequestFailure("the body of the request must be a JSON object");
  }
  const std::string want_version = resource.GroupVersion();
  if (object.contains("apiVersion") && object["apiVersion"] != want_version) {
    const std::string got =
        object["apiVersion"].is_string() ? object["apiVersion"].get<std::string>() : "";
    return BadRequestFailure(absl::StrCat("the API version in the data (", got,
                                          ") does not match the expected API version (",
                                          want_version, ")"));
  }
  if (object.contains("kind") && object["kind"] != resource.kind) {
    const std::string got = object["kind"].is_string() ? object["kind"].get<std::string>() : "";
    return BadRequestFailure(absl::StrCat(
        "the kind in the data (", got, ") does not match the expected kind (", resource.kind, ")"));
  }
  object["apiVersion"] = want_version;
  object["kind"] = resource.kind;
  if (object.contains("metadata") && !object["metadata"].is_object()) {
    return BadRequestFailure("metadata must be an object");
  }
  return absl::OkStatus();
}

// The namespace the object lives in: the request's, which the body may repeat but not contradict.
absl::StatusOr<std::string> ResolveNamespace(const ResourceInfo& resource, std::string_view ns,
                                             nlohmann::json& object) {
  nlohmann::json& meta = Meta(object);
  if (!resource.namespaced) {
    meta.erase("namespace");
    return std::string();
  }
  const std::string body_ns = MetaString(object, "namespace");
  if (!ns.empty() && !body_ns.empty() && body_ns != ns) {
    return BadRequestFailure(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  std::string chosen = ns.empty() ? body_ns : std::string(ns);
  if (chosen.empty()) return BadRequestFailure("a namespace is required for namespaced resources");
  meta["namespace"] = chosen;
  return chosen;
}

std::vector<FieldCause> ValidateMetadata(const ResourceInfo& resource,
                                         const nlohmann::json& object) {
  std::vector<FieldCause> causes;
  const std::string name = MetaString(object, "name");
  const std::string why = resource.GroupResource() == "namespaces" ? CheckDns1123Label(name)
                                                                   : CheckDns1123Subdomain(name);
  if (!why.empty()) {
    causes.push_back({"FieldValueInvalid", "metadata.name", InvalidValueBody(name, why)});
  }
  const nlohmann::json& labels = object["metadata"].value("labels", nlohmann::json::object());
  if (!labels.is_object()) {
    causes.push_back({"FieldValueInvalid", "metadata.labels", "Invalid value: must be an object"});
    return causes;
  }
  for (const auto& [key, value] : labels.items()) {
    if (std::string w = CheckQualifiedName(key); !w.empty()) {
      causes.push_back({"FieldValueInvalid", "metadata.labels", InvalidValueBody(key, w)});
    }
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (std::string w = value.is_string() ? CheckLabelValue(text) : "must be a string";
        !w.empty()) {
      causes.push_back({"FieldValueInvalid", "metadata.labels", InvalidValueBody(text, w)});
    }
  }
  return causes;
}

// Built-in defaults and status a client cannot set at creation (registry strategies'
// PrepareForCreate): a pod starts Pending, a namespace Active, any other status is dropped
// except a Node's, which the kubelet registers together with its first status.
void PrepareBuiltinCreate(const ResourceInfo& resource, nlohmann::json& object) {
  const std::string gr = resource.GroupResource();
  if (resource.status_subresource && resource.crd_name.empty() && gr != kCrdResource &&
      gr != "nodes") {
    object.erase("status");
  }
  if (gr == "pods") {
    nlohmann::json& spec = object["spec"];
    if (!spec.is_object()) spec = nlohmann::json::object();
    if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
    if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
    if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
    object["status"] = {{"phase", "Pending"}};
  }
  if (gr == "namespaces") {
    Meta(object)["labels"]["kubernetes.io/metadata.name"] = MetaString(object, "name");
    object["status"] = {{"phase", "Active"}};
  }
}

// The object without what does not count for metadata.generation.
nlohmann::json GenerationRelevant(const ResourceInfo& resource, nlohmann::json object) {
  object.erase("metadata");
  if (resource.status_subresource) object.erase("status");
  return object;
}

}  // namespace

StoreImpl::~StoreImpl() {
  {
    absl::MutexLock lock(&core_->mu);
    core_->shutting_down = true;
    core_->changed.SignalAll();
  }
  if (core_->timer_thread.joinable()) core_->timer_thread.join();
}

absl::Status StoreImpl::Initialize() {
  absl::MutexLock lock(&core_->mu);
  auto crds = core_->objects.find(kCrdResource);
  if (crds != core_->objects.end()) {
    for (const auto& [key, crd] : crds->second) ServeCrdLocked(*core_, crd);
  }
  auto pods = core_->objects.find("pods");
  if (pods != core_->objects.end()) {
    const ResourceInfo pod_info = *InfoForStorageLocked(*core_, "pods");
    for (const auto& [key, pod] : pods->second) {
      if (!MetaString(pod, "deletionTimestamp").empty()) {
        ArmGraceTimerLocked(
            pod_info, key,
            std::max<std::int64_t>(0, SecondsUntil(MetaString(pod, "deletionTimestamp"))));
      }
    }
  }
  const ResourceInfo ns_info = *InfoForStorageLocked(*core_, "namespaces");
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    if (core_->objects["namespaces"].count(name) != 0) continue;
    absl::StatusOr<WriteResult> made =
        CreateLocked(ns_info, "", {{"metadata", {{"name", name}}}}, WriteOptions{});
    if (!made.ok()) return made.status();
  }
  if (core_->options.finish_pod_deletion_after_grace) {
    core_->timer_thread = std::thread([this] { TimerLoop(); });
  }
  return absl::OkStatus();
}

std::vector<ResourceInfo> StoreImpl::Resources() const {
  std::vector<ResourceInfo> out = BuiltinResources();
  absl::MutexLock lock(&core_->mu);
  for (const auto& [key, version] : core_->custom) out.push_back(version.info);
  return out;
}

std::optional<ResourceInfo> StoreImpl::FindResource(std::string_view group,
                                                    std::string_view version,
                                                    std::string_view plural) const {
  for (const ResourceInfo& info : Resources()) {
    if (info.group == group && info.version == version && info.plural == plural) return info;
  }
  return std::nullopt;
}

absl::StatusOr<nlohmann::json> StoreImpl::Get(const ResourceInfo& resource, std::string_view ns,
                                              std::string_view name) const {
  absl::MutexLock lock(&core_->mu);
  absl::StatusOr<ResourceInfo> info = ResolveLocked(*core_, resource);
  if (!info.ok()) return info.status();
  const auto bucket = core_->objects.find(info->GroupResource());
  if (bucket != core_->objects.end()) {
    auto it = bucket->second.find(ObjectKey(*info, ns, name));
    if (it != bucket->second.end()) return AsServed(*info, it->second);
  }
  return NotFoundFailure(info->GroupResource(), name);
}

absl::Status StoreImpl::CheckNamespaceLocked(const ResourceInfo& resource, std::string_view ns,
                                             std::string_view name) const {
  if (!resource.namespaced) return absl::OkStatus();
  const auto& namespaces = core_->objects["namespaces"];
  auto it = namespaces.find(std::string(ns));
  if (it == namespaces.end()) return NotFoundFailure("namespaces", ns);
  if (!MetaString(it->second, "deletionTimestamp").empty()) {
    // The NamespaceLifecycle admission plugin's answer.
    auto [plural, group] = std::make_pair(resource.plural, resource.group);
    nlohmann::json details = {{"name", std::string(name)}, {"kind", plural}};
    if (!group.empty()) details["group"] = group;
    details["causes"] = {
        {{"reason", "NamespaceTerminating"},
         {"message", absl::StrCat("namespace ", std::string(ns), " is being terminated")},
         {"field", "metadata.namespace"}}};
    return ApiFailure(403, "Forbidden",
                      absl::StrCat(resource.GroupResource(), " \"", std::string(name),
                                   "\" is forbidden: unable to create new content in namespace ",
                                   std::string(ns), " because it is being terminated"),
                      details);
  }
  return absl::OkStatus();
}

absl::StatusOr<WriteResult> StoreImpl::Create(const ResourceInfo& resource, std::string_view ns,
                                              nlohmann::json object, const WriteOptions& options) {
  absl::MutexLock lock(&core_->mu);
  return CreateLocked(resource, ns, std::move(object), options);
}

absl::StatusOr<WriteResult> StoreImpl::CreateLocked(const ResourceInfo& resource,
                                                    std::string_view ns, nlohmann::json object,
                                                    const WriteOptions& options) {
  absl::StatusOr<ResourceInfo> resolved = ResolveLocked(*core_, resource);
  if (!resolved.ok()) return resolved.status();
  const ResourceInfo& info = *resolved;
  if (absl::Status s = CheckTypeMeta(info, object); !s.ok()) return s;
  absl::StatusOr<std::string> object_ns = ResolveNamespace(info, ns, object);
  if (!object_ns.ok()) return object_ns.status();
  nlohmann::json& meta = Meta(object);
  if (!MetaString(object, "resourceVersion").empty()) {
    // etcd3 store's refusal, which the server reports as an internal error.
    return ApiFailure(500, "InternalError",
                      "Internal error occurred: resourceVersion should not be set on objects to "
                      "be created");
  }
  std::string name = MetaString(object, "name");
  const std::string generate = MetaString(object, "generateName");
  if (name.empty() && !generate.empty()) {
    name = absl::StrCat(generate.substr(0, 58), RandomSuffix());
    meta["name"] = name;
  }
  if (name.empty()) {
    return InvalidFailure(info.kind, info.group, "",
                          {{"FieldValueRequired", "metadata.name",
                            "Required value: name or generateName is required"}});
  }
  if (std::vector<FieldCause> causes = ValidateMetadata(info, object); !causes.empty()) {
    return InvalidFailure(info.kind, info.group, name, causes);
  }
  if (absl::Status s = CheckNamespaceLocked(info, *object_ns, name); !s.ok()) return s;
  const std::string key = ObjectKey(info, *object_ns, name);
  if (core_->objects[info.GroupResource()].count(key) != 0) {
    return AlreadyExistsFailure(info.GroupResource(), name);
  }
  meta["uid"] = NewUid();
  meta["creationTimestamp"] = TimestampFromNow();
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  meta.erase("generation");
  if (TracksGeneration(info)) meta["generation"] = 1;
  PrepareBuiltinCreate(info, object);
  WriteResult result;
  if (info.GroupResource() == kCrdResource) {
    if (absl::Status s = PrepareCrdLocked(*core_, object, /*creating=*/true); !s.ok()) return s;
  }
  if (!info.crd_name.empty()) {
    if (info.status_subresource) object.erase("status");
    absl::Status s =
        ApplySchemaLocked(*core_, info, object, options.field_validation, result.warnings);
    if (!s.ok()) return s;
  }
  if (options.dry_run) {
    result.object = AsServed(info, std::move(object));
    return result;
  }
  absl::StatusOr<nlohmann::json> stored =
      CommitPutLocked(*core_, info.GroupResource(), key, std::move(object));
  if (!stored.ok()) return stored.status();
  if (info.GroupResource() == kCrdResource) ServeCrdLocked(*core_, *stored);
  result.object = AsServed(info, *std::move(stored));
  return result;
}

absl::StatusOr<WriteResult> StoreImpl::Update(const ResourceInfo& resource, std::string_view ns,
                                              std::string_view name, nlohmann::json object,
                                              std::string_view subresource,
                                              const WriteOptions& options) {
  absl::MutexLock lock(&core_->mu);
  return UpdateLocked(resource, ns, name, std::move(object), subresource, options);
}

absl::StatusOr<WriteResult> StoreImpl::Modify(const ResourceInfo& resource, std::string_view ns,
                                              std::string_view name, std::string_view subresource,
                                              const Mutation& mutate, const WriteOptions& options) {
  absl::MutexLock lock(&core_->mu);
  absl::StatusOr<ResourceInfo> info = ResolveLocked(*core_, resource);
  if (!info.ok()) return info.status();
  const auto& bucket = core_->objects[info->GroupResource()];
  auto it = bucket.find(ObjectKey(*info, ns, name));
  if (it == bucket.end()) return NotFoundFailure(info->GroupResource(), name);
  const nlohmann::json current = AsServed(*info, it->second);
  absl::StatusOr<nlohmann::json> changed = mutate(current);
  if (!changed.ok()) return changed.status();
  // A patch may carry a resourceVersion (then it must be current); without one it applies to
  // what is stored now.
  if (changed->is_object() && MetaString(*changed, "resourceVersion").empty()) {
    Meta(*changed)["resourceVersion"] = MetaString(current, "resourceVersion");
  }
  return UpdateLocked(*info, ns, name, *std::move(changed), subresource, options);
}

absl::StatusOr<WriteResult> StoreImpl::UpdateLocked(const ResourceInfo& resource,
                                                    std::string_view ns, std::string_view name,
                                                    nlohmann::json object,
                                                    std::string_view subresource,
                                                    const WriteOptions& options) {
  absl::StatusOr<ResourceInfo> resolved = ResolveLocked(*core_, resource);
  if (!resolved.ok()) return resolved.status();
  const ResourceInfo& info = *resolved;
  if (!subresource.empty() && (subresource != "status" || !info.status_subresource)) {
    return ApiFailure(404, "NotFound", "the server could not find the requested resource");
  }
  if (absl::Status s = CheckTypeMeta(info, object); !s.ok()) return s;
  absl::StatusOr<std::string> object_ns = ResolveNamespace(info, ns, object);
  if (!object_ns.ok()) return object_ns.status();
  const std::string body_name = MetaString(object, "name");
  if (body_name.empty()) Meta(object)["name"] = std::string(name);
  if (!body_name.empty() && body_name != name) {
    return BadRequestFailure(absl::StrCat("the name of the object (", body_name,
                                          ") does not match the name on the URL (",
                                          std::string(name), ")"));
  }
  const std::string gr = info.GroupResource();
  const std::string key = ObjectKey(info, *object_ns, name);
  auto& bucket = core_->objects[gr];
  auto it = bucket.find(key);
  if (it == bucket.end()) return NotFoundFailure(gr, name);
  const nlohmann::json existing = it->second;
  const std::string rv = MetaString(object, "resourceVersion");
  if (rv.empty() && !info.crd_name.empty()) {
    // Custom resources allow no unconditional update.
    return InvalidFailure(info.kind, info.group, name,
                          {{"FieldValueInvalid", "metadata.resourceVersion",
                            "Invalid value: 0x0: must be specified for an update"}});
  }
  if (!rv.empty() && rv != MetaString(existing, "resourceVersion")) {
    return ConflictFailure(gr, name, kModified);
  }
  const std::string uid = MetaString(object, "uid");
  if (!uid.empty() && uid != MetaString(existing, "uid")) {
    return ConflictFailure(gr, name,
                           absl::StrCat("Precondition failed: UID in precondition: ", uid,
                                        ", UID in object meta: ", MetaString(existing, "uid")));
  }
  WriteResult result;
  absl::StatusOr<nlohmann::json> merged =
      MergeUpdateLocked(info, existing, std::move(object), subresource, options, result.warnings);
  if (!merged.ok()) return merged.status();
  if (*merged == existing) {  // nothing changed: no write, no event, same resourceVersion
    result.object = AsServed(info, existing);
    return result;
  }
  if (options.dry_run) {
    result.object = AsServed(info, *std::move(merged));
    return result;
  }
  const nlohmann::json& finalizers = (*merged)["metadata"].value("finalizers", nlohmann::json());
  const bool finalized = !MetaString(*merged, "deletionTimestamp").empty() &&
                         (!finalizers.is_array() || finalizers.empty()) &&
                         (*merged)["metadata"].value("deletionGracePeriodSeconds", 0) == 0;
  if (finalized) {  // the last finalizer of a deleted object is gone: it goes now
    bucket[key] = *merged;
    absl::StatusOr<nlohmann::json> gone = RemoveLocked(info, key, "");
    if (!gone.ok()) return gone.status();
    result.object = AsServed(info, *std::move(gone));
    return result;
  }
  absl::StatusOr<nlohmann::json> stored = CommitPutLocked(*core_, gr, key, *std::move(merged));
  if (!stored.ok()) return stored.status();
  if (gr == kCrdResource) ServeCrdLocked(*core_, *stored);
  result.object = AsServed(info, *std::move(stored));
  return result;
}

absl::StatusOr<nlohmann::json> StoreImpl::MergeUpdateLocked(
    const ResourceInfo& info, const nlohmann::json& existing, nlohmann::json proposed,
    std::string_view subresource, const WriteOptions& options, std::vector<std::string>& warnings) {
  nlohmann::json merged;
  if (subresource == "status") {
    merged = existing;  // the status subresource takes the status and nothing else
    if (proposed.contains("status"))
      merged["status"] = proposed["status"];
    else
      merged.erase("status");
  } else {
    merged = std::move(proposed);
    if (info.status_subresource) {  // ... and the main resource everything but the status
      if (existing.contains("status"))
        merged["status"] = existing["status"];
      else
        merged.erase("status");
    }
    nlohmann::json& meta = Meta(merged);
    for (const char* field : {"uid", "creationTimestamp", "deletionTimestamp",
                              "deletionGracePeriodSeconds", "generation", "namespace"}) {
      if (existing["metadata"].contains(field))
        meta[field] = existing["metadata"][field];
      else
        meta.erase(field);
    }
    if (std::vector<FieldCause> causes = ValidateMetadata(info, merged); !causes.empty()) {
      return InvalidFailure(info.kind, info.group, MetaString(merged, "name"), causes);
    }
  }
  Meta(merged)["resourceVersion"] = MetaString(existing, "resourceVersion");
  if (!MetaString(existing, "deletionTimestamp").empty()) {
    std::vector<std::string> added;
    const nlohmann::json old_finalizers =
        existing["metadata"].value("finalizers", nlohmann::json::array());
    for (const nlohmann::json& f :
         merged["metadata"].value("finalizers", nlohmann::json::array())) {
      if (std::find(old_finalizers.begin(), old_finalizers.end(), f) == old_finalizers.end()) {
        added.push_back(absl::StrCat("\"", f.is_string() ? f.get<std::string>() : f.dump(), "\""));
      }
    }
    if (!added.empty()) {
      return InvalidFailure(
          info.kind, info.group, MetaString(merged, "name"),
          {{"FieldValueForbidden", "metadata.finalizers",
            absl::StrCat("Forbidden: no new finalizers can be added if the object is being "
                         "deleted, found new finalizers []string{",
                         absl::StrJoin(added, ", "), "}")}});
    }
  }
  if (info.GroupResource() == "namespaces") {
    Meta(merged)["labels"]["kubernetes.io/metadata.name"] = MetaString(merged, "name");
  }
  if (info.GroupResource() == kCrdResource && subresource.empty()) {
    if (absl::Status s = PrepareCrdLocked(*core_, merged, /*creating=*/false); !s.ok()) return s;
  }
  if (!info.crd_name.empty()) {
    absl::Status s =
        ApplySchemaLocked(*core_, info, merged, options.field_validation, warnings, &existing);
    if (!s.ok()) return s;
  }
  if (TracksGeneration(info) && existing["metadata"].contains("generation") &&
      GenerationRelevant(info, merged) != GenerationRelevant(info, existing)) {
    Meta(merged)["generation"] = existing["metadata"]["generation"].get<std::int64_t>() + 1;
  }
  return merged;
}

std::optional<ResourceInfo> InfoForStorageLocked(const StoreCore& core,
                                                 const std::string& group_resource) {
  for (const ResourceInfo& info : BuiltinResources()) {
    if (info.GroupResource() == group_resource) return info;
  }
  std::optional<ResourceInfo> found;
  for (const auto& [key, version] : core.custom) {
    if (version.info.GroupResource() != group_resource) continue;
    if (!found.has_value() || version.info.crd_version.value("storage", false)) {
      found = version.info;
    }
  }
  return found;
}

}  // namespace store_internal

absl::StatusOr<std::unique_ptr<ObjectStore>> ObjectStore::Open(const Options& options) {
  if (options.clock == nullptr) return absl::InvalidArgumentError("Options.clock: must be set");
  if (options.history_size == 0) {
    return absl::InvalidArgumentError("Options.history_size: must be >= 1, got 0");
  }
  auto core = std::make_shared<store_internal::StoreCore>();
  core->options = options;
  {
    absl::MutexLock lock(&core->mu);  // uncontended: nothing else has the store yet
    if (absl::Status s = store_internal::LoadPersisted(*core); !s.ok()) return s;
  }
  auto store = std::make_unique<store_internal::StoreImpl>(core);
  if (absl::Status s = store->Initialize(); !s.ok()) return s;
  return std::unique_ptr<ObjectStore>(std::move(store));
}

}  // namespace wavepool::testing::apiserver
