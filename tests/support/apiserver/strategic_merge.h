// Strategic merge patch (application/strategic-merge-patch+json), as kubectl sends it for
// built-in kinds: lists with a patch merge key are merged by that key (a pod's containers by
// name, env by name, volumeMounts by mountPath, ...), other lists replaced, and the directives
// $patch (replace, merge, delete), $retainKeys, $setElementOrder/<list> and
// $deleteFromPrimitiveList/<list> honoured.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_STRATEGIC_MERGE_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_STRATEGIC_MERGE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

// `original` patched by `patch` for an object of `group`/`kind` (group "" for the core group;
// "apps", "coordination.k8s.io", ...). Pods, pod templates (in Deployments, DaemonSets,
// StatefulSets, ReplicaSets, ReplicationControllers, Jobs, CronJobs), Nodes, Namespaces and
// Services carry their k8s.io/api strategies; any other kind of a Kubernetes group (no dot, or
// ending in ".k8s.io") has ObjectMeta's (finalizers as a set, ownerReferences by uid), merges
// other maps and replaces other lists, directives applying. Kinds of other groups (custom
// resources) get a plain JSON merge patch (RFC 7386). A list item the original lacks goes before
// the original's remaining items, as on the real server. InvalidArgument (naming the field) for a
// malformed patch or directive.
absl::StatusOr<nlohmann::json> StrategicMergePatch(const nlohmann::json& original,
                                                   const nlohmann::json& patch,
                                                   std::string_view group, std::string_view kind);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STRATEGIC_MERGE_H_
