#include "tests/support/cluster/test_cluster.h"

#include <algorithm>
#include <iostream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/cluster/cluster_server.h"
#include "tests/support/cluster/crds.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/api/yaml.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::testing {
namespace {

constexpr std::size_t kLogLines = 400;
constexpr std::size_t kLogLinesInMessages = 30;
constexpr std::chrono::milliseconds kPollInterval(50);

// "a=b,c=d" for a label selector.
std::string Selector(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> terms;
  for (const auto& [key, value] : labels) terms.push_back(key + "=" + value);
  return absl::StrJoin(terms, ",");
}

std::vector<nlohmann::json> SortedByName(std::vector<nlohmann::json> items) {
  std::sort(items.begin(), items.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["metadata"].value("name", "") < b["metadata"].value("name", "");
  });
  return items;
}

}  // namespace

JobPredicate PhaseIs(api::JobPhase phase) {
  return [phase](const api::TrainingJob& job) { return job.status.phase == phase; };
}

JobPredicate ConditionIs(std::string_view type, std::string_view status, std::string_view reason) {
  return [type = std::string(type), status = std::string(status),
          reason = std::string(reason)](const api::TrainingJob& job) {
    const api::Condition* condition = api::FindCondition(job.status.conditions, type);
    return condition != nullptr && api::ToString(condition->status) == status &&
           (reason.empty() || condition->reason == reason);
  };
}

nlohmann::json ForegroundJob(std::string_view name, std::int64_t gpus) {
  return {{"apiVersion", "wavepool.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", std::string(name)}, {"namespace", "default"}}},
          {"spec",
           {{"role", "Foreground"},
            {"model", {{"name", "resnet50"}}},
            {"globalBatchSize", 32 * gpus},
            {"gpus", gpus},
            {"steps", 100000},
            {"parallelism", {{"strategy", "DataParallel"}}}}}};
}

nlohmann::json BackgroundJob(std::string_view name) {
  return {{"apiVersion", "wavepool.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", std::string(name)}, {"namespace", "default"}}},
          {"spec",
           {{"role", "Background"},
            {"model", {{"name", "resnet50"}}},
            {"globalBatchSize", 32},
            {"gpus", 1},
            {"steps", 100000},
            {"checkpoint", {{"path", absl::StrCat("/checkpoints/", std::string(name))}}}}}};
}

struct TestCluster::Member {
  std::vector<std::string> nodes;
  std::int64_t gpus = 0;  // per node
  std::unique_ptr<SimulatedKubelet> kubelet;
  std::unique_ptr<SimulatedNodeAgents> agents;
};

TestCluster::TestCluster(Options options) : options_(std::move(options)) {}

TestCluster::~TestCluster() {
  StopController();
  for (auto& member : members_) {
    member->agents->Stop();
    member->kubelet->Stop();
  }
  members_.clear();
}

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(int nodes,
                                                                std::int64_t gpus_per_node) {
  Options options;
  options.nodes = nodes;
  options.gpus_per_node = gpus_per_node;
  return Start(options);
}

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(Options options) {
  if (options.nodes < 1) return absl::InvalidArgumentError("options.nodes: must be >= 1");
  std::unique_ptr<TestCluster> cluster(new TestCluster(options));
  apiserver::TestApiServer::Options server_options = ClusterServerOptions();
  if (options.persistent) {
    absl::StatusOr<TempDir> dir = TempDir::Create("wavepool-cluster");
    if (!dir.ok()) return dir.status();
    cluster->data_dir_ = *std::move(dir);
    server_options.store.data_dir = cluster->data_dir_.path();
  }
  auto server = apiserver::TestApiServer::Start(server_options);
  if (!server.ok()) return server.status();
  cluster->server_ = std::move(*server);
  kube::ClientConfig config;
  config.server = cluster->server_->url();
  for (std::unique_ptr<kube::Client>* client : {&cluster->client_, &cluster->controller_client_}) {
    auto connected = kube::Client::Connect(config);
    if (!connected.ok()) return connected.status();
    *client = std::move(*connected);
  }
  if (absl::Status s = RegisterWavepoolCrds(*cluster->client_); !s.ok()) return s;
  // The controller's Lease lives in wavepool-system, as the Helm chart installs it.
  const nlohmann::json ns = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "wavepool-system"}}}};
  if (auto created = cluster->client_->Create(kube::kNamespaces, ns); !created.ok()) {
    return created.status();
  }
  std::vector<std::string> nodes;
  for (int i = 0; i < options.nodes; ++i) nodes.push_back(absl::StrCat("node-", i));
  if (absl::Status s = cluster->StartMember(nodes, options.gpus_per_node); !s.ok()) return s;
  cluster->controller_options_ = cluster->ControllerOptions();
  if (options.start_controller) {
    if (absl::Status s = cluster->StartController(); !s.ok()) return s;
  }
  return cluster;
}

absl::Status TestCluster::StartMember(std::vector<std::string> nodes, std::int64_t gpus) {
  auto member = std::make_unique<Member>();
  member->nodes = nodes;
  member->gpus = gpus;
  SimulatedKubelet::Options kubelet_options;
  kubelet_options.gpus_per_node = gpus;
  kubelet_options.stop_delay = options_.pod_stop_delay;
  auto kubelet = SimulatedKubelet::Start(*client_, nodes, kubelet_options);
  if (!kubelet.ok()) return kubelet.status();
  member->kubelet = std::move(*kubelet);
  SimulatedNodeAgents::Options agent_options;
  agent_options.heartbeat_period = options_.heartbeat_period;
  auto agents = SimulatedNodeAgents::Start(
      *client_,
      SimulatedNodeAgents::Uniform(nodes, gpus, "NVIDIA H100 80GB HBM3", options_.gpu_memory_bytes),
      agent_options);
  if (!agents.ok()) return agents.status();
  member->agents = std::move(*agents);
  members_.push_back(std::move(member));
  return absl::OkStatus();
}

TestCluster::Member* TestCluster::MemberOf(std::string_view node) {
  for (auto& member : members_) {
    if (std::find(member->nodes.begin(), member->nodes.end(), node) != member->nodes.end()) {
      return member.get();
    }
  }
  return nullptr;
}

SimulatedKubelet& TestCluster::KubeletOf(std::string_view node) { return *MemberOf(node)->kubelet; }

SimulatedNodeAgents& TestCluster::AgentsOf(std::string_view node) {
  return *MemberOf(node)->agents;
}

std::vector<std::string> TestCluster::NodeNames() const {
  std::vector<std::string> names;
  for (const auto& member : members_) {
    names.insert(names.end(), member->nodes.begin(), member->nodes.end());
  }
  return names;
}

controller::ManagerOptions TestCluster::ControllerOptions() const {
  controller::ManagerOptions options;
  options.workers = 2;
  options.leader_elect = options_.leader_election;
  options.identity = "controller-0";
  options.lease_duration = std::chrono::seconds(2);
  options.renew_deadline = std::chrono::milliseconds(1500);
  options.retry_period = std::chrono::milliseconds(250);
  options.http_port = options_.http_port;
  options.http_address = "127.0.0.1";
  // No periodic resync: tests see whether events alone drive the controller.
  options.resync_period = std::chrono::nanoseconds(0);
  options.informer_initial_backoff = std::chrono::milliseconds(100);
  options.informer_max_backoff = std::chrono::seconds(1);
  controller::ReconcilerOptions& reconciler = options.reconciler;
  reconciler.objects.default_image = "wavepool/worker:test";
  reconciler.heartbeat_timeout = std::chrono::seconds(10);
  reconciler.waiting_requeue = std::chrono::seconds(1);
  reconciler.restart_backoff_base = std::chrono::seconds(1);
  reconciler.restart_backoff_max = std::chrono::seconds(2);
  return options;
}

absl::Status TestCluster::StartController() { return StartController(controller_options_); }

absl::Status TestCluster::StartController(controller::ManagerOptions options) {
  StopController();
  controller_options_ = options;
  auto manager = NewController(std::move(options));
  if (!manager.ok()) return manager.status();
  controller_ = std::move(*manager);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<controller::ControllerManager>> TestCluster::NewController(
    controller::ManagerOptions options) {
  if (!options.log) {
    options.log = [this, id = options.identity](std::string_view line) {
      Log(absl::StrCat(id, ": ", std::string(line)));
    };
  }
  auto manager = controller::ControllerManager::Create(*controller_client_, std::move(options));
  if (!manager.ok()) return manager.status();
  if (absl::Status s = (*manager)->Start(); !s.ok()) return s;
  if (!(*manager)->WaitForSync(kDefaultWaitTimeout)) {
    return absl::DeadlineExceededError("the controller's caches did not sync");
  }
  return manager;
}

void TestCluster::StopController() {
  if (controller_ == nullptr) return;
  controller_->Stop();
  controller_.reset();
}

absl::Status TestCluster::RestartController() { return StartController(controller_options_); }

void TestCluster::Log(std::string_view line) {
  if (options_.print_controller_log) std::cerr << line << "\n";
  absl::MutexLock lock(&log_mu_);
  log_.emplace_back(line);
  while (log_.size() > kLogLines) log_.pop_front();
}

std::vector<std::string> TestCluster::ControllerLog() const {
  absl::MutexLock lock(&log_mu_);
  return {log_.begin(), log_.end()};
}

absl::Status TestCluster::AddNode(std::string_view node, std::int64_t gpus) {
  if (MemberOf(node) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("node ", std::string(node), " already runs"));
  }
  return StartMember({std::string(node)}, gpus);
}

absl::Status TestCluster::NodeDown(std::string_view node) {
  Member* member = MemberOf(node);
  if (member == nullptr) return absl::NotFoundError(absl::StrCat("node ", std::string(node)));
  if (absl::Status s = member->kubelet->NodeDown(node); !s.ok()) return s;
  return member->agents->StopHeartbeat(node);
}

absl::Status TestCluster::RestartKubelets() {
  for (auto& member : members_) {
    member->kubelet->Stop();
    member->kubelet.reset();
    SimulatedKubelet::Options kubelet_options;
    kubelet_options.gpus_per_node = member->gpus;
    kubelet_options.stop_delay = options_.pod_stop_delay;
    auto kubelet = SimulatedKubelet::Start(*client_, member->nodes, kubelet_options);
    if (!kubelet.ok()) return kubelet.status();
    member->kubelet = std::move(*kubelet);
  }
  return absl::OkStatus();
}

absl::Status TestCluster::NodeUp(std::string_view node) {
  Member* member = MemberOf(node);
  if (member == nullptr) return absl::NotFoundError(absl::StrCat("node ", std::string(node)));
  if (absl::Status s = member->kubelet->NodeUp(node); !s.ok()) return s;
  return member->agents->ResumeHeartbeat(node);
}

absl::StatusOr<api::TrainingJob> TestCluster::CreateJobFromYaml(std::string_view yaml) {
  absl::StatusOr<nlohmann::json> object = api::YamlToJson(yaml);
  if (!object.ok()) return object.status();
  return CreateJob(std::move(*object));
}

absl::StatusOr<api::TrainingJob> TestCluster::CreateJob(nlohmann::json job) {
  if (!job.is_object()) return absl::InvalidArgumentError("CreateJob: not one object");
  nlohmann::json& metadata = job["metadata"];
  if (!metadata.contains("namespace")) metadata["namespace"] = "default";
  absl::StatusOr<nlohmann::json> created = client_->Create(api::kTrainingJobs, job);
  if (!created.ok()) return created.status();
  return api::TrainingJob::FromJson(*created);
}

absl::StatusOr<api::TrainingJob> TestCluster::CreateJobFromExample(std::string_view file) {
  absl::StatusOr<std::string> text =
      ReadFile(absl::StrCat(WAVEPOOL_SOURCE_DIR, "/examples/", std::string(file)));
  if (!text.ok()) return text.status();
  return CreateJobFromYaml(*text);
}

absl::StatusOr<api::TrainingJob> TestCluster::GetJob(std::string_view name, std::string_view ns) {
  absl::StatusOr<nlohmann::json> json = client_->Get(api::kTrainingJobs, ns, name);
  if (!json.ok()) return json.status();
  return api::TrainingJob::FromJson(*json);
}

absl::Status TestCluster::DeleteJob(std::string_view name, std::string_view ns) {
  return client_->Delete(api::kTrainingJobs, ns, name);
}

absl::Status TestCluster::PatchJobSpec(std::string_view name, const nlohmann::json& spec_patch,
                                       std::string_view ns) {
  return client_
      ->Patch(api::kTrainingJobs, ns, name, kube::PatchType::kMerge, {{"spec", spec_patch}})
      .status();
}

absl::StatusOr<api::TrainingJob> TestCluster::WaitForJob(std::string_view name,
                                                         const JobPredicate& done,
                                                         std::chrono::nanoseconds timeout,
                                                         std::string_view ns) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  absl::StatusOr<api::TrainingJob> last = absl::NotFoundError("not read yet");
  while (true) {
    last = GetJob(name, ns);
    if (last.ok() && done(*last)) return last;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  std::string state = last.ok() ? api::JsonToYaml(api::ToJson(*last)["status"])
                                : std::string(last.status().message());
  std::vector<std::string> log = ControllerLog();
  if (log.size() > kLogLinesInMessages) log.erase(log.begin(), log.end() - kLogLinesInMessages);
  return absl::DeadlineExceededError(absl::StrCat("job ", std::string(ns), "/", std::string(name),
                                                  " did not get there; last status:\n", state,
                                                  "controller log:\n", absl::StrJoin(log, "\n")));
}

absl::Status TestCluster::WaitUntil(std::string_view what, const std::function<bool()>& done,
                                    std::chrono::nanoseconds timeout) {
  if (Eventually(done, timeout, kPollInterval)) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat("timed out waiting for ", std::string(what)));
}

std::vector<nlohmann::json> TestCluster::PodsOfJob(std::string_view job, std::string_view ns) {
  kube::ListOptions options;
  options.label_selector = Selector(controller::JobSelector(job));
  absl::StatusOr<kube::ObjectList> pods = client_->List(kube::kPods, ns, options);
  if (!pods.ok()) return {};
  return SortedByName(std::move(pods->items));
}

std::vector<nlohmann::json> TestCluster::ServicesOfJob(std::string_view job, std::string_view ns) {
  static const kube::ResourceType kServices{"", "v1", "Service", "services", true};
  kube::ListOptions options;
  options.label_selector = Selector(controller::JobSelector(job));
  absl::StatusOr<kube::ObjectList> services = client_->List(kServices, ns, options);
  if (!services.ok()) return {};
  return SortedByName(std::move(services->items));
}

std::vector<nlohmann::json> TestCluster::OwnedPods() {
  kube::ListOptions options;
  options.label_selector = absl::StrCat(std::string(controller::kLabelManagedBy), "=",
                                        std::string(controller::kManagedBy));
  absl::StatusOr<kube::ObjectList> pods = client_->List(kube::kPods, "", options);
  if (!pods.ok()) return {};
  return SortedByName(std::move(pods->items));
}

absl::Status TestCluster::FailPod(std::string_view ns, std::string_view pod, std::int64_t exit_code,
                                  std::string_view reason) {
  absl::StatusOr<nlohmann::json> json = client_->Get(kube::kPods, ns, pod);
  if (!json.ok()) return json.status();
  const std::string node = (*json)["spec"].value("nodeName", "");
  Member* member = MemberOf(node);
  if (member == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("pod ", std::string(pod), " is on no simulated node: '", node, "'"));
  }
  return member->kubelet->FailPod(ns, pod, exit_code, reason);
}

std::vector<nlohmann::json> TestCluster::EventsOf(std::string_view job, std::string_view ns) {
  absl::StatusOr<kube::ObjectList> events = client_->List(kube::kEvents, ns);
  if (!events.ok()) return {};
  std::vector<nlohmann::json> result;
  for (nlohmann::json& event : events->items) {
    const nlohmann::json involved = event.value("involvedObject", nlohmann::json::object());
    if (involved.value("kind", "") == "TrainingJob" && involved.value("name", "") == job) {
      result.push_back(std::move(event));
    }
  }
  return result;
}

absl::StatusOr<nlohmann::json> TestCluster::GetConfigMap(std::string_view name,
                                                         std::string_view ns) {
  return client_->Get(kube::kConfigMaps, ns, name);
}

}  // namespace wavepool::testing
