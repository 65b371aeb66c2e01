#include "tests/support/cluster/crds.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cluster/cluster_test.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/resource.h"

namespace wavepool::testing {
namespace {

using ::testing::Eq;

TEST(WavepoolCrd, MinimalDefinitionWhenNoFileExists) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-crds"));
  ASSERT_OK_AND_ASSIGN(nlohmann::json crd, WavepoolCrd("gpunodes.wavepool.dev", dir.path()));
  EXPECT_THAT(crd["spec"]["scope"], Eq("Cluster"));
  EXPECT_THAT(crd["spec"]["names"]["kind"], Eq("GPUNode"));
  ASSERT_OK_AND_ASSIGN(crd, WavepoolCrd("trainingjobs.wavepool.dev", dir.path()));
  EXPECT_THAT(crd["spec"]["scope"], Eq("Namespaced"));
  EXPECT_THAT(crd["spec"]["versions"][0]["name"], Eq("v1alpha1"));
}

TEST(WavepoolCrd, ReadsTheFileWhenItExists) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-crds"));
  ASSERT_OK(WriteFile(dir.File("gpunodes.wavepool.dev.yaml"), R"(# a comment
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gpunodes.wavepool.dev
spec:
  group: wavepool.dev
  scope: Cluster
  names: {kind: GPUNode, plural: gpunodes, singular: gpunode, shortNames: [gn]}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)"));
  ASSERT_OK_AND_ASSIGN(nlohmann::json crd, WavepoolCrd("gpunodes.wavepool.dev", dir.path()));
  EXPECT_THAT(crd["spec"]["names"]["shortNames"][0], Eq("gn"));
}

TEST(WavepoolCrd, RefusesUnknownNamesAndFilesWithoutTheCrd) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-crds"));
  EXPECT_THAT(WavepoolCrd("pods", dir.path()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  ASSERT_OK(WriteFile(dir.File("trainingjobs.wavepool.dev.yaml"),
                      "kind: ConfigMap\nmetadata: {name: x}\n"));
  EXPECT_THAT(WavepoolCrd("trainingjobs.wavepool.dev", dir.path()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST_F(ClusterTest, RegisterWavepoolCrdsServesBothKindsAndIsIdempotent) {
  ASSERT_OK(RegisterWavepoolCrds(*client_));
  ASSERT_OK(RegisterWavepoolCrds(*client_));
  ASSERT_OK(client_->List(api::kGpuNodes, "").status());
  ASSERT_OK(client_->List(api::kTrainingJobs, "default").status());
}

}  // namespace
}  // namespace wavepool::testing
