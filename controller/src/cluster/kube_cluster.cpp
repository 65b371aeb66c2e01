#include "wavepool/controller/kube_cluster.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/kube_cluster_state.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/api/object_key.h"
#include "wavepool/base/status_macros.h"
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

// An object's metadata, less the field managers' bookkeeping.
nlohmann::json MetadataOnly(const nlohmann::json& object) {
  nlohmann::json kept = nlohmann::json::object();
  if (const nlohmann::json& meta = api::FieldOrNull(object, "metadata"); meta.is_object()) {
    kept["metadata"] = meta;
    kept["metadata"].erase("managedFields");
  }
  return kept;
}

// What the informers' stores keep of TrainingJobs, pods and Nodes: what is read from the stores,
// while the decoded caches and node states keep the rest; whole, they were most of the
// controller's memory (a real Node also lists every image it holds). Of a job: its metadata (the
// keys a new term queues, the deletion an update is compared on). Of a pod: its metadata (the job
// label it is indexed by, the owner its events go to, the uid and resourceVersion of a pod a
// re-list finds gone), spec.nodeName (indexed) and status.phase (an update is compared on it). Of
// a Node: its metadata and status.conditions (the state an update is compared on).
nlohmann::json PodStoreForm(const nlohmann::json& pod) {
  nlohmann::json kept = MetadataOnly(pod);
  const nlohmann::json& node = api::FieldOrNull(api::FieldOrNull(pod, "spec"), "nodeName");
  if (!node.is_null()) kept["spec"]["nodeName"] = node;
  const nlohmann::json& phase = api::FieldOrNull(api::FieldOrNull(pod, "status"), "phase");
  if (!phase.is_null()) kept["status"]["phase"] = phase;
  return kept;
}

nlohmann::json NodeStoreForm(const nlohmann::json& node) {
  nlohmann::json kept = MetadataOnly(node);
  const nlohmann::json& conditions =
      api::FieldOrNull(api::FieldOrNull(node, "status"), "conditions");
  if (!conditions.is_null()) kept["status"]["conditions"] = conditions;
  return kept;
}

kube::SharedInformer::Options NodeInformerOptions(const KubeClusterOptions& options) {
  kube::SharedInformer::Options out = InformerOptions(options, false);
  out.store_transform = NodeStoreForm;
  return out;
}

kube::SharedInformer::Options PodInformerOptions(const KubeClusterOptions& options) {
  kube::SharedInformer::Options out = ManagedInformerOptions(options);
  out.store_transform = PodStoreForm;
  return out;
}

kube::SharedInformer::Options JobInformerOptions(const KubeClusterOptions& options) {
  kube::SharedInformer::Options out = InformerOptions(options, true);
  out.resync_period = options.job_resync_period;
  out.store_transform = MetadataOnly;
  return out;
}

// "<namespace>/<wavepool.dev/job label>" for a pod or Service that has the label (the informer
// index, and the index keys of the pods' and Services' DecodedCache).
std::vector<std::string> JobIndex(const nlohmann::json& object) {
  const nlohmann::json& meta = api::FieldOrNull(object, "metadata");
  // The one label, not the whole map: the other labels may hold anything. An empty label or
  // namespace still makes a key.
  const std::optional<std::string> job =
      api::FieldAs<std::string>(api::FieldOrNull(meta, "labels"), kLabelJob);
  const std::optional<std::string> ns = api::FieldAs<std::string>(meta, "namespace");
  if (!job.has_value() || !ns.has_value()) return {};
  return {absl::StrCat(*ns, "/", *job)};
}

// Keeps a decoded cache in step with its informer: `upsert` decodes an added or updated object,
// and one that does not decode is logged (naming it and the field) and left out (cluster.h).
template <typename Upsert, typename Remove, typename Log>
kube::ResourceEventHandlers DecodingHandlers(Upsert upsert, Remove remove, std::string ignored_as,
                                             Log log) {
  kube::ResourceEventHandlers handlers;
  handlers.on_add = [upsert, ignored_as, log](const nlohmann::json& object) {
    if (absl::Status st = upsert(object); !st.ok()) {
      log(absl::StrCat(ignored_as, " ", kube::ObjectKey(object), " ignored: ", st.message()));
    }
  };
  // A resync (old and new at one version) hands over the stored form, which the cache has
  // decoded whole already.
  handlers.on_update = [add = handlers.on_add](const nlohmann::json& old_object,
                                               const nlohmann::json& object) {
    const std::string version = internal::ResourceVersionOf(object);
    if (version.empty() || version != internal::ResourceVersionOf(old_object)) add(object);
  };
  handlers.on_delete = [remove](const nlohmann::json& object) { remove(kube::ObjectKey(object)); };
  return handlers;
}

template <typename Cache, typename Log>
kube::ResourceEventHandlers DecodedCacheHandlers(Cache& cache, std::string_view kind, Log log) {
  return DecodingHandlers([&cache](const nlohmann::json& object) { return cache.Upsert(object); },
                          [&cache](const std::string& key) { cache.Remove(key); },
                          std::string(kind), log);
}

std::string Key(std::string_view ns, std::string_view name) {
  return api::ObjectKey{std::string(ns), std::string(name)}.ToString();
}

// The job cache's index of phases (ForEachJobInPhase).
std::string PhaseIndexKey(api::JobPhase phase) {
  return absl::StrCat("status.phase=", std::string(api::ToString(phase)));
}

std::vector<std::string> JobPhaseIndex(const api::TrainingJob& job) {
  if (!job.status.phase.has_value()) return {};
  return {PhaseIndexKey(*job.status.phase)};
}

// The decoded objects labelled as the job's, less those whose job-name annotation names another
// job: a shortened label value could in principle be shared.
template <typename T>
std::vector<T> ObjectsOfJob(const internal::DecodedCache<T>& objects, std::string_view ns,
                            std::string_view job) {
  std::vector<T> out = objects.Indexed(Key(ns, JobLabelValue(job)));
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const T& object) {
                             const auto& annotations = object.metadata.annotations;
                             const auto name = annotations.find(std::string(kAnnotationJobName));
                             return name != annotations.end() && name->second != job;
                           }),
            out.end());
  return out;
}

// The same for the Services of each job, indexed by JobIndex.
template <typename T, typename Log>
kube::ResourceEventHandlers JobServiceHandlers(internal::DecodedCache<T>& objects,
                                               std::string_view kind, Log log) {
  return DecodingHandlers(
      [&objects](const nlohmann::json& object) { return objects.Upsert(object, JobIndex(object)); },
      [&objects](const std::string& key) { objects.Remove(key); }, std::string(kind), log);
}

// Pod events, each pod decoded once for both the claims on GPUs and the jobs' pod cache. A pod
// whose GPUs cannot be read is reported on add only; one that does not decode is left out of
// the cache and reported on every event, as DecodingHandlers does.
template <typename Log>
kube::ResourceEventHandlers PodHandlers(GpuClaims& claims, internal::DecodedCache<kube::Pod>& pods,
                                        Log log) {
  const auto observe = [&claims, &pods, log](const nlohmann::json& pod, bool added) {
    const std::string key = kube::ObjectKey(pod);
    absl::StatusOr<kube::Pod> decoded = kube::Pod::FromJson(pod);
    const absl::Status claimed = claims.ObservePod(key, decoded);
    if (added && !claimed.ok()) {
      log(absl::StrCat("pod ", key, " holds no GPUs we can count: ", claimed.message()));
    }
    const absl::Status cached = pods.Upsert(pod, JobIndex(pod), std::move(decoded));
    if (!cached.ok()) log(absl::StrCat("Pod ", key, " ignored: ", cached.message()));
  };
  kube::ResourceEventHandlers handlers;
  handlers.on_add = [observe](const nlohmann::json& pod) { observe(pod, /*added=*/true); };
  handlers.on_update = [observe](const nlohmann::json&, const nlohmann::json& pod) {
    observe(pod, /*added=*/false);
  };
  handlers.on_delete = [&claims, &pods](const nlohmann::json& pod) {
    claims.ObservePodDeleted(pod);
    pods.Remove(kube::ObjectKey(pod));
  };
  return handlers;
}

}  // namespace

NodeState NodeStateFromNode(const kube::Node& node) {
  NodeState state;
  const auto managed = node.metadata.labels.find(std::string(kManagedNodeLabel));
  state.managed = managed != node.metadata.labels.end() && managed->second == "true";
  for (const kube::NodeCondition& condition : node.conditions) {
    if (condition.type == "Ready") state.ready = condition.status == "True";
  }
  return state;
}

NodeState NodeStateFromNode(const nlohmann::json& node) {
  absl::StatusOr<kube::Node> decoded = kube::Node::FromJson(node);
  return decoded.ok() ? NodeStateFromNode(*decoded) : NodeState();
}

KubeCluster::State::State(kube::Client& client_in, KubeClusterOptions options_in)
    : client(client_in),
      options(std::move(options_in)),
      clock(*options.clock),
      jobs(client, api::kTrainingJobs, JobInformerOptions(options)),
      pods(client, kube::kPods, PodInformerOptions(options)),
      config_maps(client, kube::kConfigMaps, InformerOptions(options, true)),
      services(client, internal::kServices, ManagedInformerOptions(options)),
      gpu_nodes(client, api::kGpuNodes, InformerOptions(options, false)),
      nodes(client, kube::kNodes, NodeInformerOptions(options)),
      job_cache(JobPhaseIndex),
      claims(clock, options.assume_timeout) {
  kube::EventRecorder::Options recorder_options;
  recorder_options.log = options.log;
  recorder_options.clock = &clock;
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
  const auto log = [s](std::string_view message) { s->Log(message); };
  if (status.ok()) status = s->pods.AddEventHandler(PodHandlers(s->claims, s->job_pods, log));
  if (status.ok()) {
    status = s->services.AddEventHandler(JobServiceHandlers(s->job_services, "Service", log));
  }
  if (status.ok()) {
    status = s->jobs.AddEventHandler(DecodedCacheHandlers(s->job_cache, "TrainingJob", log));
  }
  // NodeStates from the Node informer's events, in the store's order: a Node object is far
  // larger than its state, and every placement decision reads all of them.
  kube::ResourceEventHandlers node_handlers;
  node_handlers.on_add = [s](const nlohmann::json& node) {
    absl::StatusOr<kube::Node> decoded = kube::Node::FromJson(node);
    if (!decoded.ok()) {
      s->Log(absl::StrCat("Node ", kube::ObjectKey(node),
                          " counts as not ready: ", decoded.status().message()));
    }
    const NodeState node_state = decoded.ok() ? NodeStateFromNode(*decoded) : NodeState();
    absl::MutexLock lock(&s->mu);
    // Most Node updates (the kubelet's own heartbeats) change nothing placement reads.
    const auto [it, added] = s->node_states.try_emplace(kube::ObjectKey(node), node_state);
    if (!added && it->second == node_state) return;
    it->second = node_state;
    s->node_states_snapshot.reset();
  };
  node_handlers.on_update = [add = node_handlers.on_add](const nlohmann::json&,
                                                         const nlohmann::json& node) { add(node); };
  node_handlers.on_delete = [s](const nlohmann::json& node) {
    absl::MutexLock lock(&s->mu);
    s->node_states.erase(kube::ObjectKey(node));
    s->node_states_snapshot.reset();
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
  const MonotonicTime deadline = state_->clock.Now() + timeout;
  for (kube::SharedInformer* informer : {&state_->gpu_nodes, &state_->nodes, &state_->pods,
                                         &state_->config_maps, &state_->services, &state_->jobs}) {
    const std::chrono::nanoseconds left = std::max<std::chrono::nanoseconds>(
        std::chrono::nanoseconds(0), deadline - state_->clock.Now());
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

void KubeCluster::ForEachJobInPhase(
    api::JobPhase phase, const std::function<void(const api::TrainingJob&)>& visit) const {
  const std::string index_key = PhaseIndexKey(phase);
  state_->job_cache.ForEach(visit, &index_key);
}

std::vector<kube::Pod> KubeCluster::PodsOfJob(std::string_view ns, std::string_view job) const {
  return ObjectsOfJob(state_->job_pods, ns, job);
}

std::vector<kube::Service> KubeCluster::ServicesOfJob(std::string_view ns,
                                                      std::string_view job) const {
  return ObjectsOfJob(state_->job_services, ns, job);
}

absl::StatusOr<std::optional<kube::ConfigMap>> KubeCluster::GetConfigMap(
    std::string_view ns, std::string_view name) const {
  const std::optional<nlohmann::json> object = state_->config_maps.store().Get(Key(ns, name));
  if (!object.has_value()) return std::optional<kube::ConfigMap>();
  WAVEPOOL_ASSIGN_OR_RETURN(kube::ConfigMap decoded, kube::ConfigMap::FromJson(*object));
  return std::optional<kube::ConfigMap>(std::move(decoded));
}

std::vector<api::GpuNode> KubeCluster::ListGpuNodes() const {
  return state_->gpu_node_cache.List();
}

std::optional<api::GpuNode> KubeCluster::GetGpuNode(std::string_view name) const {
  return state_->gpu_node_cache.Get(name);
}

std::shared_ptr<const std::vector<api::GpuNode>> KubeCluster::GpuNodes() const {
  return state_->gpu_node_cache.PlacementParts();
}

HeartbeatChanges KubeCluster::GpuNodeHeartbeatsSince(std::uint64_t version) const {
  return state_->gpu_node_cache.HeartbeatsSince(version);
}

std::vector<api::GpuNode> KubeCluster::GpuNodesWithTasksOf(std::string_view ns,
                                                           std::string_view job) const {
  return state_->gpu_node_cache.WithTasksOf(ns, job);
}

std::map<std::string, NodeState> KubeCluster::NodeStates() const {
  absl::MutexLock lock(&state_->mu);
  return state_->node_states;
}

NodeStateMap KubeCluster::SharedNodeStates() const {
  absl::MutexLock lock(&state_->mu);
  if (state_->node_states_snapshot == nullptr) {
    state_->node_states_snapshot =
        std::make_shared<const std::map<std::string, NodeState>>(state_->node_states);
  }
  return state_->node_states_snapshot;
}

std::vector<GpuAssignment> KubeCluster::Assignments() const {
  return state_->claims.PodAssignments();
}

JobChanges KubeCluster::JobChangesSince(std::uint64_t version) const {
  return state_->job_cache.ChangesSince(version);
}

AssignmentChanges KubeCluster::AssignmentChangesSince(std::uint64_t version) const {
  return state_->claims.PodChangesSince(version);
}

}  // namespace wavepool::controller
