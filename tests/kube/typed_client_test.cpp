// Typed access through a scripted transport: paths of each kind, decoding of answers and lists.
#include "wavepool/kube/typed_client.h"

#include <memory>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/scripted_transport.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/kube_resources.h"

namespace wavepool::kube {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::wavepool::kube::testing::ScriptedTransport;
using ::wavepool::testing::StatusIs;

class TypedClientTest : public ::testing::Test {
 protected:
  TypedClientTest() {
    auto transport = std::make_unique<ScriptedTransport>();
    script_ = transport.get();
    client_ = std::make_unique<Client>(ClientConfig{}, std::move(transport));
  }
  ScriptedTransport* script_;  // owned by client_
  std::unique_ptr<Client> client_;
};

const char kJob[] = R"({"apiVersion":"wavepool.dev/v1alpha1","kind":"TrainingJob",
  "metadata":{"name":"tiny","namespace":"default","resourceVersion":"5"},
  "spec":{"role":"Foreground","model":{"name":"mlp_tiny"},"globalBatchSize":8,"gpus":2,
          "steps":20}})";

TEST_F(TypedClientTest, TrainingJobGetAndUpdateStatus) {
  script_->Answer(200, kJob);
  TypedClient<api::TrainingJob> jobs(client_.get());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, jobs.Get("default", "tiny"));
  EXPECT_EQ(script_->last_request().target,
            "/apis/wavepool.dev/v1alpha1/namespaces/default/trainingjobs/tiny");
  EXPECT_EQ(job.spec.gpus, 2);
  script_->Answer(200, kJob);
  ASSERT_OK(jobs.UpdateStatus(job));
  EXPECT_EQ(script_->last_request().method, "PUT");
  EXPECT_EQ(script_->last_request().target,
            "/apis/wavepool.dev/v1alpha1/namespaces/default/trainingjobs/tiny/status");
  EXPECT_EQ(json::parse(script_->last_request().body)["metadata"]["resourceVersion"], "5");
}

TEST_F(TypedClientTest, GpuNodeListDecodesItemsWithoutTypeMeta) {
  // Items of a list come without apiVersion and kind; the strict decoder still accepts them.
  script_->Answer(200, R"({"kind":"GPUNodeList","metadata":{"resourceVersion":"9"},
      "items":[{"metadata":{"name":"gpu-1"},"spec":{"nodeName":"gpu-1"}}]})");
  TypedClient<api::GpuNode> nodes(client_.get());
  ASSERT_OK_AND_ASSIGN(TypedList<api::GpuNode> list, nodes.List(""));
  EXPECT_EQ(script_->last_request().target, "/apis/wavepool.dev/v1alpha1/gpunodes");
  EXPECT_EQ(list.resource_version, "9");
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_EQ(list.items[0].spec.node_name, "gpu-1");
}

TEST_F(TypedClientTest, UndecodableAnswerKeepsTheDecodersError) {
  script_->Answer(200, R"({"kind":"Lease","metadata":{"name":"l","namespace":"n"},
      "spec":{"leaseDurationSeconds":"long"}})");
  TypedClient<Lease> leases(client_.get());
  EXPECT_THAT(leases.Get("n", "l"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Lease n/l: spec.leaseDurationSeconds: must be an integer")));
}

TEST_F(TypedClientTest, CreateEncodesAndDeleteAndErrorsPassThrough) {
  ConfigMap map;
  map.metadata.name = "plan";
  map.metadata.namespace_ = "team-a";
  map.data["plan.json"] = "{}";
  script_->Answer(201, R"({"kind":"ConfigMap","metadata":{"name":"plan","namespace":"team-a"}})");
  TypedClient<ConfigMap> maps(client_.get());
  ASSERT_OK(maps.Create(map));
  EXPECT_EQ(script_->last_request().target, "/api/v1/namespaces/team-a/configmaps");
  EXPECT_EQ(json::parse(script_->last_request().body)["data"]["plan.json"], "{}");
  script_->Answer(404, R"({"kind":"Status","code":404,"reason":"NotFound","message":"gone"})");
  EXPECT_TRUE(kube::IsNotFound(maps.Delete("team-a", "plan")));
  EXPECT_EQ(script_->last_request().method, "DELETE");
}

}  // namespace
}  // namespace wavepool::kube
