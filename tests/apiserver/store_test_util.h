// Helpers for the object store's tests: a memory-only store and small objects.
#ifndef WAVEPOOL_TESTS_APISERVER_STORE_TEST_UTIL_H_
#define WAVEPOOL_TESTS_APISERVER_STORE_TEST_UTIL_H_

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/object_store.h"

namespace wavepool::testing::apiserver {

inline std::unique_ptr<ObjectStore> OpenMemoryStore(ObjectStore::Options options = {}) {
  absl::StatusOr<std::unique_ptr<ObjectStore>> store = ObjectStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

inline ResourceInfo Resource(const ObjectStore& store, const std::string& group,
                             const std::string& version, const std::string& plural) {
  std::optional<ResourceInfo> info = store.FindResource(group, version, plural);
  EXPECT_TRUE(info.has_value()) << group << "/" << version << "/" << plural;
  return info.value_or(ResourceInfo{});
}

inline nlohmann::json Named(const std::string& name,
                            nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json object = std::move(extra);
  object["metadata"]["name"] = name;
  return object;
}

inline std::string Rv(const nlohmann::json& object) {
  return object["metadata"].value("resourceVersion", "");
}

// A query (list or watch) from resourceVersion `rv`.
inline ListQuery FromVersion(std::int64_t rv) {
  ListQuery query;
  query.resource_version = std::to_string(rv);
  return query;
}

inline std::int64_t RvNumber(const nlohmann::json& object) { return std::stoll(Rv(object)); }

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_APISERVER_STORE_TEST_UTIL_H_
