#include "wavepool/kube/resource.h"

#include "gtest/gtest.h"
#include "wavepool/api/kube_resources.h"

namespace wavepool::kube {
namespace {

TEST(ResourceType, CoreGroupLivesUnderApi) {
  EXPECT_EQ(kPods.ApiVersion(), "v1");
  EXPECT_EQ(kPods.CollectionPath("default"), "/api/v1/namespaces/default/pods");
  EXPECT_EQ(kPods.ObjectPath("default", "w-0"), "/api/v1/namespaces/default/pods/w-0");
}

TEST(ResourceType, NamedGroupsLiveUnderApis) {
  EXPECT_EQ(kLeases.ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(kLeases.ObjectPath("kube-system", "wavepool"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/wavepool");
  EXPECT_EQ(api::kTrainingJobs.CollectionPath("team-a"),
            "/apis/wavepool.dev/v1alpha1/namespaces/team-a/trainingjobs");
}

TEST(ResourceType, EmptyNamespaceListsEveryNamespace) {
  EXPECT_EQ(kPods.CollectionPath(""), "/api/v1/pods");
}

TEST(ResourceType, ClusterScopedTypesIgnoreTheNamespace) {
  EXPECT_EQ(kNodes.ObjectPath("default", "gpu-1"), "/api/v1/nodes/gpu-1");
  EXPECT_EQ(api::kGpuNodes.CollectionPath("default"), "/apis/wavepool.dev/v1alpha1/gpunodes");
}

TEST(ResourceType, SegmentsArePercentEncoded) {
  // A name cannot add path segments or a query: '/', '?', ' ' and '%' are escaped.
  EXPECT_EQ(kConfigMaps.ObjectPath("a b", "x/y?z%"),
            "/api/v1/namespaces/a%20b/configmaps/x%2Fy%3Fz%25");
  EXPECT_EQ(kNodes.ObjectPath("", "node.example-1_~"), "/api/v1/nodes/node.example-1_~");
}

}  // namespace
}  // namespace wavepool::kube
