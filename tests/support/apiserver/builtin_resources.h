// The built-in resources the test API server serves, with kubectl's short names and categories
// and each kind's verbs, as `kubectl api-resources -o wide` lists them on a real cluster.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_BUILTIN_RESOURCES_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_BUILTIN_RESOURCES_H_

#include <vector>

#include "tests/support/apiserver/object_store.h"

namespace wavepool::testing::apiserver {

// In discovery order: the core group first, then the named groups.
const std::vector<ResourceInfo>& BuiltinResources();

// Whether the server keeps metadata.generation for objects of `resource`: workloads, Pods (since
// 1.33), CustomResourceDefinitions and every custom resource; not ConfigMaps, Services, ...
bool TracksGeneration(const ResourceInfo& resource);

// The group resource of CustomResourceDefinitions
// ("customresourcedefinitions.apiextensions.k8s.io").
inline constexpr char kCrdResource[] = "customresourcedefinitions.apiextensions.k8s.io";

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_BUILTIN_RESOURCES_H_
