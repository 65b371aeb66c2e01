// wavepool-controller: the TrainingJob controller. Parses flags, connects to the API server and
// runs a ControllerManager until SIGTERM or SIGINT, then stops gracefully (a running reconcile
// finishes, the Lease is released so a standby takes over at once) and exits 0. Bad flags exit
// 2 naming the flag; an API server that cannot be reached exits 1. See docs/controller.md.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/controller/manager.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/kubeconfig.h"
#include "wavepool/kube/resource.h"

namespace {

using wavepool::controller::ManagerOptions;

struct Flags {
  ManagerOptions options;
  std::string kubeconfig;
  std::int64_t heartbeat_timeout_s = 60;
  std::int64_t pod_start_timeout_s = 600;
  std::int64_t cheating_quarantine_s = 600;
};

std::string DefaultIdentity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "";
}

// controller-runtime's order: --kubeconfig, $KUBECONFIG, the in-cluster service account,
// ~/.kube/config.
absl::StatusOr<wavepool::kube::ClientConfig> LoadConfig(const std::string& kubeconfig) {
  namespace kube = wavepool::kube;
  kube::DefaultConfigOptions options;
  options.explicit_path = kubeconfig;
  const char* env = std::getenv("KUBECONFIG");
  if (kubeconfig.empty() && (env == nullptr || *env == '\0')) {
    absl::StatusOr<kube::ClientConfig> in_cluster = kube::InClusterConfig();
    if (in_cluster.ok()) return in_cluster;
  }
  return kube::LoadDefaultConfig(options);
}

// One cheap request that needs the server, the TrainingJob CRD and the right to list jobs.
absl::Status CheckApiServer(wavepool::kube::Client& client, const std::string& ns) {
  namespace kube = wavepool::kube;
  kube::ListOptions options;
  options.limit = 1;
  absl::Status status = client.List(wavepool::api::kTrainingJobs, ns, options).status();
  const std::string where = client.config().server + " (" + client.config().source + ")";
  if (status.ok()) return status;
  if (kube::IsNotFound(status)) {
    return absl::FailedPreconditionError("the API server at " + where +
                                         " does not serve trainingjobs.wavepool.dev: install "
                                         "the CRDs first (kubectl apply -f crds/)");
  }
  if (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) {
    return absl::UnavailableError("cannot reach the API server at " + where + ": " +
                                  std::string(status.message()));
  }
  return absl::Status(status.code(),
                      "API server at " + where + ": " + std::string(status.message()));
}

int Fail(const absl::Status& status, int code) {
  std::cerr << "wavepool-controller: " << status.message() << std::endl;
  return code;
}

void AddFlags(CLI::App& app, Flags& flags) {
  ManagerOptions& o = flags.options;
  auto& objects = o.reconciler.objects;
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "Kubeconfig file (default: $KUBECONFIG, the in-cluster service account, "
                 "~/.kube/config)");
  app.add_option("--namespace", o.watch_namespace, "Only jobs in this namespace (default: all)");
  app.add_option("--workers", o.workers, "Concurrent reconciles")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--leader-elect", o.leader_elect,
                 "Elect a leader on a Lease (false for a single replica)")
      ->capture_default_str();
  app.add_option("--lease-namespace", o.lease_namespace)->capture_default_str();
  app.add_option("--lease-name", o.lease_name)->capture_default_str();
  app.add_option("--identity", o.identity, "Holder identity on the Lease ($POD_NAME or hostname)")
      ->capture_default_str();
  app.add_option("--http-address", o.http_address, "Address of /healthz, /readyz, /metrics")
      ->capture_default_str();
  app.add_option("--http-port", o.http_port, "Port of /healthz, /readyz, /metrics (-1: none)")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  app.add_option("--heartbeat-timeout", flags.heartbeat_timeout_s,
                 "Seconds after which a GPUNode heartbeat is stale")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--pod-start-timeout", flags.pod_start_timeout_s,
                 "Seconds a pod may stay bound but not Running before its gang is restarted "
                 "elsewhere (0: never)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{7 * 24 * 3600}))
      ->capture_default_str();
  app.add_option("--cheating-quarantine", flags.cheating_quarantine_s,
                 "Seconds a background job is kept off a node whose agent caught it using the "
                 "GPU outside its launch gate (it is restarted elsewhere)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{30 * 24 * 3600}))
      ->capture_default_str();
  app.add_option("--default-device", o.reconciler.default_device,
                 "Planner device when no GPUNode names a known GPU model")
      ->capture_default_str();
  app.add_option("--agent-socket-gid", objects.agent_socket_gid,
                 "Group id of the agent's --socket-group: added to worker pods' "
                 "supplementalGroups (-1: none)")
      ->check(CLI::Range(std::int64_t{-1}, wavepool::controller::kMaxPodGroupId))
      ->capture_default_str();
  app.add_option("--agent-dir", objects.agent_directory, "The node agent's --dir on the hosts")
      ->capture_default_str();
  app.add_option("--mps-dir", objects.mps_directory,
                 "MPS pipe directory (default: <agent-dir>/mps)");
  app.add_option("--background-priority-class", objects.background_priority_class,
                 "PriorityClass of background pods");
  app.add_option("--background-grace-seconds", objects.background_termination_grace_seconds,
                 "Termination grace period of background pods (time to checkpoint)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--default-image", objects.default_image,
                 "Worker image for templates that name none");
  // What a job's pod template may contain beyond the built-in list (template_policy.h).
  auto& policy = o.reconciler.template_policy;
  app.add_option("--allow-template-field", policy.allowed_fields,
                 "Also allow this pod template field and all under it, e.g. "
                 "spec.template.spec.hostIPC ([*]: any index or key); repeatable")
      ->allow_extra_args(false);
  app.add_option("--allow-service-account", policy.allowed_service_accounts,
                 "Also allow serviceAccountName NAME (any namespace) or NAMESPACE/NAME; "
                 "repeatable")
      ->allow_extra_args(false);
  app.add_option("--allow-host-path", policy.allowed_host_path_prefixes,
                 "Also allow hostPath volumes under this absolute directory; repeatable")
      ->allow_extra_args(false);
  app.add_option("--checkpoint-host-root", objects.checkpoint_host_root,
                 "Host directory for checkpoints when a template mounts none")
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  flags.options.identity = DefaultIdentity();
  CLI::App app{"wavepool-controller: the wavepool TrainingJob controller"};
  app.set_version_flag("--version", "wavepool-controller " WAVEPOOL_VERSION);
  AddFlags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  ManagerOptions& options = flags.options;
  options.reconciler.heartbeat_timeout = std::chrono::seconds(flags.heartbeat_timeout_s);
  options.reconciler.start_timeout = std::chrono::seconds(flags.pod_start_timeout_s);
  options.reconciler.cheating_quarantine = std::chrono::seconds(flags.cheating_quarantine_s);
  // Every option that ends up in a job's pods or the Lease, checked before the first request:
  // one the API server refuses would fail every job with PodRejected, and fixing the flag would
  // not bring those jobs back without a spec edit.
  if (absl::Status status = wavepool::controller::ValidateManagerOptions(options); !status.ok()) {
    return Fail(status, 2);
  }

  absl::StatusOr<wavepool::kube::ClientConfig> config = LoadConfig(flags.kubeconfig);
  if (!config.ok()) return Fail(config.status(), 1);
  // Leader election is only safe if no request outlives the renew deadline (leader_election.h).
  config->timeout =
      std::min(config->timeout,
               std::chrono::duration_cast<std::chrono::milliseconds>(options.renew_deadline / 2));
  config->user_agent = "wavepool-controller";
  absl::StatusOr<std::unique_ptr<wavepool::kube::Client>> client =
      wavepool::kube::Client::Connect(*config);
  if (!client.ok()) return Fail(client.status(), 1);
  if (absl::Status status = CheckApiServer(**client, options.watch_namespace); !status.ok()) {
    return Fail(status, 1);
  }

  // Signals go to the thread that waits for them, not to the manager's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<wavepool::controller::ControllerManager>> manager =
      wavepool::controller::ControllerManager::Create(**client, options);
  if (!manager.ok()) return Fail(manager.status(), 2);
  if (absl::Status status = (*manager)->Start(); !status.ok()) return Fail(status, 1);
  std::cout << "wavepool-controller " << options.identity << ": API server "
            << (*client)->config().server << ", namespace "
            << (options.watch_namespace.empty() ? "(all)" : options.watch_namespace) << ", "
            << options.workers << " workers, leader election "
            << (options.leader_elect ? options.lease_namespace + "/" + options.lease_name : "off")
            << ", http "
            << ((*manager)->http_port() < 0
                    ? std::string("off")
                    : options.http_address + ":" + std::to_string((*manager)->http_port()))
            << std::endl;
  int signal = 0;
  sigwait(&signals, &signal);
  std::cout << "wavepool-controller: stopping on signal " << signal << std::endl;
  (*manager)->Stop();
  return 0;
}
