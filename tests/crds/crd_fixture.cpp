#include "tests/crds/crd_fixture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "tests/support/apiserver/api_status.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/field_path.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/training_job.h"
#include "wavepool/api/validation.h"
#include "wavepool/api/yaml.h"

namespace wavepool::testing::crds {
namespace {

using apiserver::FieldValidation;
using apiserver::ResourceInfo;
using apiserver::WriteOptions;
using apiserver::WriteResult;
using nlohmann::json;

WriteOptions Strict() {
  WriteOptions options;
  options.field_validation = FieldValidation::kStrict;
  return options;
}

std::optional<std::string> PathOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  return api::FieldPathOf(status).value_or("<no path: " + std::string(status.message()) + ">");
}

}  // namespace

std::string ReadSourceFile(const std::string& relative_path) {
  std::ifstream in(std::string(WAVEPOOL_SOURCE_DIR) + "/" + relative_path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<json> LoadSourceYaml(const std::string& relative_path) {
  const std::string text = ReadSourceFile(relative_path);
  if (text.empty()) return absl::NotFoundError(relative_path + ": missing or empty");
  return api::YamlToJson(text);
}

std::vector<std::string> YamlFilesIn(const std::string& directory) {
  std::vector<std::string> files;
  const std::filesystem::path root(WAVEPOOL_SOURCE_DIR);
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(root / directory, error)) {
    if (entry.path().extension() == ".yaml") {
      files.push_back(directory + "/" + entry.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> CauseFields(const absl::Status& status) {
  std::vector<std::string> fields;
  const json body = apiserver::StatusBodyOf(status);
  const json causes = body.value("details", json::object()).value("causes", json::array());
  for (const json& cause : causes) fields.push_back(cause.value("field", ""));
  return fields;
}

std::optional<std::string> ApiErrorPath(const json& training_job) {
  absl::StatusOr<api::TrainingJob> job = api::TrainingJob::FromJson(training_job);
  if (!job.ok()) return PathOf(job.status());
  api::SetDefaults(&*job);
  return PathOf(api::Validate(*job));
}

std::optional<std::string> ApiGpuNodeErrorPath(const json& gpu_node) {
  absl::StatusOr<api::GpuNode> node = api::GpuNode::FromJson(gpu_node);
  if (!node.ok()) return PathOf(node.status());
  return PathOf(api::Validate(*node));
}

void CrdStoreTest::SetUp() {
  ASSERT_OK_AND_ASSIGN(store_, apiserver::ObjectStore::Open({}));
  const std::optional<ResourceInfo> crds =
      store_->FindResource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  ASSERT_TRUE(crds.has_value());
  crds_ = *crds;
  for (const char* path : {kTrainingJobCrdPath, kGpuNodeCrdPath}) {
    ASSERT_OK_AND_ASSIGN(json crd, LoadSourceYaml(path));
    ASSERT_OK(store_->Create(crds_, "", std::move(crd), Strict()).status()) << path;
  }
  const std::optional<ResourceInfo> jobs =
      store_->FindResource("wavepool.dev", "v1alpha1", "trainingjobs");
  const std::optional<ResourceInfo> nodes =
      store_->FindResource("wavepool.dev", "v1alpha1", "gpunodes");
  ASSERT_TRUE(jobs.has_value());
  ASSERT_TRUE(nodes.has_value());
  jobs_ = *jobs;
  nodes_ = *nodes;
}

absl::StatusOr<WriteResult> CrdStoreTest::CreateJob(const json& object) {
  const std::string ns = object["metadata"].value("namespace", "default");
  return store_->Create(jobs_, ns, object, Strict());
}

absl::StatusOr<WriteResult> CrdStoreTest::CreateNode(const json& object) {
  return store_->Create(nodes_, "", object, Strict());
}

absl::StatusOr<WriteResult> CrdStoreTest::WriteStatus(const ResourceInfo& resource,
                                                      const std::string& ns,
                                                      const std::string& name, const json& status) {
  return store_->Modify(
      resource, ns, name, "status",
      [&status](const json& current) -> absl::StatusOr<json> {
        json next = current;
        next["status"] = status;
        return next;
      },
      Strict());
}

}  // namespace wavepool::testing::crds
