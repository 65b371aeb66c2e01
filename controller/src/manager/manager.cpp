#include "wavepool/controller/manager.h"

#include <unistd.h>

#include <climits>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "http/http_endpoints.h"
#include "manager/manager_events.h"
#include "manager/manager_impl.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/kube_cluster.h"
#include "wavepool/kube/leader_election.h"
#include "wavepool/kube/work_queue.h"
#include "wavepool/planner/device.h"

namespace wavepool::controller {
namespace {

std::string DefaultIdentity() {
  char name[HOST_NAME_MAX + 1] = {};
  const std::string host = gethostname(name, sizeof(name)) == 0 ? name : "wavepool-controller";
  std::random_device random;
  return absl::StrFormat("%s_%08x", host, random());
}

// The names the controller puts in request paths and in the Lease it creates: the API server
// refuses (or misroutes) anything else, and leader election would retry it forever.
absl::Status ValidateObjectNames(const ManagerOptions& o) {
  if (!o.watch_namespace.empty() && !api::IsDns1123Label(o.watch_namespace)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "watch_namespace (--namespace): \"", o.watch_namespace,
        "\" must be a namespace name: a DNS-1123 label (at most 63 lowercase letters, digits "
        "and '-', starting and ending with a letter or digit), or empty for every namespace"));
  }
  if (o.leader_elect && !api::IsDns1123Label(o.lease_namespace)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease_namespace (--lease-namespace): \"", o.lease_namespace,
                     "\" must be a namespace name: a DNS-1123 label (at most 63 lowercase "
                     "letters, digits and '-', starting and ending with a letter or digit)"));
  }
  if (o.leader_elect && !api::IsDns1123Subdomain(o.lease_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease_name (--lease-name): \"", o.lease_name,
                     "\" must be a Lease name: a DNS-1123 subdomain (at most 253 lowercase "
                     "letters, digits, '-' and '.', starting and ending with a letter or digit)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateManagerOptions(const ManagerOptions& o) {
  if (o.workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("workers: must be >= 1, got ", o.workers));
  }
  if (o.http_port < -1 || o.http_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("http_port: must be in [-1, 65535], got ", o.http_port));
  }
  if (o.resync_period.count() < 0) {
    return absl::InvalidArgumentError("resync_period: must be >= 0");
  }
  if (o.clock == nullptr) return absl::InvalidArgumentError("clock: must not be null");
  if (o.reconciler.clock != nullptr && o.reconciler.clock != &RealClock() &&
      o.reconciler.clock != o.clock) {
    return absl::InvalidArgumentError(
        "reconciler.clock: must be left unset or be `clock` (the manager runs its reconciler on "
        "`clock`), got a different clock");
  }
  if (o.reconciler.start_timeout.count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("reconciler.start_timeout: must be >= 0 s (0: never), got ",
                     o.reconciler.start_timeout.count(), " s"));
  }
  if (o.reconciler.heartbeat_timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("reconciler.heartbeat_timeout: must be > 0 s, got ",
                     o.reconciler.heartbeat_timeout.count(), " s"));
  }
  if (o.leader_elect && o.lease_name.empty()) {
    return absl::InvalidArgumentError("lease_name: must not be empty with leader_elect");
  }
  if (o.leader_elect && o.lease_namespace.empty()) {
    return absl::InvalidArgumentError("lease_namespace: must not be empty with leader_elect");
  }
  WAVEPOOL_RETURN_IF_ERROR(ValidateObjectNames(o));
  // A device the planner does not know would leave every job on a cluster without a known GPU
  // model waiting in PlanningFailed.
  if (absl::Status device = planner::FindDevice(o.reconciler.default_device).status();
      !device.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("reconciler.default_device (--default-device): ", device.message()));
  }
  WAVEPOOL_RETURN_IF_ERROR(ValidateOwnedObjectOptions(o.reconciler.objects));
  return ValidateTemplatePolicyOptions(o.reconciler.template_policy);
}

namespace {

// The one place ManagerOptions get their defaults: a generated identity, and one clock for the
// cluster cache, the work queue, leader election and the reconciler.
ManagerOptions WithDefaults(ManagerOptions o) {
  if (o.identity.empty()) o.identity = DefaultIdentity();
  o.reconciler.clock = o.clock;
  return o;
}

}  // namespace

absl::Status ControllerManager::Impl::Init() {
  KubeClusterOptions cluster_options;
  cluster_options.watch_namespace = options.watch_namespace;
  cluster_options.job_resync_period = options.resync_period;
  cluster_options.informer_initial_backoff = options.informer_initial_backoff;
  cluster_options.informer_max_backoff = options.informer_max_backoff;
  cluster_options.event_host = options.identity;
  cluster_options.clock = options.clock;
  cluster_options.log = options.log;
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<KubeCluster> created,
                            KubeCluster::Create(client, std::move(cluster_options)));
  cluster = std::move(created);
  if (absl::Status s =
          cluster->informers().pods.AddIndexer(internal::kNodePodIndex, internal::NodePodIndex);
      !s.ok()) {
    return s;
  }
  AddHandlers();
  reconciler = std::make_unique<Reconciler>(*cluster, *cluster, options.reconciler, &metrics);
  if (!options.leader_elect) return absl::OkStatus();
  kube::LeaderElectionConfig config;
  config.lease_namespace = options.lease_namespace;
  config.lease_name = options.lease_name;
  config.identity = options.identity;
  config.lease_duration = options.lease_duration;
  config.renew_deadline = options.renew_deadline;
  config.retry_period = options.retry_period;
  config.release_on_cancel = true;
  config.clock = options.clock;
  config.log = options.log;
  config.callbacks.on_started_leading = [this](const kube::StopSignal& stop) {
    Log(absl::StrCat(options.identity, " leads: starting ", options.workers, " workers"));
    metrics.SetLeader(true);
    RunWorkers();
    stop.Wait();
    StopWorkers();
  };
  config.callbacks.on_stopped_leading = [this] {
    metrics.SetLeader(false);
    Log(absl::StrCat(options.identity, " stopped leading"));
  };
  config.callbacks.on_new_leader = [this](const std::string& identity) {
    if (identity != options.identity) Log(absl::StrCat("leader is ", identity));
  };
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<kube::LeaderElector> leader,
                            kube::LeaderElector::Create(client, std::move(config)));
  elector = std::move(leader);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ControllerManager>> ControllerManager::Create(
    kube::Client& client, ManagerOptions options) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateManagerOptions(options));
  auto impl = std::make_unique<Impl>(client, WithDefaults(std::move(options)));
  WAVEPOOL_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<ControllerManager>(new ControllerManager(std::move(impl)));
}

ControllerManager::ControllerManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ControllerManager::~ControllerManager() { Stop(); }

absl::Status ControllerManager::Start() {
  Impl& m = *impl_;
  {
    absl::MutexLock lock(&m.mu);
    if (m.started) return absl::FailedPreconditionError("ControllerManager: Start called twice");
  }
  if (m.options.http_port >= 0) {
    WAVEPOOL_ASSIGN_OR_RETURN(m.http, internal::StartHttpEndpoints(
                                          m.options.http_address, m.options.http_port,
                                          [&m](std::string_view path) { return m.Answer(path); }));
  }
  {
    absl::MutexLock lock(&m.mu);
    m.started = true;
  }
  m.cluster->Start();
  m.housekeeping = std::thread([&m] { m.HousekeepingLoop(); });
  if (m.elector != nullptr) {
    m.elector->Start();
  } else {
    m.metrics.SetLeader(true);
    m.RunWorkers();
  }
  return absl::OkStatus();
}

void ControllerManager::Stop() {
  Impl& m = *impl_;
  {
    absl::MutexLock lock(&m.mu);
    if (!m.started || m.stopped) return;
    m.stopped = true;
  }
  if (m.elector != nullptr) {
    m.elector->Stop();  // ends the term (its workers stop) and releases the Lease
  } else {
    m.StopWorkers();
    m.metrics.SetLeader(false);
  }
  if (m.housekeeping.joinable()) m.housekeeping.join();
  m.cluster->Stop();
  if (m.http != nullptr) m.http->Stop();
}

bool ControllerManager::WaitForSync(std::chrono::nanoseconds timeout) const {
  return impl_->cluster->WaitForSync(timeout);
}

bool ControllerManager::IsLeader() const {
  const Impl& m = *impl_;
  if (m.elector != nullptr) return m.elector->IsLeader();
  absl::MutexLock lock(&m.mu);
  return m.started && !m.stopped;
}

bool ControllerManager::WaitForIdle(std::chrono::nanoseconds timeout) const {
  const Impl& m = *impl_;
  // Real time: idleness is a property of threads, not of simulated time. Idle must last a settle
  // window, because the watch event of a reconcile's own write may still be on its way; when it
  // comes, a worker takes it from the queue under mu, which wakes this wait as busy.
  constexpr absl::Duration kSettle = absl::Milliseconds(10);
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  absl::MutexLock lock(&m.mu);
  while (m.mu.AwaitWithDeadline(absl::Condition(&m, &Impl::Idle), deadline)) {
    if (!m.mu.AwaitWithTimeout(absl::Condition(&m, &Impl::Busy), kSettle)) return true;
  }
  return false;
}

int ControllerManager::http_port() const {
  return impl_->http == nullptr ? -1 : impl_->http->port();
}

ControllerMetrics& ControllerManager::metrics() { return impl_->metrics; }

}  // namespace wavepool::controller
