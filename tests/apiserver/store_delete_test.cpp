// Deletion: preconditions, finalizers, graceful pod termination, garbage collection, namespaces.
#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/store_test_util.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;

class StoreDeleteTest : public ::testing::Test {
 protected:
  void Open(bool finish_after_grace = true) {
    ObjectStore::Options options;
    options.clock = &clock_;
    options.finish_pod_deletion_after_grace = finish_after_grace;
    store_ = OpenMemoryStore(options);
    ASSERT_NE(store_, nullptr);
    pods_ = Resource(*store_, "", "v1", "pods");
    configmaps_ = Resource(*store_, "", "v1", "configmaps");
    namespaces_ = Resource(*store_, "", "v1", "namespaces");
    replicasets_ = Resource(*store_, "apps", "v1", "replicasets");
    deployments_ = Resource(*store_, "apps", "v1", "deployments");
  }
  void SetUp() override { Open(); }

  nlohmann::json CreateOk(const ResourceInfo& r, const std::string& ns, nlohmann::json object) {
    absl::StatusOr<WriteResult> made = store_->Create(r, ns, std::move(object), {});
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? made->object : nlohmann::json();
  }
  bool Exists(const ResourceInfo& r, const std::string& ns, const std::string& name) {
    return store_->Get(r, ns, name).ok();
  }
  static nlohmann::json OwnedBy(const std::string& name, const nlohmann::json& owner) {
    nlohmann::json object = Named(name);
    object["metadata"]["ownerReferences"] = {{{"apiVersion", owner["apiVersion"]},
                                              {"kind", owner["kind"]},
                                              {"name", owner["metadata"]["name"]},
                                              {"uid", owner["metadata"]["uid"]}}};
    return object;
  }
  nlohmann::json BoundPod(const std::string& name) {
    return CreateOk(pods_, "default", Named(name, {{"spec", {{"nodeName", "gpu-1"}}}}));
  }

  SimulatedClock clock_;
  std::unique_ptr<ObjectStore> store_;
  ResourceInfo pods_, configmaps_, namespaces_, replicasets_, deployments_;
};

TEST_F(StoreDeleteTest, DeleteRemovesAndReturnsTheObject) {
  const nlohmann::json cm = CreateOk(configmaps_, "default", Named("c"));
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(configmaps_, "default", "c", {}));
  EXPECT_TRUE(result.removed);
  EXPECT_EQ(result.object["metadata"]["uid"], cm["metadata"]["uid"]);
  EXPECT_EQ(RvNumber(result.object), store_->CurrentResourceVersion());
  EXPECT_FALSE(Exists(configmaps_, "default", "c"));
  EXPECT_THAT(store_->Delete(configmaps_, "default", "c", {}),
              StatusIs(absl::StatusCode::kNotFound, "configmaps \"c\" not found"));
}

TEST_F(StoreDeleteTest, PreconditionsAreChecked) {
  const nlohmann::json cm = CreateOk(configmaps_, "default", Named("c"));
  DeleteRequest wrong_uid;
  wrong_uid.precondition_uid = "other";
  EXPECT_THAT(store_->Delete(configmaps_, "default", "c", wrong_uid),
              StatusIs(absl::StatusCode::kAborted,
                       absl::StrCat("Operation cannot be fulfilled on configmaps \"c\": "
                                    "Precondition failed: UID in precondition: other, UID in "
                                    "object meta: ",
                                    cm["metadata"]["uid"].get<std::string>())));
  DeleteRequest wrong_rv;
  wrong_rv.precondition_resource_version = "1";
  EXPECT_THAT(
      store_->Delete(configmaps_, "default", "c", wrong_rv),
      StatusIs(absl::StatusCode::kAborted, HasSubstr("ResourceVersion in precondition: 1")));
  DeleteRequest bad_policy;
  bad_policy.propagation_policy = "Sideways";
  EXPECT_THAT(store_->Delete(configmaps_, "default", "c", bad_policy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Unsupported value")));
  EXPECT_TRUE(Exists(configmaps_, "default", "c"));
  DeleteRequest right;
  right.precondition_uid = cm["metadata"]["uid"];
  right.precondition_resource_version = Rv(cm);
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(configmaps_, "default", "c", right));
  EXPECT_TRUE(result.removed);
}

TEST_F(StoreDeleteTest, DryRunDeleteKeepsTheObject) {
  CreateOk(configmaps_, "default", Named("c"));
  const std::int64_t before = store_->CurrentResourceVersion();
  DeleteRequest dry;
  dry.dry_run = true;
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(configmaps_, "default", "c", dry));
  EXPECT_TRUE(result.removed);
  EXPECT_TRUE(Exists(configmaps_, "default", "c"));
  EXPECT_EQ(store_->CurrentResourceVersion(), before);
}

TEST_F(StoreDeleteTest, FinalizersHoldTheObjectUntilRemoved) {
  nlohmann::json held = Named("c");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  CreateOk(configmaps_, "default", held);
  ASSERT_OK_AND_ASSIGN(DeleteResult first, store_->Delete(configmaps_, "default", "c", {}));
  EXPECT_FALSE(first.removed);
  EXPECT_TRUE(first.object["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(first.object["metadata"]["deletionGracePeriodSeconds"], 0);
  // Deleting again changes nothing; adding a finalizer is refused.
  ASSERT_OK_AND_ASSIGN(DeleteResult second, store_->Delete(configmaps_, "default", "c", {}));
  EXPECT_EQ(Rv(second.object), Rv(first.object));
  nlohmann::json more = first.object;
  more["metadata"]["finalizers"].push_back("example.com/more");
  EXPECT_THAT(store_->Update(configmaps_, "default", "c", more, "", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no new finalizers can be added if the object is being deleted")));
  nlohmann::json released = first.object;
  released["metadata"]["finalizers"] = nlohmann::json::array();
  ASSERT_OK(store_->Update(configmaps_, "default", "c", released, "", {}).status());
  EXPECT_FALSE(Exists(configmaps_, "default", "c"));
}

TEST_F(StoreDeleteTest, UnboundPodGoesAtOnce) {
  CreateOk(pods_, "default", Named("p"));
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(pods_, "default", "p", {}));
  EXPECT_TRUE(result.removed);
}

TEST_F(StoreDeleteTest, BoundPodTerminatesForItsGracePeriodThenGoes) {
  BoundPod("p");
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> watch,
      store_->Watch(pods_, "default", FromVersion(store_->CurrentResourceVersion())));
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(pods_, "default", "p", {}));
  EXPECT_FALSE(result.removed);
  EXPECT_EQ(result.object["metadata"]["deletionGracePeriodSeconds"], 30);
  ASSERT_OK_AND_ASSIGN(std::optional<StoreEvent> modified,
                       watch->Next(std::chrono::milliseconds(0)));
  ASSERT_TRUE(modified.has_value());
  EXPECT_EQ(modified->type, EventType::kModified);
  clock_.Advance(std::chrono::seconds(29));
  EXPECT_TRUE(Exists(pods_, "default", "p"));
  clock_.Advance(std::chrono::seconds(1));
  // The removal happens on the store's timer; the watch reports it.
  ASSERT_OK_AND_ASSIGN(std::optional<StoreEvent> deleted, watch->Next(std::chrono::seconds(10)));
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->type, EventType::kDeleted);
  EXPECT_FALSE(Exists(pods_, "default", "p"));
}

TEST_F(StoreDeleteTest, GracePeriodComesFromTheRequestOrTheSpec) {
  CreateOk(pods_, "default",
           Named("spec", {{"spec", {{"nodeName", "n"}, {"terminationGracePeriodSeconds", 5}}}}));
  ASSERT_OK_AND_ASSIGN(DeleteResult from_spec, store_->Delete(pods_, "default", "spec", {}));
  EXPECT_EQ(from_spec.object["metadata"]["deletionGracePeriodSeconds"], 5);
  BoundPod("asked");
  DeleteRequest ten;
  ten.grace_period_seconds = 10;
  ASSERT_OK_AND_ASSIGN(DeleteResult asked, store_->Delete(pods_, "default", "asked", ten));
  EXPECT_EQ(asked.object["metadata"]["deletionGracePeriodSeconds"], 10);
  // A second DELETE may shorten the period...
  DeleteRequest three;
  three.grace_period_seconds = 3;
  ASSERT_OK_AND_ASSIGN(DeleteResult shorter, store_->Delete(pods_, "default", "asked", three));
  EXPECT_EQ(shorter.object["metadata"]["deletionGracePeriodSeconds"], 3);
  // ... but not lengthen it.
  ASSERT_OK_AND_ASSIGN(DeleteResult longer, store_->Delete(pods_, "default", "asked", ten));
  EXPECT_EQ(longer.object["metadata"]["deletionGracePeriodSeconds"], 3);
}

TEST_F(StoreDeleteTest, KubeletConfirmationWithGraceZeroRemovesAtOnce) {
  Open(/*finish_after_grace=*/false);
  BoundPod("p");
  ASSERT_OK(store_->Delete(pods_, "default", "p", {}).status());
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_TRUE(Exists(pods_, "default", "p"));  // no kubelet stand-in: still terminating
  DeleteRequest now;
  now.grace_period_seconds = 0;
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(pods_, "default", "p", now));
  EXPECT_TRUE(result.removed);
  EXPECT_FALSE(Exists(pods_, "default", "p"));
}

TEST_F(StoreDeleteTest, BackgroundDeletionCollectsDependents) {
  const nlohmann::json d = CreateOk(deployments_, "default", Named("d"));
  const nlohmann::json rs = CreateOk(replicasets_, "default", OwnedBy("rs", d));
  CreateOk(pods_, "default", OwnedBy("p", rs));
  CreateOk(configmaps_, "default", Named("unrelated"));
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(deployments_, "default", "d", {}));
  EXPECT_TRUE(result.removed);
  EXPECT_FALSE(Exists(replicasets_, "default", "rs"));
  EXPECT_FALSE(Exists(pods_, "default", "p"));  // dependents of dependents too
  EXPECT_TRUE(Exists(configmaps_, "default", "unrelated"));
}

TEST_F(StoreDeleteTest, DependentWithAnotherLiveOwnerSurvivesWithoutTheDanglingReference) {
  const nlohmann::json a = CreateOk(configmaps_, "default", Named("a"));
  const nlohmann::json b = CreateOk(configmaps_, "default", Named("b"));
  nlohmann::json shared = OwnedBy("shared", a);
  shared["metadata"]["ownerReferences"].push_back(
      OwnedBy("x", b)["metadata"]["ownerReferences"][0]);
  CreateOk(configmaps_, "default", shared);
  ASSERT_OK(store_->Delete(configmaps_, "default", "a", {}).status());
  ASSERT_OK_AND_ASSIGN(nlohmann::json kept, store_->Get(configmaps_, "default", "shared"));
  ASSERT_EQ(kept["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(kept["metadata"]["ownerReferences"][0]["uid"], b["metadata"]["uid"]);
}

TEST_F(StoreDeleteTest, OrphanRemovesOwnerReferences) {
  const nlohmann::json rs = CreateOk(replicasets_, "default", Named("rs"));
  CreateOk(pods_, "default", OwnedBy("p", rs));
  DeleteRequest orphan;
  orphan.propagation_policy = "Orphan";
  ASSERT_OK(store_->Delete(replicasets_, "default", "rs", orphan).status());
  ASSERT_OK_AND_ASSIGN(nlohmann::json pod, store_->Get(pods_, "default", "p"));
  EXPECT_FALSE(pod["metadata"].contains("ownerReferences"));
}

TEST_F(StoreDeleteTest, ForegroundRemovesDependentsBeforeTheOwner) {
  const nlohmann::json rs = CreateOk(replicasets_, "default", Named("rs"));
  CreateOk(pods_, "default", OwnedBy("p", rs));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> watch,
      store_->Watch(replicasets_, "default", FromVersion(store_->CurrentResourceVersion())));
  const std::int64_t before = store_->CurrentResourceVersion();
  DeleteRequest foreground;
  foreground.propagation_policy = "Foreground";
  ASSERT_OK(store_->Delete(replicasets_, "default", "rs", foreground).status());
  EXPECT_FALSE(Exists(pods_, "default", "p"));
  ASSERT_OK_AND_ASSIGN(std::optional<StoreEvent> event, watch->Next(std::chrono::seconds(1)));
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->type, EventType::kDeleted);
  EXPECT_EQ(event->resource_version, before + 2);  // the pod went first, at before + 1
}

TEST_F(StoreDeleteTest, NamespaceDeletionDeletesItsContents) {
  CreateOk(namespaces_, "", Named("team"));
  CreateOk(configmaps_, "team", Named("c"));
  CreateOk(pods_, "team", Named("p"));
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(namespaces_, "", "team", {}));
  EXPECT_TRUE(result.removed);
  EXPECT_FALSE(Exists(configmaps_, "team", "c"));
  EXPECT_FALSE(Exists(pods_, "team", "p"));
  EXPECT_FALSE(Exists(namespaces_, "", "team"));
}

TEST_F(StoreDeleteTest, NamespaceStaysTerminatingUntilItsLastObjectGoes) {
  CreateOk(namespaces_, "", Named("team"));
  nlohmann::json held = Named("held");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  CreateOk(configmaps_, "team", held);
  ASSERT_OK_AND_ASSIGN(DeleteResult result, store_->Delete(namespaces_, "", "team", {}));
  EXPECT_FALSE(result.removed);
  EXPECT_EQ(result.object["status"]["phase"], "Terminating");
  ASSERT_OK_AND_ASSIGN(nlohmann::json cm, store_->Get(configmaps_, "team", "held"));
  cm["metadata"].erase("finalizers");
  ASSERT_OK(store_->Update(configmaps_, "team", "held", cm, "", {}).status());
  EXPECT_FALSE(Exists(namespaces_, "", "team"));
}

TEST_F(StoreDeleteTest, SystemNamespacesCannotBeDeleted) {
  absl::StatusOr<DeleteResult> result = store_->Delete(namespaces_, "", "default", {});
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kPermissionDenied,
                               "namespaces \"default\" is forbidden: this namespace may not be "
                               "deleted"));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
