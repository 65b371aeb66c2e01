// Lists with kube-apiserver's resourceVersion rules (docs "Resource versions", "Semantics for get
// and list"):
//   resourceVersion unset       -> the most recent state;
//   "0" or N, NotOlderThan      -> any state at least as new (this server: the most recent; N
//                                  beyond the newest write -> 504 Timeout, "Too large ...");
//   N, Exact                    -> the state at N, rebuilt by undoing the later history (410
//                                  Expired once N is older than the history);
// and paging: `limit` items in key order (namespace/name), a `continue` token holding the list's
// resourceVersion and the last key, so that every page shows the same snapshot.
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/store_impl.h"

namespace wavepool::testing::apiserver::store_internal {
namespace {

constexpr char kContinueTooOld[] =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter.";

struct ContinueToken {
  std::int64_t resource_version = 0;
  std::string last_key;
};

std::string EncodeContinue(const ContinueToken& token) {
  const nlohmann::json body = {{"v", "meta.k8s.io/v1"},
                               {"rv", token.resource_version},
                               {"start", token.last_key + std::string(1, '\0')}};
  return absl::WebSafeBase64Escape(body.dump());
}

absl::StatusOr<ContinueToken> DecodeContinue(const std::string& text) {
  std::string raw;
  const absl::Status invalid = BadRequestFailure(
      absl::StrCat("continue key is not valid: ", text.size() > 64 ? text.substr(0, 64) : text));
  if (!absl::WebSafeBase64Unescape(text, &raw)) return invalid;
  const nlohmann::json body = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || body.value("v", "") != "meta.k8s.io/v1" || !body.contains("rv") ||
      !body["rv"].is_number_integer() || !body.contains("start") || !body["start"].is_string()) {
    return invalid;
  }
  ContinueToken token;
  token.resource_version = body["rv"].get<std::int64_t>();
  token.last_key = body["start"].get<std::string>();
  if (!token.last_key.empty() && token.last_key.back() == '\0') token.last_key.pop_back();
  return token;
}

absl::Status TooLarge(std::int64_t asked, std::int64_t current) {
  return ApiFailure(
      504, "Timeout", absl::StrCat("Too large resource version: ", asked, ", current: ", current),
      {{"causes",
        {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}}},
       {"retryAfterSeconds", 1}});
}

absl::Status InvalidListOptions(const std::string& field, const std::string& message) {
  return InvalidFailure("ListOptions", "meta.k8s.io", "",
                        {{"FieldValueForbidden", field, message}});
}

// The snapshot resourceVersion a list serves, after checking the query's consistency rules.
absl::StatusOr<std::int64_t> SnapshotVersion(const StoreCore& core, const ListQuery& query,
                                             std::optional<ContinueToken>& token)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
  const std::string& rv = query.resource_version;
  const std::string& match = query.resource_version_match;
  if (!match.empty() && match != "Exact" && match != "NotOlderThan") {
    return InvalidFailure("ListOptions", "meta.k8s.io", "",
                          {{"FieldValueNotSupported", "resourceVersionMatch",
                            absl::StrCat("Unsupported value: \"", match,
                                         "\": supported values: \"Exact\", \"NotOlderThan\", "
                                         "\"\"")}});
  }
  if (!match.empty() && rv.empty()) {
    return InvalidListOptions("resourceVersionMatch",
                              "Forbidden: resourceVersionMatch is forbidden unless "
                              "resourceVersion is provided");
  }
  if (!query.continue_token.empty()) {
    if (!rv.empty() && rv != "0") {
      return BadRequestFailure("specifying resource version is not allowed when using continue");
    }
    absl::StatusOr<ContinueToken> decoded = DecodeContinue(query.continue_token);
    if (!decoded.ok()) return decoded.status();
    if (decoded->resource_version < core.history_floor) {
      return ApiFailure(410, "Expired", kContinueTooOld);
    }
    token = *decoded;
    return decoded->resource_version;
  }
  if (rv.empty()) return core.resource_version;
  std::int64_t asked = 0;
  if (!absl::SimpleAtoi(rv, &asked) || asked < 0) {
    return BadRequestFailure(absl::StrCat("invalid resource version: \"", rv, "\""));
  }
  if (match == "Exact" && asked == 0) {
    return InvalidListOptions("resourceVersionMatch",
                              "Forbidden: resourceVersionMatch \"exact\" is forbidden for "
                              "resourceVersion \"0\"");
  }
  if (asked > core.resource_version) return TooLarge(asked, core.resource_version);
  if (match != "Exact") return core.resource_version;
  if (asked < core.history_floor) {
    return ApiFailure(410, "Expired", "The resourceVersion for the provided list is too old.");
  }
  return asked;
}

// The objects of `resource` as they were at `version`: today's, with every later write undone.
std::map<std::string, nlohmann::json> StateAt(const StoreCore& core, const std::string& resource,
                                              std::int64_t version)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
  std::map<std::string, nlohmann::json> state;
  auto bucket = core.objects.find(resource);
  if (bucket != core.objects.end()) state = bucket->second;
  for (auto it = core.history.rbegin(); it != core.history.rend() && it->resource_version > version;
       ++it) {
    if (it->resource != resource) continue;
    const nlohmann::json& subject = it->type == EventType::kAdded ? it->object : it->previous;
    const std::string ns = MetaString(subject, "namespace");
    const std::string name = MetaString(subject, "name");
    const std::string key = ns.empty() ? name : absl::StrCat(ns, "/", name);
    if (it->type == EventType::kAdded)
      state.erase(key);
    else
      state[key] = it->previous;
  }
  return state;
}

}  // namespace

absl::StatusOr<Selection> Selection::Make(const ResourceInfo& resource, std::string_view ns,
                                          const ListQuery& query) {
  Selection selection;
  selection.ns = resource.namespaced ? std::string(ns) : "";
  selection.group_resource = resource.GroupResource();
  absl::StatusOr<LabelSelector> labels = LabelSelector::Parse(query.label_selector);
  if (!labels.ok()) return BadRequestFailure(std::string(labels.status().message()));
  selection.labels = *std::move(labels);
  absl::StatusOr<FieldSelector> fields = FieldSelector::Parse(
      query.field_selector, selection.group_resource, !resource.crd_name.empty());
  if (!fields.ok()) return BadRequestFailure(std::string(fields.status().message()));
  selection.fields = *std::move(fields);
  return selection;
}

bool Selection::Matches(const nlohmann::json& object) const {
  if (!ns.empty() && MetaString(object, "namespace") != ns) return false;
  if (!labels.empty() &&
      !labels.Matches(object["metadata"].value("labels", nlohmann::json::object()))) {
    return false;
  }
  return fields.empty() || fields.Matches(SelectableFields(group_resource, object));
}

absl::StatusOr<ListResult> StoreImpl::List(const ResourceInfo& resource, std::string_view ns,
                                           const ListQuery& query) const {
  if (query.limit < 0) {
    return InvalidListOptions("limit", absl::StrCat("Invalid value: ", query.limit,
                                                    ": must be greater than or equal to 0"));
  }
  absl::StatusOr<Selection> selection = Selection::Make(resource, ns, query);
  if (!selection.ok()) return selection.status();
  absl::MutexLock lock(&core_->mu);
  absl::StatusOr<ResourceInfo> info = ResolveLocked(*core_, resource);
  if (!info.ok()) return info.status();
  std::optional<ContinueToken> token;
  absl::StatusOr<std::int64_t> version = SnapshotVersion(*core_, query, token);
  if (!version.ok()) return version.status();
  const std::string gr = info->GroupResource();
  std::map<std::string, nlohmann::json> snapshot;
  const std::map<std::string, nlohmann::json>* objects = &snapshot;
  if (*version == core_->resource_version) {
    auto bucket = core_->objects.find(gr);
    if (bucket != core_->objects.end()) objects = &bucket->second;
  } else {
    snapshot = StateAt(*core_, gr, *version);
  }
  ListResult result;
  result.resource_version = std::to_string(*version);
  auto it = token.has_value() ? objects->upper_bound(token->last_key) : objects->begin();
  std::string last_key;
  for (; it != objects->end(); ++it) {
    if (!selection->Matches(it->second)) continue;
    if (query.limit > 0 && static_cast<std::int64_t>(result.items.size()) == query.limit) break;
    result.items.push_back(AsServed(*info, it->second));
    last_key = it->first;
  }
  std::int64_t remaining = 0;
  for (; it != objects->end(); ++it) remaining += selection->Matches(it->second) ? 1 : 0;
  if (remaining > 0) {
    result.continue_token = EncodeContinue({*version, last_key});
    // As etcd3's store: a count only when no selector filters the items.
    if (query.label_selector.empty() && query.field_selector.empty()) {
      result.remaining_item_count = remaining;
    }
  }
  return result;
}

}  // namespace wavepool::testing::apiserver::store_internal
