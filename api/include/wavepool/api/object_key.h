// The key of a Kubernetes object: its namespace and name. Work queues, caches, GPU assignments
// and messages carry it as the text "namespace/name" ("name" for a cluster-scoped object, as
// client-go's MetaNamespaceKeyFunc writes it); code that needs the two parts parses that text
// here rather than splitting it by hand.
#ifndef WAVEPOOL_API_OBJECT_KEY_H_
#define WAVEPOOL_API_OBJECT_KEY_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "wavepool/api/object_meta.h"

namespace wavepool::api {

// A plain value: copyable, not synchronised. Ordered by namespace, then name, and hashable
// (absl::Hash and std::hash), so it keys a std::map, std::set or an unordered container.
struct ObjectKey {
  std::string namespace_;  // Empty for a cluster-scoped object (a GPUNode, a Node).
  std::string name;

  // The key of the object `metadata` describes.
  static ObjectKey Of(const ObjectMeta& metadata);

  // The key written as "namespace/name", or "name" for a cluster-scoped object. InvalidArgument,
  // naming `text` and what is wrong with it, when it is empty, has an empty namespace or name
  // ("/vgg", "default/") or more than one '/' ("a/b/c": neither part of a key holds one).
  static absl::StatusOr<ObjectKey> Parse(std::string_view text);

  // "namespace/name", or "name" when namespace_ is empty: what Parse reads back.
  std::string ToString() const;

  friend bool operator==(const ObjectKey& a, const ObjectKey& b) {
    return a.namespace_ == b.namespace_ && a.name == b.name;
  }
  friend bool operator!=(const ObjectKey& a, const ObjectKey& b) { return !(a == b); }
  friend bool operator<(const ObjectKey& a, const ObjectKey& b) {
    return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
  }

  template <typename H>
  friend H AbslHashValue(H h, const ObjectKey& key) {
    return H::combine(std::move(h), key.namespace_, key.name);
  }
};

}  // namespace wavepool::api

template <>
struct std::hash<wavepool::api::ObjectKey> {
  std::size_t operator()(const wavepool::api::ObjectKey& key) const {
    return absl::Hash<wavepool::api::ObjectKey>{}(key);
  }
};

#endif  // WAVEPOOL_API_OBJECT_KEY_H_
