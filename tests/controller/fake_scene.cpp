// FakeScene and the small readers of what the reconciler wrote (fake_cluster.h).
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/controller/fake_cluster.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller {

using nlohmann::json;

FakeScene::FakeScene()
    : clock(MonotonicTime(), *api::ParseRfc3339("2026-05-01T10:00:00Z")), cluster(clock) {}

ReconcilerOptions FakeScene::Options() {
  ReconcilerOptions options;
  options.objects.default_image = "registry.example/wavepool-worker:1";
  options.clock = &clock;
  return options;
}

void FakeScene::AddNode(const std::string& name, int gpus) {
  api::GpuNode node;
  node.metadata.name = name;
  node.spec.node_name = name;
  node.status.heartbeat_time = api::FormatRfc3339(Now());
  for (int i = 0; i < gpus; ++i) {
    api::GpuStatus gpu;
    gpu.index = i;
    gpu.uuid = absl::StrCat("GPU-", name, "-", i);
    gpu.model = "NVIDIA H100 80GB HBM3";
    gpu.memory_bytes = std::int64_t{80} << 30;
    node.status.gpus.push_back(gpu);
  }
  cluster.PutGpuNode(node);
  cluster.SetNodeState(name, NodeState{true, true, false});
}

void FakeScene::Heartbeat() {
  for (api::GpuNode node : cluster.ListGpuNodes()) {
    node.status.heartbeat_time = api::FormatRfc3339(Now());
    cluster.PutGpuNode(node);
  }
}

namespace {

api::TrainingJob BaseJob(const std::string& name, api::Role role, std::int64_t gpus) {
  api::TrainingJob job;
  job.metadata.name = name;
  job.metadata.namespace_ = std::string(FakeScene::kNamespace);
  job.spec.role = role;
  job.spec.model.name = "mlp_tiny";
  job.spec.global_batch_size = 16;
  job.spec.gpus = gpus;
  job.spec.steps = 100;
  job.spec.checkpoint.path = absl::StrCat("/checkpoints/", name);
  return job;
}

}  // namespace

api::TrainingJob FakeScene::AddForeground(const std::string& name, std::int64_t gpus,
                                          bool allow_background) {
  api::TrainingJob job = BaseJob(name, api::Role::kForeground, gpus);
  job.spec.parallelism.strategy = api::Strategy::kDataParallel;
  job.spec.collocation.allow_background = allow_background;
  return cluster.AddJob(job);
}

api::TrainingJob FakeScene::AddBackground(const std::string& name) {
  return cluster.AddJob(BaseJob(name, api::Role::kBackground, 1));
}

api::TrainingJob FakeScene::AddLayerTableJob(const std::string& name,
                                             api::ConfigMapKeyRef layer_table) {
  api::TrainingJob job;
  job.metadata.name = name;
  job.metadata.namespace_ = std::string(kNamespace);
  job.spec.role = api::Role::kForeground;
  job.spec.model.layer_table = std::move(layer_table);
  job.spec.global_batch_size = 16;
  job.spec.gpus = 2;
  job.spec.steps = 10;
  return cluster.AddJob(job);
}

api::TrainingJob FakeScene::Job(const std::string& name) const {
  return *cluster.GetJob(kNamespace, name);
}

std::vector<json> FakeScene::CurrentPods(const std::string& name) const {
  const std::int64_t generation = Job(name).status.gang_generation;
  std::vector<json> pods;
  for (const kube::Pod& pod : cluster.PodsOfJob(kNamespace, name)) {
    const auto label = pod.metadata.labels.find(std::string(kLabelGangGeneration));
    if (label != pod.metadata.labels.end() && label->second == absl::StrCat(generation)) {
      pods.push_back(pod.raw);
    }
  }
  return pods;
}

void FakeScene::SetGangPhase(const std::string& name, std::string_view phase) {
  for (const json& pod : CurrentPods(name)) {
    cluster.SetPodPhase(kNamespace, pod["metadata"]["name"].get<std::string>(), phase)
        .IgnoreError();
  }
}

const api::Condition& ConditionOf(const api::TrainingJob& job, std::string_view type) {
  static const api::Condition kMissing;
  const api::Condition* condition = api::FindCondition(job.status.conditions, type);
  return condition == nullptr ? kMissing : *condition;
}

std::vector<std::string> PodNames(const std::vector<nlohmann::json>& pods) {
  std::vector<std::string> names;
  for (const nlohmann::json& pod : pods)
    names.push_back(pod["metadata"]["name"].get<std::string>());
  return names;
}

api::ObjectMeta MetaOf(const nlohmann::json& object) {
  if (!object.is_object() || !object.contains("metadata")) return {};
  absl::StatusOr<api::ObjectMeta> meta = api::ObjectMeta::FromJson(object["metadata"]);
  return meta.ok() ? *std::move(meta) : api::ObjectMeta();
}

std::vector<std::string> PodNames(const std::vector<kube::Pod>& pods) {
  std::vector<std::string> names;
  for (const kube::Pod& pod : pods) names.push_back(pod.metadata.name);
  return names;
}

std::vector<std::string> PodNames(const std::vector<kube::Service>& services) {
  std::vector<std::string> names;
  for (const kube::Service& service : services) names.push_back(service.metadata.name);
  return names;
}

}  // namespace wavepool::controller
