// Strategic merge patch as the server applies it (k8s.io/apimachinery/pkg/util/strategicpatch,
// StrategicMergePatch with MergeParallelList and IgnoreUnmatchedNulls): maps merge, lists with
// strategy merge merge by their key (primitives as a set), other lists are replaced, and the
// directives $patch, $retainKeys, $setElementOrder/ and $deleteFromPrimitiveList/ apply.
#include "tests/support/apiserver/strategic_merge.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/strategic_merge_meta.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using strategic::FieldMeta;
using strategic::StructMeta;

constexpr char kPatch[] = "$patch";
constexpr char kRetainKeys[] = "$retainKeys";
constexpr char kSetElementOrder[] = "$setElementOrder/";
constexpr char kDeleteFromPrimitiveList[] = "$deleteFromPrimitiveList/";

std::string Where(const std::string& path) { return path.empty() ? "patch" : path; }

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(Where(path), ": ", what));
}

std::string ChildPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

bool MergesList(const FieldMeta& meta) { return absl::StartsWith(meta.strategy, "merge"); }

// A value the patch adds where the original has none: null fields and directives are dropped
// (the server decodes the result into its typed object, which has neither).
json Materialize(const json& value) {
  if (value.is_object()) {
    json out = json::object();
    for (const auto& [key, child] : value.items()) {
      if (child.is_null() || absl::StartsWith(key, "$")) continue;
      out[key] = Materialize(child);
    }
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const json& element : value) {
      if (element.is_object() && element.contains(kPatch)) continue;
      out.push_back(Materialize(element));
    }
    return out;
  }
  return value;
}

// The position of `item` in `list`: by merge key for maps, by value for primitives; -1 if absent.
long IndexOf(const json& list, const json& item, const std::string& merge_key) {
  for (size_t i = 0; i < list.size(); ++i) {
    const bool equal = merge_key.empty()
                           ? list[i] == item
                           : list[i].is_object() && item.is_object() &&
                                 list[i].contains(merge_key) && item.contains(merge_key) &&
                                 list[i][merge_key] == item[merge_key];
    if (equal) return static_cast<long>(i);
  }
  return -1;
}

// normalizeElementOrder: patch items in the patch's (or $setElementOrder's) order, server-only
// items in the original's order, interleaved by their positions in the original.
json NormalizeOrder(json patch_items, json server_only, const json& patch_order,
                    const json& server_order, const std::string& merge_key) {
  auto sort_by = [&merge_key](json& items, const json& order) {
    std::vector<json> v(items.begin(), items.end());
    std::stable_sort(v.begin(), v.end(), [&](const json& a, const json& b) {
      const long ia = IndexOf(order, a, merge_key);
      const long ib = IndexOf(order, b, merge_key);
      return ia >= 0 && ib >= 0 && ia < ib;
    });
    items = json(v);
  };
  sort_by(patch_items, patch_order);
  sort_by(server_only, server_order);
  json out = json::array();
  size_t i = 0;
  size_t j = 0;
  while (i < server_only.size() || j < patch_items.size()) {
    if (j >= patch_items.size()) {
      out.push_back(server_only[i++]);
    } else if (i >= server_only.size()) {
      out.push_back(patch_items[j++]);
    } else {
      const long li = IndexOf(server_order, server_only[i], merge_key);
      const long ri = IndexOf(server_order, patch_items[j], merge_key);
      if (li >= 0 && ri >= 0 && li < ri) {
        out.push_back(server_only[i++]);
      } else {
        out.push_back(patch_items[j++]);
      }
    }
  }
  return out;
}

// Splits `merged` into the items present in `list` and the rest, then orders them.
json Reorder(const json& merged, const json& list, const json& server_order,
             const std::string& merge_key) {
  json in_list = json::array();
  json rest = json::array();
  for (const json& item : merged) {
    (IndexOf(list, item, merge_key) >= 0 ? in_list : rest).push_back(item);
  }
  return NormalizeOrder(in_list, rest, list, server_order, merge_key);
}

absl::StatusOr<json> MergeMap(json original, json patch, const StructMeta* type,
                              const std::string& path);

absl::StatusOr<json> MergePrimitiveList(const json& original, const json& patch, bool delete_list) {
  json merged = json::array();
  if (delete_list) {
    for (const json& item : original) {
      if (IndexOf(patch, item, "") < 0) merged.push_back(item);
    }
    return merged;
  }
  for (const json& source : {original, patch}) {
    for (const json& item : source) {
      if (IndexOf(merged, item, "") < 0) merged.push_back(item);
    }
  }
  return Reorder(merged, patch, original, "");
}

// $patch elements of a list of maps: delete removes the original's matching items, replace makes
// the rest of the patch the whole list.
absl::Status ApplyListDirectives(json& original, json& patch, const std::string& merge_key,
                                 const std::string& path) {
  json plain = json::array();
  bool replace = false;
  for (const json& item : patch) {
    auto directive = item.find(kPatch);
    if (directive == item.end()) {
      plain.push_back(item);
    } else if (*directive == "delete") {
      if (!item.contains(merge_key)) {
        return Bad(path, absl::StrCat("map: ", item.dump(),
                                      " does not contain declared merge key: ", merge_key));
      }
      json kept = json::array();
      for (const json& o : original) {
        if (!(o.is_object() && o.contains(merge_key) && o[merge_key] == item[merge_key])) {
          kept.push_back(o);
        }
      }
      original = std::move(kept);
    } else if (*directive == "replace") {
      replace = true;
    } else if (*directive == "merge") {
      return Bad(path, "merging lists cannot yet be specified in the patch");
    } else {
      return Bad(path,
                 absl::StrCat("unknown patch type: ", directive->dump(), " in map: ", item.dump()));
    }
  }
  if (replace) {
    original = Materialize(plain);
    patch = json::array();
  } else {
    patch = std::move(plain);
  }
  return absl::OkStatus();
}

absl::StatusOr<json> MergeMapList(json original, json patch, const FieldMeta& meta,
                                  const std::string& path) {
  if (meta.merge_key.empty()) {
    return Bad(path, "cannot merge lists without merge key");
  }
  if (absl::Status s = ApplyListDirectives(original, patch, meta.merge_key, path); !s.ok()) {
    return s;
  }
  const json server_order = original;
  for (const json& item : patch) {
    if (!item.contains(meta.merge_key)) {
      return Bad(path, absl::StrCat("map: ", item.dump(),
                                    " does not contain declared merge key: ", meta.merge_key));
    }
    const long at = IndexOf(original, item, meta.merge_key);
    if (at < 0) {
      original.push_back(Materialize(item));
      continue;
    }
    absl::StatusOr<json> merged =
        MergeMap(original[static_cast<size_t>(at)], item, meta.type,
                 absl::StrCat(path, "[", meta.merge_key, "=", item[meta.merge_key].dump(), "]"));
    if (!merged.ok()) return merged.status();
    original[static_cast<size_t>(at)] = *std::move(merged);
  }
  return Reorder(original, patch, server_order, meta.merge_key);
}

// A list field with strategy merge (or a $deleteFromPrimitiveList list).
absl::StatusOr<json> MergeList(const json& original, const json& patch, const FieldMeta& meta,
                               bool delete_list, const std::string& path) {
  if (original.empty() && patch.empty()) return original;
  bool maps = false;
  bool primitives = false;
  for (const json* list : {&original, &patch}) {
    for (const json& item : *list) {
      (item.is_object() ? maps : primitives) = true;
      if (item.is_array()) return Bad(path, "lists of lists cannot be merged");
    }
  }
  if (maps && primitives) return Bad(path, "list items must be all maps or all primitives");
  if (primitives || delete_list) return MergePrimitiveList(original, patch, delete_list);
  return MergeMapList(original, patch, meta, path);
}

// The patch's value for a key the original has too.
absl::StatusOr<json> MergeValue(const json& original, const json& patch, const FieldMeta& meta,
                                const std::string& path) {
  if (original.is_object() && patch.is_object()) {
    if (meta.strategy == "replace") return Materialize(patch);
    return MergeMap(original, patch, meta.type, path);
  }
  if (original.is_array() && patch.is_array()) {
    if (!MergesList(meta)) return Materialize(patch);
    return MergeList(original, patch, meta, false, path);
  }
  return Materialize(patch);
}

absl::Status ApplyRetainKeys(json& original, json& patch, const std::string& path) {
  auto it = patch.find(kRetainKeys);
  if (it == patch.end()) return absl::OkStatus();
  const json keep = *it;
  patch.erase(kRetainKeys);
  if (!keep.is_array())
    return Bad(ChildPath(path, kRetainKeys), "invalid patch format of retainKeys");
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null() || absl::StartsWith(key, "$")) continue;
    if (IndexOf(keep, key, "") < 0) {
      return Bad(ChildPath(path, kRetainKeys),
                 absl::StrCat("invalid patch format of retainKeys: ", key, " is not listed"));
    }
  }
  for (auto o = original.begin(); o != original.end();) {
    o = IndexOf(keep, o.key(), "") < 0 ? original.erase(o) : std::next(o);
  }
  return absl::OkStatus();
}

// Every non-delete item of the patch list appears in the order list, in the same order.
bool PatchFollowsOrder(const json& patch_list, const json& order, const std::string& merge_key) {
  size_t at = 0;
  for (const json& item : patch_list) {
    if (item.is_object() && item.value(kPatch, "") == "delete") continue;
    while (at < order.size() && IndexOf(json::array({order[at]}), item, merge_key) < 0) ++at;
    if (at == order.size()) return false;
  }
  return true;
}

// $setElementOrder/<field>: merges that field now and orders it as the directive lists.
absl::Status ApplySetElementOrder(json& original, json& patch, const StructMeta* type,
                                  const std::string& path) {
  std::vector<std::string> directives;
  for (const auto& [key, value] : patch.items()) {
    if (absl::StartsWith(key, kSetElementOrder)) directives.push_back(key);
  }
  for (const std::string& directive : directives) {
    const json order = patch[directive];
    patch.erase(directive);
    const std::string field = directive.substr(sizeof(kSetElementOrder) - 1);
    const std::string field_path = ChildPath(path, field);
    if (!order.is_array()) return Bad(ChildPath(path, directive), "must be a list");
    const FieldMeta& meta = strategic::FieldOf(type, field);
    const bool has_original = original.contains(field);
    const bool has_patch = patch.contains(field);
    if ((has_original && !original[field].is_array()) || (has_patch && !patch[field].is_array())) {
      return Bad(field_path, "must be a list to be ordered by $setElementOrder");
    }
    if (has_patch && !PatchFollowsOrder(patch[field], order, meta.merge_key)) {
      return Bad(field_path, "the order in the patch list doesn't match the $setElementOrder list");
    }
    json merged;
    if (has_original && has_patch) {
      absl::StatusOr<json> m =
          MergesList(meta) ? MergeList(original[field], patch[field], meta, false, field_path)
                           : absl::StatusOr<json>(Materialize(patch[field]));
      if (!m.ok()) return m.status();
      merged = *std::move(m);
    } else if (has_original) {
      merged = original[field];
    } else if (has_patch) {
      merged = Materialize(patch[field]);
    } else {
      continue;
    }
    const json server_order = has_original ? original[field] : json::array();
    original[field] = Reorder(merged, order, server_order, meta.merge_key);
    patch.erase(field);
  }
  return absl::OkStatus();
}

absl::StatusOr<json> MergeMap(json original, json patch, const StructMeta* type,
                              const std::string& path) {
  if (auto directive = patch.find(kPatch); directive != patch.end()) {
    if (*directive == "replace") {
      patch.erase(kPatch);
      return Materialize(patch);
    }
    if (*directive == "delete") return json::object();
    return Bad(path, absl::StrCat("unknown patch type: ", directive->dump(), " in map"));
  }
  if (!original.is_object()) original = json::object();
  if (absl::Status s = ApplyRetainKeys(original, patch, path); !s.ok()) return s;
  if (absl::Status s = ApplySetElementOrder(original, patch, type, path); !s.ok()) return s;
  for (const auto& [raw_key, value] : patch.items()) {
    if (absl::StartsWith(raw_key, kDeleteFromPrimitiveList)) {
      const std::string key = raw_key.substr(sizeof(kDeleteFromPrimitiveList) - 1);
      if (!value.is_array()) return Bad(ChildPath(path, raw_key), "must be a list");
      if (!original.contains(key) || !original[key].is_array()) continue;
      absl::StatusOr<json> kept = MergeList(original[key], value, strategic::FieldOf(type, key),
                                            true, ChildPath(path, key));
      if (!kept.ok()) return kept.status();
      original[key] = *std::move(kept);
      continue;
    }
    if (absl::StartsWith(raw_key, "$")) continue;  // directives this server does not know
    if (value.is_null()) {
      original.erase(raw_key);
      continue;
    }
    auto existing = original.find(raw_key);
    if (existing == original.end()) {
      original[raw_key] = Materialize(value);
      continue;
    }
    absl::StatusOr<json> merged =
        MergeValue(*existing, value, strategic::FieldOf(type, raw_key), ChildPath(path, raw_key));
    if (!merged.ok()) return merged.status();
    original[raw_key] = *std::move(merged);
  }
  return original;
}

}  // namespace

absl::StatusOr<nlohmann::json> StrategicMergePatch(const nlohmann::json& original,
                                                   const nlohmann::json& patch,
                                                   std::string_view group, std::string_view kind) {
  if (!patch.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("strategic merge patch for ", std::string(kind),
                                                   " must be a JSON object, got ",
                                                   std::string(patch.type_name())));
  }
  const StructMeta* type = strategic::KindMeta(group, kind);
  if (type == nullptr) {
    json result = original.is_object() ? original : json::object();
    result.merge_patch(patch);
    return result;
  }
  return MergeMap(original, patch, type, "");
}

}  // namespace wavepool::testing::apiserver
