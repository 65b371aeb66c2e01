#include "wavepool/controller/kube_cluster.h"

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kube_cluster_state.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller {
namespace {

kube::SharedInformer::Options InformerOptions(const KubeClusterOptions& options, bool namespaced) {
  kube::SharedInformer::Options out;
  out.ns = namespaced ? options.watch_namespace : "";
  out.initial_backoff = options.informer_initial_backoff;
  out.max_backoff = options.informer_max_backoff;
  out.clock = options.clock;
  out.log = options.log;
  return out;
}

// Pods and Services: only what this controller created.
kube::SharedInformer::Options ManagedInformerOptions(const KubeClusterOptions& options) {
  kube::SharedInformer::Options out = InformerOptions(options, true);
  out.label_selector = std::string(kManagedPodSelector);
  return out;
}

kube::SharedInformer::Options JobInformerOptions(const KubeClusterOptions& options) {
  kube::SharedInformer::Options out = InformerOptions(options, true);
  out.resync_period = options.job_resync_period;
  return out;
}

// "<namespace>/<wavepool.dev/job label>" for a pod or Service that has the label.
std::vector<std::string> JobIndex(const nlohmann::json& object) {
  const nlohmann::json* labels = nullptr;
  if (const auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    if (const auto it = meta->find("labels"); it != meta->end() && it->is_object()) labels = &*it;
  }
  if (labels == nullptr) return {};
  const auto job = labels->find(std::string(kLabelJob));
  if (job == labels->end() || !job->is_string()) return {};
  return {absl::StrCat(object.value("/metadata/namespace"_json_pointer, ""), "/",
                       job->get<std::string>())};
}

// Keeps `cache` in step with its informer; an object that does not decode is logged and left out.
template <typename T, typename Log>
kube::ResourceEventHandlers DecodedCacheHandlers(internal::DecodedCache<T>& cache,
                                                 std::string_view kind, Log log) {
  kube::ResourceEventHandlers handlers;
  handlers.on_add = [&cache, kind = std::string(kind), log](const nlohmann::json& object) {
    if (absl::Status st = cache.Upsert(object); !st.ok()) {
      log(absl::StrCat(kind, " ", kube::ObjectKey(object), " ignored: ", st.message()));
    }
  };
  handlers.on_update = [add = handlers.on_add](const nlohmann::json&,
                                               const nlohmann::json& object) { add(object); };
  handlers.on_delete = [&cache](const nlohmann::json& object) {
    cache.Remove(kube::ObjectKey(object));
  };
  return handlers;
}

std::string Key(std::string_view ns, std::string_view name) {
  return absl::StrCat(std::string(ns), "/", std::string(name));
}

// The objects of `informer` labelled as the job's (JobIndex), less those whose job-name
// annotation names another job: a shortened label value could in principle be shared.
std::vector<nlohmann::json> ObjectsOfJob(const kube::SharedInformer& informer, std::string_view ns,
                                         std::string_view job) {
  absl::StatusOr<std::vector<nlohmann::json>> objects =
      informer.store().ByIndex(kJobPodIndex, Key(ns, JobLabelValue(job)));
  if (!objects.ok()) return {};
  std::vector<nlohmann::json> out;
  out.reserve(objects->size());
  for (nlohmann::json& object : *objects) {
    const nlohmann::json annotations =
        object.value("/metadata/annotations"_json_pointer, nlohmann::json::object());
    const auto name = annotations.is_object() ? annotations.find(std::string(kAnnotationJobName))
                                              : annotations.end();
    if (name != annotations.end() && name->is_string() && *name != std::string(job)) continue;
    out.push_back(std::move(object));
  }
  return out;
}

}  // namespace

NodeState NodeStateFromNode(const nlohmann::json& node) {
  NodeState state;
  const nlohmann::json labels = node.value("/metadata/labels"_json_pointer, nlohmann::json());
  if (labels.is_object()) {
    const auto managed = labels.find(std::string(kManagedNodeLabel));
    state.managed = managed != labels.end() && managed->is_string() && *managed == "true";
  }
  const nlohmann::json conditions =
      node.value("/status/conditions"_json_pointer, nlohmann::json::array());
  if (!conditions.is_array()) return state;
  for (const nlohmann::json& condition : conditions) {
    if (condition.is_object() && condition.value("type", "") == "Ready") {
      state.ready = condition.value("status", "") == "True";
    }
  }
  return state;
}

KubeCluster::State::State(kube::Client& client_in, KubeClusterOptions options_in)
    : client(client_in),
      options(std::move(options_in)),
      clock(*options.clock),
      jobs(client, kube::kTrainingJobs, JobInformerOptions(options)),
      pods(client, kube::kPods, ManagedInformerOptions(options)),
      config_maps(client, kube::kConfigMaps, InformerOptions(options, true)),
      services(client, internal::kServices, ManagedInformerOptions(options)),
      gpu_nodes(client, kube::kGpuNodes, InformerOptions(options, false)),
      nodes(client, kube::kNodes, InformerOptions(options, false)),
      claims(clock, options.assume_timeout) {
  kube::EventRecorder::Options recorder_options;
  recorder_options.log = options.log;
  recorder = std::make_unique<kube::EventRecorder>(client, options.event_component,
                                                   options.event_host, recorder_options);
}

void KubeCluster::State::Log(std::string_view message) const {
  if (options.log) {
    options.log(message);
  } else {
    std::cerr << "wavepool-controller: " << message << std::endl;
  }
}

absl::StatusOr<std::unique_ptr<KubeCluster>> KubeCluster::Create(kube::Client& client,
                                                                 KubeClusterOptions options) {
  if (options.assume_timeout.count() < 0) {
    return absl::InvalidArgumentError("assume_timeout: must be >= 0");
  }
  if (options.job_resync_period.count() < 0) {
    return absl::InvalidArgumentError("job_resync_period: must be >= 0");
  }
  if (options.informer_initial_backoff.count() <= 0 ||
      options.informer_max_backoff < options.informer_initial_backoff) {
    return absl::InvalidArgumentError(
        "informer_initial_backoff: must be > 0 and <= informer_max_backoff");
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("clock: must not be null");
  auto state = std::make_unique<State>(client, std::move(options));
  State* s = state.get();
  absl::Status status = s->pods.AddIndexer(kJobPodIndex, JobIndex);
  if (status.ok()) status = s->services.AddIndexer(kJobPodIndex, JobIndex);
  kube::ResourceEventHandlers pod_handlers;
  pod_handlers.on_add = [s](const nlohmann::json& pod) {
    if (absl::Status st = s->claims.ObservePod(pod); !st.ok()) {
      s->Log(absl::StrCat("pod ", kube::ObjectKey(pod),
                          " holds no GPUs we can count: ", st.message()));
    }
  };
  pod_handlers.on_update = [s](const nlohmann::json&, const nlohmann::json& pod) {
    s->claims.ObservePod(pod).IgnoreError();  // reported once, on add
  };
  pod_handlers.on_delete = [s](const nlohmann::json& pod) { s->claims.ObservePodDeleted(pod); };
  if (status.ok()) status = s->pods.AddEventHandler(pod_handlers);
  const auto log = [s](std::string_view message) { s->Log(message); };
  if (status.ok()) {
    status = s->jobs.AddEventHandler(DecodedCacheHandlers(s->job_cache, "TrainingJob", log));
  }
  // NodeStates from the Node informer's events, in the store's order: a Node object is far
  // larger than its state, and every placement decision reads all of them.
  kube::ResourceEventHandlers node_handlers;
  node_handlers.on_add = [s](const nlohmann::json& node) {
    const NodeState node_state = NodeStateFromNode(node);
    absl::MutexLock lock(&s->mu);
    s->node_states[node.value("/metadata/name"_json_pointer, "")] = node_state;
  };
  node_handlers.on_update = [add = node_handlers.on_add](const nlohmann::json&,
                                                         const nlohmann::json& node) { add(node); };
  node_handlers.on_delete = [s](const nlohmann::json& node) {
    absl::MutexLock lock(&s->mu);
    s->node_states.erase(node.value("/metadata/name"_json_pointer, ""));
  };
  if (status.ok()) status = s->nodes.AddEventHandler(node_handlers);
  if (status.ok()) {
    status = s->gpu_nodes.AddEventHandler(DecodedCacheHandlers(s->gpu_node_cache, "GPUNode", log));
  }
  if (!status.ok()) return status;
  return std::unique_ptr<KubeCluster>(new KubeCluster(std::move(state)));
}

KubeCluster::KubeCluster(std::unique_ptr<State> state) : state_(std::move(state)) {}

KubeCluster::~KubeCluster() { Stop(); }

KubeCluster::Informers KubeCluster::informers() {
  return Informers{state_->jobs,     state_->pods,      state_->config_maps,
                   state_->services, state_->gpu_nodes, state_->nodes};
}

void KubeCluster::Start() {
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->started) return;
    state_->started = true;
  }
  // GPUNodes and Nodes first: a job's first reconcile needs the inventory more than anything.
  state_->gpu_nodes.Run();
  state_->nodes.Run();
  state_->pods.Run();
  state_->config_maps.Run();
  state_->services.Run();
  state_->jobs.Run();
}

void KubeCluster::Stop() {
  {
    absl::MutexLock lock(&state_->mu);
    if (!state_->started || state_->stopped) return;
    state_->stopped = true;
  }
  state_->jobs.Stop();
  state_->services.Stop();
  state_->config_maps.Stop();
  state_->pods.Stop();
  state_->nodes.Stop();
  state_->gpu_nodes.Stop();
  state_->recorder->Flush();
}

bool KubeCluster::HasSynced() const { return UnsyncedInformers().empty(); }

bool KubeCluster::WaitForSync(std::chrono::nanoseconds timeout) {
  const MonotonicNanos deadline = state_->clock.Now() + timeout.count();
  for (kube::SharedInformer* informer : {&state_->gpu_nodes, &state_->nodes, &state_->pods,
                                         &state_->config_maps, &state_->services, &state_->jobs}) {
    const std::chrono::nanoseconds left(
        std::max<MonotonicNanos>(0, deadline - state_->clock.Now()));
    if (!informer->WaitForSync(left)) return false;
  }
  return true;
}

std::vector<std::string> KubeCluster::UnsyncedInformers() const {
  std::vector<std::string> out;
  for (const kube::SharedInformer* informer :
       {&state_->jobs, &state_->pods, &state_->config_maps, &state_->services, &state_->gpu_nodes,
        &state_->nodes}) {
    if (!informer->HasSynced()) out.push_back(informer->type().plural);
  }
  return out;
}

std::size_t KubeCluster::AssumedPods() const { return state_->claims.AssumedCount(); }

void KubeCluster::FlushEvents() { state_->recorder->Flush(); }

std::optional<api::TrainingJob> KubeCluster::GetJob(std::string_view ns,
                                                    std::string_view name) const {
  return state_->job_cache.Get(Key(ns, name));
}

std::vector<api::TrainingJob> KubeCluster::ListJobs() const { return state_->job_cache.List(); }

void KubeCluster::ForEachJob(const std::function<void(const api::TrainingJob&)>& visit) const {
  state_->job_cache.ForEach(visit);
}

std::vector<nlohmann::json> KubeCluster::PodsOfJob(std::string_view ns,
                                                   std::string_view job) const {
  return ObjectsOfJob(state_->pods, ns, job);
}

std::vector<nlohmann::json> KubeCluster::ServicesOfJob(std::string_view ns,
                                                       std::string_view job) const {
  return ObjectsOfJob(state_->services, ns, job);
}

std::optional<nlohmann::json> KubeCluster::GetConfigMap(std::string_view ns,
                                                        std::string_view name) const {
  return state_->config_maps.store().Get(Key(ns, name));
}

std::vector<api::GpuNode> KubeCluster::ListGpuNodes() const {
  return state_->gpu_node_cache.List();
}

std::map<std::string, NodeState> KubeCluster::NodeStates() const {
  absl::MutexLock lock(&state_->mu);
  return state_->node_states;
}

std::vector<GpuAssignment> KubeCluster::Assignments() const {
  return state_->claims.PodAssignments();
}

}  // namespace wavepool::controller
