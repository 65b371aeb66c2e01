#include "tests/integration/fault_support.h"

#include <iostream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/support/eventually.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/http_transport.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller::fault {
namespace {

using testing::Eventually;
using testing::apiserver::ObjectStore;
using testing::apiserver::TestApiServer;

nlohmann::json JobSkeleton(std::string_view name, std::string_view role, std::int64_t gpus) {
  return {
      {"apiVersion", "wavepool.dev/v1alpha1"},
      {"kind", "TrainingJob"},
      {"metadata", {{"name", std::string(name)}, {"namespace", kNamespace}}},
      {"spec",
       {{"role", std::string(role)},
        {"model", {{"name", "mlp_tiny"}}},
        {"globalBatchSize", 64},
        {"gpus", gpus},
        {"steps", 1'000'000},
        {"template",
         {{"spec",
           {{"containers",
             {{{"name", "worker"}, {"image", "registry.example.com/wavepool/worker:test"}}}}}}}}}}};
}

std::string Label(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json& labels = object["metadata"].value("labels", nlohmann::json::object());
  auto it = labels.find(std::string(key));
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Annotation(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json& annotations =
      object["metadata"].value("annotations", nlohmann::json::object());
  auto it = annotations.find(std::string(key));
  return it != annotations.end() && it->is_string() ? it->get<std::string>() : "";
}

// A pod that holds GPUs: not being deleted and not finished.
bool IsLive(const nlohmann::json& pod) {
  if (pod["metadata"].contains("deletionTimestamp")) return false;
  const std::string phase = pod.value("status", nlohmann::json::object()).value("phase", "");
  return phase != "Succeeded" && phase != "Failed";
}

std::vector<std::string> SplitUuids(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The resource plural of a request target: "/api/v1/namespaces/x/pods/p/status" -> "pods".
std::string ResourceOf(const std::string& target) {
  const std::string path = target.substr(0, target.find('?'));
  std::vector<std::string> parts;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (!part.empty()) parts.push_back(part);
  }
  // /api/v1/... or /apis/<group>/<version>/...; then optionally namespaces/<ns>.
  std::size_t i = parts.empty() ? 0 : (parts[0] == "api" ? 2 : 3);
  if (i + 1 < parts.size() && parts[i] == "namespaces" && i + 2 < parts.size()) i += 2;
  return i < parts.size() ? parts[i] : path;
}

}  // namespace

nlohmann::json ForegroundJob(std::string_view name, std::int64_t gpus) {
  nlohmann::json job = JobSkeleton(name, "Foreground", gpus);
  // DataParallel takes the largest power of two <= gpus; Auto would run the tiny MLP on one GPU.
  job["spec"]["parallelism"] = {{"strategy", "DataParallel"}};
  return job;
}

nlohmann::json BackgroundJob(std::string_view name) {
  nlohmann::json job = JobSkeleton(name, "Background", 1);
  job["spec"]["checkpoint"] = {{"path", "/checkpoints/" + std::string(name)},
                               {"intervalSteps", 100}};
  return job;
}

std::vector<nlohmann::json> MixedJobs(std::mt19937& rng, int foreground, int background,
                                      std::int64_t max_gang, std::int64_t gpu_budget) {
  std::vector<nlohmann::json> jobs;
  std::uniform_int_distribution<int> exponent(0, 3);
  std::int64_t left = gpu_budget;
  for (int i = 0; i < std::max(foreground, background); ++i) {
    if (i < foreground && left > 0) {
      std::int64_t gpus = std::int64_t{1} << exponent(rng);
      while (gpus > 1 && (gpus > max_gang || gpus > left)) gpus /= 2;
      left -= gpus;
      jobs.push_back(ForegroundJob("fg-" + std::to_string(i), gpus));
    }
    if (i < background) jobs.push_back(BackgroundJob("bg-" + std::to_string(i)));
  }
  return jobs;
}

absl::Status CreateNamespace(kube::Client& client) {
  nlohmann::json ns = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}};
  absl::StatusOr<nlohmann::json> created = client.Create(kube::kNamespaces, ns);
  if (!created.ok() && !kube::IsAlreadyExists(created.status())) return created.status();
  return absl::OkStatus();
}

absl::Status CreateJobs(kube::Client& client, const std::vector<nlohmann::json>& jobs) {
  for (const nlohmann::json& job : jobs) {
    absl::Status status;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    do {
      absl::StatusOr<nlohmann::json> created = client.Create(api::kTrainingJobs, job);
      status = created.status();
      if (kube::IsAlreadyExists(status)) status = absl::OkStatus();  // a retry that got through
      if (status.ok() || !absl::IsUnavailable(status)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < give_up);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::mt19937 SeededRng() {
  const char* text = std::getenv("WAVEPOOL_FAULT_SEED");
  const unsigned seed = text != nullptr && *text != '\0'
                            ? static_cast<unsigned>(std::strtoul(text, nullptr, 10))
                            : std::random_device{}();
  std::cout << "WAVEPOOL_FAULT_SEED=" << seed << "\n";
  ::testing::Test::RecordProperty("seed", static_cast<int>(seed));
  return std::mt19937(seed);
}

absl::StatusOr<Snapshot> TakeSnapshot(kube::Client& client) {
  Snapshot snapshot;
  absl::StatusOr<kube::ObjectList> jobs = client.ListAll(api::kTrainingJobs, kNamespace);
  if (!jobs.ok()) return jobs.status();
  for (const nlohmann::json& item : jobs->items) {
    absl::StatusOr<api::TrainingJob> job = api::TrainingJob::FromJson(item);
    if (!job.ok()) return job.status();
    snapshot.jobs.push_back(*std::move(job));
  }
  absl::StatusOr<kube::ObjectList> pods = client.ListAll(kube::kPods, kNamespace);
  if (!pods.ok()) return pods.status();
  snapshot.pods = std::move(pods->items);
  return snapshot;
}

int CountPlaced(const Snapshot& snapshot) {
  int placed = 0;
  for (const api::TrainingJob& job : snapshot.jobs) placed += !job.status.placement.empty();
  return placed;
}

int CountRunning(const Snapshot& snapshot) {
  int running = 0;
  for (const api::TrainingJob& job : snapshot.jobs) {
    running += job.status.phase == api::JobPhase::kRunning;
  }
  return running;
}

Snapshot WaitAllRunning(kube::Client& client, std::size_t jobs, std::chrono::nanoseconds timeout,
                        const std::function<bool(const Snapshot&)>& also) {
  Snapshot last;
  const bool converged = Eventually(
      [&] {
        absl::StatusOr<Snapshot> snapshot = TakeSnapshot(client);
        if (!snapshot.ok()) return false;
        last = *std::move(snapshot);
        return last.jobs.size() == jobs && CountRunning(last) == static_cast<int>(jobs) &&
               CountPlaced(last) == static_cast<int>(jobs) && (!also || also(last));
      },
      timeout, kSnapshotPoll);
  EXPECT_TRUE(converged) << CountRunning(last) << " of " << jobs << " jobs Running, "
                         << CountPlaced(last) << " placed";
  return last;
}

std::vector<std::string> CheckInvariants(const Snapshot& snapshot,
                                         const InvariantOptions& options) {
  std::vector<std::string> problems;
  std::map<std::string, std::vector<const nlohmann::json*>> live_by_job;
  std::map<std::string, std::vector<std::string>> fg_by_gpu, bg_by_gpu;
  for (const nlohmann::json& pod : snapshot.pods) {
    if (!IsLive(pod)) continue;
    const std::string name = pod["metadata"].value("name", "");
    live_by_job[Annotation(pod, kAnnotationJobName)].push_back(&pod);
    auto& by_gpu = Label(pod, kLabelRole) == "Foreground" ? fg_by_gpu : bg_by_gpu;
    for (const std::string& uuid : SplitUuids(Annotation(pod, kAnnotationGpuUuids))) {
      by_gpu[uuid].push_back(name);
    }
  }
  for (const auto& [uuid, pods] : fg_by_gpu) {
    if (pods.size() > 1) {
      problems.push_back(
          absl::StrCat("GPU ", uuid, " held by foreground pods ", absl::StrJoin(pods, ", ")));
    }
  }
  for (const auto& [uuid, pods] : bg_by_gpu) {
    if (pods.size() > 1) {
      problems.push_back(
          absl::StrCat("GPU ", uuid, " held by background pods ", absl::StrJoin(pods, ", ")));
    }
  }
  for (const api::TrainingJob& job : snapshot.jobs) {
    const std::string& name = job.metadata.name;
    const std::int64_t generation = job.status.gang_generation;
    if (job.status.placement.empty()) {
      if (options.all_placed) problems.push_back(name + ": not placed");
      continue;
    }
    if (options.first_generation && generation != 0) {
      nlohmann::json conditions = nlohmann::json::array();
      for (const nlohmann::json& c : api::ToJson(job)["status"].value("conditions", conditions)) {
        conditions.push_back(absl::StrCat(c.value("type", ""), "=", c.value("status", ""), " ",
                                          c.value("reason", ""), ": ", c.value("message", "")));
      }
      problems.push_back(absl::StrCat(name, ": gangGeneration ", generation,
                                      ", expected 0; restarts ", job.status.restarts,
                                      "; conditions ", conditions.dump()));
    }
    std::map<std::string, const api::PodPlacement*> wanted;
    for (const api::PodPlacement& placement : job.status.placement) {
      wanted[placement.pod] = &placement;
      if (options.avoided_nodes.count(placement.node) > 0) {
        problems.push_back(absl::StrCat(name, ": placed on avoided node ", placement.node));
      }
    }
    std::set<std::string> ranks;
    for (const nlohmann::json* pod : live_by_job[name]) {
      const std::string pod_name = (*pod)["metadata"].value("name", "");
      const std::string pod_generation = Label(*pod, kLabelGangGeneration);
      if (pod_generation != std::to_string(generation)) {
        problems.push_back(absl::StrCat(name, ": live pod ", pod_name, " of generation ",
                                        pod_generation, ", status.gangGeneration ", generation));
      }
      if (!ranks.insert(Label(*pod, kLabelRank)).second) {
        problems.push_back(absl::StrCat(name, ": two live pods of rank ", Label(*pod, kLabelRank)));
      }
      auto it = wanted.find(pod_name);
      if (it == wanted.end()) {
        problems.push_back(absl::StrCat(name, ": live pod ", pod_name, " not in status.placement"));
        continue;
      }
      const std::string node = (*pod)["spec"].value("nodeName", "");
      const std::vector<std::string> uuids = SplitUuids(Annotation(*pod, kAnnotationGpuUuids));
      if (node != it->second->node || uuids != it->second->gpu_uuids) {
        problems.push_back(absl::StrCat(name, ": pod ", pod_name, " on ", node, " [",
                                        absl::StrJoin(uuids, ","), "], placement says ",
                                        it->second->node, " [",
                                        absl::StrJoin(it->second->gpu_uuids, ","), "]"));
      }
      wanted.erase(it);
    }
    if (options.all_placed) {
      for (const auto& [pod_name, placement] : wanted) {
        problems.push_back(absl::StrCat(name, ": placed pod ", pod_name, " missing"));
      }
    }
  }
  return problems;
}

absl::StatusOr<std::unique_ptr<PodCreationLog>> PodCreationLog::Start(ObjectStore& store) {
  std::optional<testing::apiserver::ResourceInfo> pods = store.FindResource("", "v1", "pods");
  if (!pods.has_value()) return absl::NotFoundError("pods are not served");
  testing::apiserver::ListQuery query;
  query.resource_version = std::to_string(store.CurrentResourceVersion());
  absl::StatusOr<std::unique_ptr<testing::apiserver::StoreWatch>> watch =
      store.Watch(*pods, "", query);
  if (!watch.ok()) return watch.status();
  std::unique_ptr<PodCreationLog> log(new PodCreationLog());
  log->watch_ = *std::move(watch);
  log->thread_ = std::thread([raw = log.get()] { raw->Loop(); });
  return log;
}

PodCreationLog::~PodCreationLog() { Stop(); }

void PodCreationLog::Stop() {
  stopping_ = true;
  if (watch_ != nullptr) watch_->Stop();
  if (thread_.joinable()) thread_.join();
}

void PodCreationLog::Loop() {
  while (!stopping_) {
    auto event = watch_->Next(std::chrono::milliseconds(200));
    if (!event.ok()) return;
    if (!event->has_value() || (*event)->type != testing::apiserver::EventType::kAdded) continue;
    const nlohmann::json& metadata = (*event)->object["metadata"];
    absl::MutexLock lock(&mu_);
    uids_by_pod_[metadata.value("name", "")].insert(metadata.value("uid", ""));
  }
}

std::map<std::string, int> PodCreationLog::Creations() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, int> out;
  for (const auto& [name, uids] : uids_by_pod_) out[name] = static_cast<int>(uids.size());
  return out;
}

std::vector<std::string> PodCreationLog::Duplicates() const {
  std::vector<std::string> problems;
  for (const auto& [name, count] : Creations()) {
    if (count > 1) problems.push_back(absl::StrCat("pod ", name, " created ", count, " times"));
  }
  return problems;
}

CountingTransport::CountingTransport(std::unique_ptr<kube::Transport> inner)
    : inner_(std::move(inner)) {}

absl::StatusOr<kube::HttpResponse> CountingTransport::Send(const kube::HttpRequest& request) {
  if (cut_) return absl::UnavailableError("connection refused (transport cut by the test)");
  absl::StatusOr<kube::HttpResponse> response = inner_->Send(request);
  if (request.method != "GET" && response.ok()) {
    absl::MutexLock lock(&mu_);
    ++writes_[ResourceOf(request.target)];
  }
  return response;
}

absl::StatusOr<std::unique_ptr<kube::LineReader>> CountingTransport::Stream(
    const kube::HttpRequest& request) {
  if (cut_) return absl::UnavailableError("connection refused (transport cut by the test)");
  return inner_->Stream(request);
}

std::map<std::string, int> CountingTransport::Writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

absl::StatusOr<std::unique_ptr<kube::Client>> ConnectTo(const TestApiServer& server,
                                                        CountingTransport** counting,
                                                        std::chrono::milliseconds timeout) {
  kube::ClientConfig config;
  config.server = server.url();
  config.timeout = timeout;
  absl::StatusOr<std::unique_ptr<kube::Transport>> transport = kube::NewHttpTransport(config);
  if (!transport.ok()) return transport.status();
  std::unique_ptr<kube::Transport> chosen = *std::move(transport);
  if (counting != nullptr) {
    auto wrapper = std::make_unique<CountingTransport>(std::move(chosen));
    *counting = wrapper.get();
    chosen = std::move(wrapper);
  }
  return std::make_unique<kube::Client>(config, std::move(chosen));
}

testing::TestCluster::Options FixtureOptions(int nodes, std::int64_t gpus_per_node,
                                             bool start_controller) {
  testing::TestCluster::Options options;
  options.nodes = nodes;
  options.gpus_per_node = gpus_per_node;
  options.start_controller = start_controller;
  return options;
}

ManagerOptions FastManagerOptions() {
  ManagerOptions options;
  options.workers = 2;
  options.leader_elect = false;
  options.http_port = -1;
  options.resync_period = std::chrono::seconds(1);
  options.informer_initial_backoff = std::chrono::milliseconds(50);
  options.informer_max_backoff = std::chrono::milliseconds(500);
  options.reconciler.waiting_requeue = std::chrono::seconds(1);
  options.reconciler.restart_backoff_base = std::chrono::seconds(1);
  options.reconciler.restart_backoff_max = std::chrono::seconds(2);
  options.log = [](std::string_view) {};
  return options;
}

}  // namespace wavepool::controller::fault
