// The documents kubectl reads before it does anything: /version, discovery (/api, /apis and one
// resource list per group version) and the OpenAPI documents it validates manifests against.
// Built from the served resources (ObjectStore::Resources()), so a new CRD shows up at once.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_DISCOVERY_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_DISCOVERY_H_

#include <optional>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/apiserver/object_store.h"

namespace wavepool::testing::apiserver {

// /version: version.Info.
nlohmann::json VersionInfo();

// /api: APIVersions (the core group's versions).
nlohmann::json CoreApiVersions();

// /apis: APIGroupList of every group but the core one.
nlohmann::json ApiGroupList(const std::vector<ResourceInfo>& resources);

// /apis/<group>: APIGroup; nullopt when no resource is served in `group`.
std::optional<nlohmann::json> ApiGroup(const std::vector<ResourceInfo>& resources,
                                       std::string_view group);

// /api/v1, /apis/<group>/<version>: APIResourceList (with status subresources, short names,
// categories, verbs); nullopt when nothing is served there.
std::optional<nlohmann::json> ApiResourceList(const std::vector<ResourceInfo>& resources,
                                              std::string_view group, std::string_view version);

// /openapi/v3: the index of group-version documents.
nlohmann::json OpenApiV3Index(const std::vector<ResourceInfo>& resources);

// /openapi/v3/api/v1, /openapi/v3/apis/<group>/<version>: the document for one group version
// (`path` is what follows "/openapi/v3/"); nullopt when nothing is served there.
std::optional<nlohmann::json> OpenApiV3Document(const std::vector<ResourceInfo>& resources,
                                                std::string_view path);

// /openapi/v2: one Swagger 2.0 document for everything served.
nlohmann::json OpenApiV2Document(const std::vector<ResourceInfo>& resources);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_DISCOVERY_H_
