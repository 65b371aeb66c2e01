// The patch strategies of the built-in kinds' fields (the patchStrategy and patchMergeKey struct
// tags of k8s.io/api), for strategic merge patch. Internal to the test API server.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_STRATEGIC_MERGE_META_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_STRATEGIC_MERGE_META_H_

#include <map>
#include <string>
#include <string_view>

namespace wavepool::testing::apiserver::strategic {

struct StructMeta;

// One field of a struct: how a patch merges it, and the struct its value (or each list item) is.
struct FieldMeta {
  std::string strategy;              // "", "merge", "retainKeys", "merge,retainKeys", "replace"
  std::string merge_key;             // lists of maps with strategy merge: the key items match on
  const StructMeta* type = nullptr;  // null for primitives, maps of primitives and unknown types
};

// A struct's fields that have a strategy or a struct type; other fields merge as maps (objects)
// and replace as lists.
struct StructMeta {
  std::map<std::string, FieldMeta> fields;
};

// The top-level struct of `kind` in `group` ("" for core). For a built-in group (no dot, or
// ending in ".k8s.io") an unlisted kind gets ObjectMeta's metadata only. Null for other groups
// (custom resources): they have no strategies.
const StructMeta* KindMeta(std::string_view group, std::string_view kind);

// The meta of `field` in `type` (an empty FieldMeta when unknown or `type` is null).
const FieldMeta& FieldOf(const StructMeta* type, const std::string& field);

}  // namespace wavepool::testing::apiserver::strategic

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STRATEGIC_MERGE_META_H_
