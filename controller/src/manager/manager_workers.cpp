// ControllerManager's moving parts: which job keys an informer event enqueues, the workers that
// reconcile them, the gauges refreshed in the background, and the HTTP endpoints' answers.
#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "manager/manager_events.h"
#include "manager/manager_impl.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/object_key.h"
#include "wavepool/base/seconds.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller {
namespace {

// How often queue depth and jobs-by-phase are refreshed without an event.
constexpr std::chrono::seconds kHousekeepingPeriod{10};

}  // namespace

void ControllerManager::Impl::AddHandlers() {
  KubeCluster::Informers informers = cluster->informers();
  kube::ResourceEventHandlers jobs;
  jobs.on_add = [this](const nlohmann::json& job) { Enqueue(kube::ObjectKey(job)); };
  jobs.on_update = [this](const nlohmann::json& old_job, const nlohmann::json& job) {
    const std::string key = kube::ObjectKey(job);
    if (internal::JobDeletionStarted(old_job, job)) {
      absl::MutexLock lock(&mu);
      deleted.insert(key);
    }
    Enqueue(key);
  };
  jobs.on_delete = [this](const nlohmann::json& job) {
    const std::string key = kube::ObjectKey(job);
    {
      absl::MutexLock lock(&mu);
      waiting.erase(key);
      deleted.insert(key);
    }
    Enqueue(key);
  };
  jobs.on_synced = [this] { OnInformerSynced(); };
  informers.jobs.AddEventHandler(jobs).IgnoreError();  // cannot fail before Run

  kube::ResourceEventHandlers pods;
  pods.on_add = [this](const nlohmann::json& pod) { EnqueueOwner(pod); };
  pods.on_update = [this](const nlohmann::json& old_pod, const nlohmann::json& pod) {
    EnqueueOwner(pod);
    if (internal::PodFreedGpus(old_pod, pod)) EnqueueWaiting();
  };
  pods.on_delete = [this](const nlohmann::json& pod) {
    EnqueueOwner(pod);
    EnqueueWaiting();
  };
  pods.on_synced = [this] { OnInformerSynced(); };
  informers.pods.AddEventHandler(pods).IgnoreError();

  kube::ResourceEventHandlers config_maps;
  config_maps.on_add = [this](const nlohmann::json& cm) { EnqueueOwner(cm); };
  config_maps.on_update = [this](const nlohmann::json&, const nlohmann::json& cm) {
    EnqueueOwner(cm);
  };
  config_maps.on_delete = config_maps.on_add;
  config_maps.on_synced = [this] { OnInformerSynced(); };
  informers.config_maps.AddEventHandler(config_maps).IgnoreError();

  // A gang's Service deleted by someone is created again by its job's reconcile.
  kube::ResourceEventHandlers services;
  services.on_add = [this](const nlohmann::json& service) { EnqueueOwner(service); };
  services.on_update = [this](const nlohmann::json&, const nlohmann::json& service) {
    EnqueueOwner(service);
  };
  services.on_delete = services.on_add;
  services.on_synced = [this] { OnInformerSynced(); };
  informers.services.AddEventHandler(services).IgnoreError();

  kube::ResourceEventHandlers gpu_nodes;
  gpu_nodes.on_add = [this](const nlohmann::json& node) {
    heartbeats.ObserveFresh(kube::ObjectKey(node), internal::HeartbeatOf(node), clock.WallNow(),
                            options.reconciler.heartbeat_timeout);
    EnqueueWaiting();
  };
  gpu_nodes.on_update = [this](const nlohmann::json& old_node, const nlohmann::json& node) {
    if (internal::GpuNodePlacementView(old_node) != internal::GpuNodePlacementView(node)) {
      EnqueueWaiting();
    } else {
      OnGpuNodeHeartbeat(old_node, node);
    }
    for (const std::string& job : internal::JobsWithChangedTasks(old_node, node)) Enqueue(job);
    for (const std::string& job : internal::JobsFlaggedCheating(node)) Enqueue(job);
  };
  gpu_nodes.on_delete = [this](const nlohmann::json& node) {
    for (const std::string& job : internal::JobsWithChangedTasks(node, nullptr)) Enqueue(job);
    EnqueueJobsOnNode(internal::NodeNameOf(node));
  };
  gpu_nodes.on_synced = [this] { OnInformerSynced(); };
  informers.gpu_nodes.AddEventHandler(gpu_nodes).IgnoreError();

  kube::ResourceEventHandlers nodes;
  nodes.on_add = [this](const nlohmann::json&) { EnqueueWaiting(); };
  nodes.on_update = [this](const nlohmann::json& old_node, const nlohmann::json& node) {
    const NodeState before = NodeStateFromNode(old_node);
    const NodeState after = NodeStateFromNode(node);
    if (before.ready == after.ready && before.managed == after.managed) return;
    // A node that went away ends the gangs on it; one that came back may take waiting jobs.
    EnqueueJobsOnNode(kube::ObjectKey(node));
    EnqueueWaiting();
  };
  nodes.on_delete = [this](const nlohmann::json& node) {
    EnqueueJobsOnNode(kube::ObjectKey(node));
  };
  nodes.on_synced = [this] { OnInformerSynced(); };
  informers.nodes.AddEventHandler(nodes).IgnoreError();
}

void ControllerManager::Impl::OnInformerSynced() {
  // Each informer is synced before its handlers hear of it, so whichever syncs last sees them all.
  const bool synced = cluster->HasSynced();
  absl::MutexLock lock(&mu);
  caches_synced = caches_synced || synced;
}

void ControllerManager::Impl::Enqueue(const std::string& key) {
  std::shared_ptr<kube::WorkQueue> q;
  {
    absl::MutexLock lock(&mu);
    q = queue;
  }
  // Not leading: the next term starts by enqueueing every job.
  if (q != nullptr) q->Add(key);
}

void ControllerManager::Impl::EnqueueOwner(const nlohmann::json& object) {
  if (std::optional<std::string> key = internal::OwningJobKey(object)) Enqueue(*key);
}

void ControllerManager::Impl::EnqueueWaiting() {
  gpus_freed.fetch_add(1);
  std::vector<std::string> keys;
  {
    absl::MutexLock lock(&mu);
    keys.assign(waiting.begin(), waiting.end());
  }
  for (const std::string& key : keys) Enqueue(key);
}

void ControllerManager::Impl::EnqueueJobsOnNode(const std::string& node) {
  if (node.empty()) return;
  absl::StatusOr<std::vector<nlohmann::json>> pods =
      cluster->informers().pods.store().ByIndex(internal::kNodePodIndex, node);
  if (!pods.ok()) return;
  for (const nlohmann::json& pod : *pods) EnqueueOwner(pod);
}

void ControllerManager::Impl::OnGpuNodeHeartbeat(const nlohmann::json& old_node,
                                                 const nlohmann::json& node) {
  const std::string name = kube::ObjectKey(node);
  const std::string before = internal::HeartbeatOf(old_node);
  const std::string after = internal::HeartbeatOf(node);
  if (before == after) return;
  const WallTime now = clock.WallNow();
  const std::chrono::nanoseconds timeout = options.reconciler.heartbeat_timeout;
  // Judged as the reconciler judges it: stale once the value stood still for the timeout.
  const bool was_fresh = heartbeats.ObserveFresh(name, before, now, timeout);
  const bool is_fresh = heartbeats.ObserveFresh(name, after, now, timeout);
  if (!was_fresh && is_fresh) EnqueueWaiting();
}

void ControllerManager::Impl::RunWorkers() {
  kube::WorkQueue::Options queue_options;
  queue_options.clock = options.clock;  // DefaultControllerRateLimiter on the same clock
  auto q = std::make_shared<kube::WorkQueue>(std::move(queue_options));
  absl::MutexLock lock(&mu);
  if (stopped || queue != nullptr) return;
  queue = q;
  // A new term looks at every job once: events seen while following were not queued.
  for (const std::string& key : cluster->informers().jobs.store().ListKeys()) q->Add(key);
  for (int i = 0; i < options.workers; ++i) {
    workers.emplace_back([this, q] { WorkerLoop(*q); });
  }
}

void ControllerManager::Impl::StopWorkers() {
  std::shared_ptr<kube::WorkQueue> q;
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu);
    q = std::move(queue);
    queue = nullptr;
    threads = std::move(workers);
    workers.clear();
  }
  if (q == nullptr) return;
  q->ShutDown();  // a reconcile in progress finishes; what is queued is left for the next term
  for (std::thread& thread : threads) thread.join();
  metrics.SetQueueDepth(0);
}

void ControllerManager::Impl::WorkerLoop(kube::WorkQueue& q) {
  // Reconciling from caches that have not listed everything yet would take the pods not seen yet
  // for lost ones and restart their gangs: wait for the informers' first lists
  // (OnInformerSynced), or for this term to end (StopWorkers drops the queue, then shuts it down).
  {
    absl::MutexLock lock(&mu);
    const auto synced_or_over = [this, &q]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return caches_synced || queue.get() != &q;
    };
    mu.Await(absl::Condition(&synced_or_over));
    if (queue.get() != &q) return;
  }
  while (true) {
    {
      absl::MutexLock lock(&mu);
      ++in_get;
    }
    std::optional<std::string> key = q.Get();
    {
      absl::MutexLock lock(&mu);
      --in_get;
      if (key) ++active;
    }
    if (!key) return;
    metrics.SetQueueDepth(q.Len());
    Process(q, *key);
    q.Done(*key);
    {
      absl::MutexLock lock(&mu);
      --active;
    }
  }
}

void ControllerManager::Impl::Process(kube::WorkQueue& q, const std::string& key) {
  // The queue keys jobs by text (kube::ObjectKey); every key it holds came from a job object, so
  // one that does not parse is dropped rather than retried.
  const absl::StatusOr<api::ObjectKey> job = api::ObjectKey::Parse(key);
  if (!job.ok()) {
    Log(absl::StrCat("reconcile: ", job.status().message()));
    q.Forget(key);
    return;
  }
  const std::uint64_t freed_before = gpus_freed.load();
  const MonotonicTime start = clock.Now();
  absl::StatusOr<ReconcileResult> result = reconciler->Reconcile(job->namespace_, job->name);
  const Seconds duration = clock.Now() - start;
  if (!result.ok()) {
    const ReconcileOutcome outcome =
        kube::IsConflict(result.status()) ? ReconcileOutcome::kConflict : ReconcileOutcome::kError;
    metrics.ObserveReconcile(outcome, duration, result.status());
    if (outcome == ReconcileOutcome::kError) {
      Log(absl::StrCat("reconcile ", key, ": ", result.status().ToString()));
    }
    q.AddRateLimited(key);
    return;
  }
  metrics.ObserveReconcile(
      result->requeue_after ? ReconcileOutcome::kRequeue : ReconcileOutcome::kSuccess, duration);
  q.Forget(key);
  bool freed = false;
  {
    absl::MutexLock lock(&mu);
    freed = deleted.erase(key) > 0;
    if (result->waiting_for_gpus) {
      waiting.insert(key);
    } else {
      waiting.erase(key);
    }
  }
  // A deleted job's reconcile dropped what it reserved or nominated: the GPUs are free to take.
  if (freed) EnqueueWaiting();
  if (result->waiting_for_gpus && gpus_freed.load() != freed_before) {
    q.Add(key);  // GPUs may have been freed while it was being placed
  } else if (result->requeue_after) {
    q.AddAfter(key, *result->requeue_after);
  }
}

void ControllerManager::Impl::RefreshGauges() {
  std::map<std::string, std::size_t> by_phase;
  // Visited, not listed: a list copies every job, every period.
  cluster->ForEachJob([&](const api::TrainingJob& job) {
    const api::JobPhase phase = job.status.phase.value_or(api::JobPhase::kPending);
    ++by_phase[std::string(api::ToString(phase))];
  });
  metrics.SetJobsByPhase(by_phase);
  std::shared_ptr<kube::WorkQueue> q;
  {
    absl::MutexLock lock(&mu);
    q = queue;
  }
  metrics.SetQueueDepth(q == nullptr ? 0 : q->Len());
}

std::string ControllerManager::Impl::LeaderElectionProblem() {
  if (elector == nullptr || elector->IsLeader() || !elector->GetLeader().empty()) {
    absl::MutexLock lock(&mu);
    lease_problem.clear();
    return "";
  }
  // No holder seen: the Lease cannot be read or created. A missing namespace is the usual cause
  // and the one an operator fixes; asking needs `get` on namespaces (any other answer leaves
  // the cause unnamed).
  const std::string lease = absl::StrCat(options.lease_namespace, "/", options.lease_name);
  std::string problem = absl::StrCat("leader election: no holder seen on Lease ", lease, " yet");
  const absl::Status ns = client.Get(kube::kNamespaces, "", options.lease_namespace).status();
  if (kube::IsNotFound(ns)) {
    problem = absl::StrCat("leader election: the Lease ", lease, " cannot be created: namespace ",
                           options.lease_namespace,
                           " does not exist (create it, or choose another with "
                           "--lease-namespace); not ready until it does");
  }
  bool news = false;
  {
    absl::MutexLock lock(&mu);
    news = problem != lease_problem;
    lease_problem = problem;
  }
  if (news && kube::IsNotFound(ns)) Log(problem);
  return problem;
}

void ControllerManager::Impl::HousekeepingLoop() {
  absl::MutexLock lock(&mu);
  while (!stopped) {
    mu.Unlock();
    RefreshGauges();
    LeaderElectionProblem();
    mu.Lock();
    const MonotonicTime next = clock.Now() + kHousekeepingPeriod;
    clock.WaitUntil(mu, next, absl::Condition(&stopped));
  }
}

internal::HttpAnswer ControllerManager::Impl::Answer(std::string_view path) {
  bool running = false;
  {
    absl::MutexLock lock(&mu);
    running = started && !stopped;
  }
  if (path == "/healthz") {
    if (!running) return {503, "text/plain; charset=utf-8", "stopped\n"};
    return {200, "text/plain; charset=utf-8", "ok"};
  }
  if (path == "/readyz") {
    if (!running) return {503, "text/plain; charset=utf-8", "stopped\n"};
    const std::vector<std::string> unsynced = cluster->UnsyncedInformers();
    if (!unsynced.empty()) {
      return {503, "text/plain; charset=utf-8",
              absl::StrCat("caches not synced: ", absl::StrJoin(unsynced, ", "), "\n")};
    }
    if (const std::string problem = LeaderElectionProblem(); !problem.empty()) {
      return {503, "text/plain; charset=utf-8", problem + "\n"};
    }
    return {200, "text/plain; charset=utf-8", "ok"};
  }
  if (path == "/metrics") {
    RefreshGauges();
    return {200, "text/plain; version=0.0.4; charset=utf-8",
            metrics.Serialize() + internal::ProcessMetricsText()};
  }
  return {404, "text/plain; charset=utf-8", "not found: /healthz, /readyz, /metrics\n"};
}

}  // namespace wavepool::controller
