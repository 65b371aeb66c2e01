// meta.k8s.io/v1 Table answers for `kubectl get`: a CRD's additionalPrinterColumns
// (printer_columns.h), the real server's columns for the built-ins kubectl users look at (pods,
// nodes, namespaces, configmaps, events, leases), and Name plus Age for everything else.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_TABLE_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_TABLE_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/object_store.h"

namespace wavepool::testing::apiserver {

// Whether an Accept header asks for a Table
// ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json").
bool AcceptsTable(std::string_view accept);

// How much of each object a row carries (?includeObject=None|Metadata|Object; kubectl asks for
// Object). Metadata: a PartialObjectMetadata.
enum class IncludeObject { kNone, kMetadata, kObject };

// InvalidArgument for an unknown value.
absl::StatusOr<IncludeObject> ParseIncludeObject(std::string_view value);

// The Table of `objects` of `resource`. `list` carries the list's resourceVersion and continue
// token into the Table's metadata (nullptr for a single object's Table).
nlohmann::json ToTable(const ResourceInfo& resource, const std::vector<nlohmann::json>& objects,
                       const ListResult* list, IncludeObject include);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_TABLE_H_
