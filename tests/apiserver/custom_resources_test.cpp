// CustomResourceDefinitions and their objects in the object store.
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/store_test_util.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

nlohmann::json TrainingJobCrd() {
  return nlohmann::json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainingjobs.wavepool.dev"},
    "spec": {
      "group": "wavepool.dev",
      "scope": "Namespaced",
      "names": {"plural": "trainingjobs", "kind": "TrainingJob", "shortNames": ["tj"],
                "categories": ["all"]},
      "versions": [
        {"name": "v1alpha1", "served": true, "storage": true,
         "subresources": {"status": {}},
         "schema": {"openAPIV3Schema": {
           "type": "object",
           "properties": {
             "spec": {"type": "object", "required": ["gpus"], "properties": {
               "gpus": {"type": "integer", "minimum": 1},
               "policy": {"type": "string", "default": "Foreground"}}},
             "status": {"type": "object", "properties": {
               "phase": {"type": "string"}}}}}}},
        {"name": "v1beta1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object",
                                        "x-kubernetes-preserve-unknown-fields": true}}},
        {"name": "v0", "served": false, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}}
      ]
    }
  })");
}

nlohmann::json Job(const std::string& name, int gpus) {
  nlohmann::json job = Named(name);
  job["spec"] = {{"gpus", gpus}};
  return job;
}

class CustomResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenMemoryStore();
    ASSERT_NE(store_, nullptr);
    crds_ = Resource(*store_, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
    ASSERT_OK_AND_ASSIGN(WriteResult crd, store_->Create(crds_, "", TrainingJobCrd(), {}));
    crd_ = crd.object;
    jobs_ = Resource(*store_, "wavepool.dev", "v1alpha1", "trainingjobs");
  }

  std::unique_ptr<ObjectStore> store_;
  ResourceInfo crds_, jobs_;
  nlohmann::json crd_;
};

TEST_F(CustomResourcesTest, CreatedCrdIsEstablishedAndServed) {
  const nlohmann::json& status = crd_["status"];
  ASSERT_EQ(status["conditions"].size(), 2u);
  for (const nlohmann::json& condition : status["conditions"]) {
    EXPECT_EQ(condition["status"], "True") << condition.dump();
  }
  EXPECT_EQ(status["conditions"][0]["type"], "NamesAccepted");
  EXPECT_EQ(status["conditions"][1]["type"], "Established");
  EXPECT_EQ(status["acceptedNames"]["listKind"], "TrainingJobList");
  EXPECT_EQ(status["acceptedNames"]["singular"], "trainingjob");
  EXPECT_THAT(status["storedVersions"], ElementsAre("v1alpha1"));
  EXPECT_EQ(crd_["metadata"]["generation"], 1);

  EXPECT_EQ(jobs_.crd_name, "trainingjobs.wavepool.dev");
  EXPECT_EQ(jobs_.kind, "TrainingJob");
  EXPECT_EQ(jobs_.list_kind, "TrainingJobList");
  EXPECT_TRUE(jobs_.namespaced);
  EXPECT_TRUE(jobs_.status_subresource);
  EXPECT_THAT(jobs_.short_names, ElementsAre("tj"));
  EXPECT_THAT(jobs_.categories, ElementsAre("all"));
  EXPECT_EQ(jobs_.crd_version["name"], "v1alpha1");
  EXPECT_EQ(jobs_.GroupResource(), "trainingjobs.wavepool.dev");
  const std::optional<ResourceInfo> beta =
      store_->FindResource("wavepool.dev", "v1beta1", "trainingjobs");
  ASSERT_TRUE(beta.has_value());
  EXPECT_FALSE(beta->status_subresource);
  EXPECT_FALSE(store_->FindResource("wavepool.dev", "v0", "trainingjobs").has_value());
}

TEST_F(CustomResourcesTest, InvalidCrdIs422WithCauses) {
  nlohmann::json crd = TrainingJobCrd();
  crd["metadata"]["name"] = "jobs.wavepool.dev";
  crd["spec"]["scope"] = "Galaxy";
  crd["spec"]["versions"][1]["storage"] = true;
  crd["spec"]["versions"][2].erase("schema");
  absl::StatusOr<WriteResult> made = store_->Create(crds_, "", crd, {});
  ASSERT_EQ(HttpCodeOf(made.status()), 422) << made.status();
  EXPECT_THAT(made.status().message(),
              HasSubstr("CustomResourceDefinition.apiextensions.k8s.io \"jobs.wavepool.dev\" is "
                        "invalid: ["));
  std::vector<std::string> fields;
  const nlohmann::json body = StatusBodyOf(made.status());
  for (const nlohmann::json& cause : body["details"]["causes"]) {
    fields.push_back(cause["field"]);
  }
  EXPECT_THAT(fields,
              ::testing::UnorderedElementsAre("metadata.name", "spec.scope", "spec.versions",
                                              "spec.versions[2].schema.openAPIV3Schema"));
  EXPECT_THAT(made.status().message(), HasSubstr("must be spec.names.plural+\".\"+spec.group"));
  EXPECT_THAT(made.status().message(),
              HasSubstr("must have exactly one version marked as storage version"));
}

TEST_F(CustomResourcesTest, NonStructuralSchemaIsRejected) {
  nlohmann::json crd = TrainingJobCrd();
  crd["metadata"]["name"] = "widgets.wavepool.dev";
  crd["spec"]["names"] = {{"plural", "widgets"}, {"kind", "Widget"}};
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].erase("type");
  absl::StatusOr<WriteResult> made = store_->Create(crds_, "", crd, {});
  EXPECT_EQ(HttpCodeOf(made.status()), 422) << made.status();
  EXPECT_THAT(made.status().message(),
              HasSubstr("spec.versions[0].schema.openAPIV3Schema.properties[spec].type"));
  EXPECT_FALSE(store_->FindResource("wavepool.dev", "v1alpha1", "widgets").has_value());
}

TEST_F(CustomResourcesTest, ObjectsAreDefaultedAndValidated) {
  ASSERT_OK_AND_ASSIGN(WriteResult made, store_->Create(jobs_, "default", Job("a", 2), {}));
  EXPECT_EQ(made.object["apiVersion"], "wavepool.dev/v1alpha1");
  EXPECT_EQ(made.object["kind"], "TrainingJob");
  EXPECT_EQ(made.object["spec"]["policy"], "Foreground");
  EXPECT_EQ(made.object["metadata"]["generation"], 1);
  absl::StatusOr<WriteResult> invalid = store_->Create(jobs_, "default", Job("b", 0), {});
  EXPECT_EQ(HttpCodeOf(invalid.status()), 422);
  EXPECT_THAT(invalid.status().message(),
              HasSubstr("TrainingJob.wavepool.dev \"b\" is invalid: spec.gpus"));
  EXPECT_EQ(StatusBodyOf(invalid.status())["details"]["causes"][0]["field"], "spec.gpus");
}

TEST_F(CustomResourcesTest, UnknownFieldsArePrunedWarnedOrRefused) {
  nlohmann::json coloured = Job("a", 1);
  coloured["spec"]["colour"] = "blue";
  ASSERT_OK_AND_ASSIGN(WriteResult warned, store_->Create(jobs_, "default", coloured, {}));
  EXPECT_FALSE(warned.object["spec"].contains("colour"));
  EXPECT_THAT(warned.warnings, ElementsAre("unknown field \"spec.colour\""));
  WriteOptions ignore;
  ignore.field_validation = FieldValidation::kIgnore;
  coloured["metadata"]["name"] = "b";
  ASSERT_OK_AND_ASSIGN(WriteResult quiet, store_->Create(jobs_, "default", coloured, ignore));
  EXPECT_TRUE(quiet.warnings.empty());
  WriteOptions strict;
  strict.field_validation = FieldValidation::kStrict;
  coloured["metadata"]["name"] = "c";
  absl::StatusOr<WriteResult> refused = store_->Create(jobs_, "default", coloured, strict);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument,
                                "strict decoding error: unknown field \"spec.colour\""));
  EXPECT_EQ(HttpCodeOf(refused.status()), 400);
}

TEST_F(CustomResourcesTest, StatusSubresourceAndGeneration) {
  nlohmann::json job = Job("a", 1);
  job["status"] = {{"phase", "Done"}};
  ASSERT_OK_AND_ASSIGN(WriteResult made, store_->Create(jobs_, "default", job, {}));
  EXPECT_FALSE(made.object.contains("status"));  // dropped at creation
  nlohmann::json both = made.object;
  both["spec"]["gpus"] = 4;
  both["status"] = {{"phase", "Running"}};
  ASSERT_OK_AND_ASSIGN(WriteResult status,
                       store_->Update(jobs_, "default", "a", both, "status", {}));
  EXPECT_EQ(status.object["status"]["phase"], "Running");
  EXPECT_EQ(status.object["spec"]["gpus"], 1);
  EXPECT_EQ(status.object["metadata"]["generation"], 1);
  both["metadata"]["resourceVersion"] = status.object["metadata"]["resourceVersion"];
  both["status"] = {{"phase", "Ignored"}};
  ASSERT_OK_AND_ASSIGN(WriteResult main, store_->Update(jobs_, "default", "a", both, "", {}));
  EXPECT_EQ(main.object["spec"]["gpus"], 4);
  EXPECT_EQ(main.object["status"]["phase"], "Running");
  EXPECT_EQ(main.object["metadata"]["generation"], 2);
}

TEST_F(CustomResourcesTest, UpdateNeedsAResourceVersion) {
  ASSERT_OK(store_->Create(jobs_, "default", Job("a", 1), {}).status());
  absl::StatusOr<WriteResult> blind = store_->Update(jobs_, "default", "a", Job("a", 2), "", {});
  EXPECT_EQ(HttpCodeOf(blind.status()), 422);
  EXPECT_THAT(blind.status().message(),
              HasSubstr("metadata.resourceVersion: Invalid value: 0x0: must be specified for an "
                        "update"));
}

TEST_F(CustomResourcesTest, EveryServedVersionSeesTheSameObjects) {
  ASSERT_OK(store_->Create(jobs_, "default", Job("a", 1), {}).status());
  const ResourceInfo beta = Resource(*store_, "wavepool.dev", "v1beta1", "trainingjobs");
  ASSERT_OK_AND_ASSIGN(nlohmann::json as_beta, store_->Get(beta, "default", "a"));
  EXPECT_EQ(as_beta["apiVersion"], "wavepool.dev/v1beta1");
  ASSERT_OK_AND_ASSIGN(ListResult list, store_->List(beta, "", {}));
  EXPECT_EQ(list.items.size(), 1u);
}

TEST_F(CustomResourcesTest, FieldSelectorsOnCustomResourcesUseTheGenericWording) {
  ListQuery query;
  query.field_selector = "spec.gpus=1";
  EXPECT_THAT(store_->List(jobs_, "", query),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"spec.gpus\" is not a known field selector")));
}

TEST_F(CustomResourcesTest, DeletingTheCrdRemovesItsObjectsAndStopsServing) {
  ASSERT_OK(store_->Create(jobs_, "default", Job("a", 1), {}).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreWatch> watch,
                       store_->Watch(jobs_, "", FromVersion(store_->CurrentResourceVersion())));
  ASSERT_OK_AND_ASSIGN(DeleteResult deleted,
                       store_->Delete(crds_, "", "trainingjobs.wavepool.dev", {}));
  EXPECT_TRUE(deleted.removed);
  ASSERT_OK_AND_ASSIGN(std::optional<StoreEvent> event, watch->Next(std::chrono::seconds(1)));
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->type, EventType::kDeleted);
  EXPECT_FALSE(store_->FindResource("wavepool.dev", "v1alpha1", "trainingjobs").has_value());
  absl::StatusOr<nlohmann::json> gone = store_->Get(jobs_, "default", "a");
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound,
                             "the server could not find the requested resource"));
  // Recreating the CRD serves an empty resource.
  ASSERT_OK(store_->Create(crds_, "", TrainingJobCrd(), {}).status());
  ASSERT_OK_AND_ASSIGN(ListResult list, store_->List(jobs_, "", {}));
  EXPECT_TRUE(list.items.empty());
}

TEST_F(CustomResourcesTest, UnchangedCrdUpdateWritesNothing) {
  // Conditions from long ago (set through /status) keep their transition times.
  nlohmann::json old = crd_;
  for (nlohmann::json& c : old["status"]["conditions"])
    c["lastTransitionTime"] = "2020-01-01T00:00:00Z";
  ASSERT_OK_AND_ASSIGN(WriteResult aged,
                       store_->Update(crds_, "", "trainingjobs.wavepool.dev", old, "status", {}));
  const std::int64_t before = store_->CurrentResourceVersion();
  ASSERT_OK_AND_ASSIGN(WriteResult same,
                       store_->Update(crds_, "", "trainingjobs.wavepool.dev", aged.object, "", {}));
  EXPECT_EQ(same.object, aged.object);
  EXPECT_EQ(store_->CurrentResourceVersion(), before);
}

TEST_F(CustomResourcesTest, CrdScopeIsImmutable) {
  nlohmann::json changed = crd_;
  changed["spec"]["scope"] = "Cluster";
  EXPECT_THAT(store_->Update(crds_, "", "trainingjobs.wavepool.dev", changed, "", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field is immutable")));
}

TEST(CustomResourcesPersistence, ReopenedStoreServesTheCrdAgain) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wavepool-crd-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ObjectStore::Options options;
  options.data_dir = dir.string();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, ObjectStore::Open(options));
    ASSERT_OK(
        store
            ->Create(Resource(*store, "apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                     "", TrainingJobCrd(), {})
            .status());
    ASSERT_OK(store
                  ->Create(Resource(*store, "wavepool.dev", "v1alpha1", "trainingjobs"), "default",
                           Job("a", 3), {})
                  .status());
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, ObjectStore::Open(options));
  const std::optional<ResourceInfo> jobs =
      store->FindResource("wavepool.dev", "v1alpha1", "trainingjobs");
  ASSERT_TRUE(jobs.has_value());
  ASSERT_OK_AND_ASSIGN(nlohmann::json job, store->Get(*jobs, "default", "a"));
  EXPECT_EQ(job["spec"]["gpus"], 3);
  // The schema is enforced after the restart too.
  EXPECT_EQ(HttpCodeOf(store->Create(*jobs, "default", Job("b", 0), {}).status()), 422);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace wavepool::testing::apiserver
