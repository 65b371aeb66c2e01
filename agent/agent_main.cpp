// wavepool-agent: the node agent. Parses flags, opens the GPUs, runs the Agent and publishes the
// node's GPUNode until SIGTERM or SIGINT. See docs/agent.md.
#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/gpunode_publisher.h"
#include "wavepool/agent/peer_identity.h"
#include "wavepool/agent/placement_records.h"
#include "wavepool/agent/simulated_gpu.h"
#include "wavepool/base/clock.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/kubeconfig.h"

namespace {

using namespace wavepool::agent;
using ::wavepool::Clock;
using ::wavepool::ClockPtr;
using ::wavepool::MakeRealClock;

struct Flags {
  AgentOptions options;
  std::string devices = "auto";
  std::string mps = "auto";
  std::string socket_group;
  int sample_period_ms = 10;
  int telemetry_period_ms = 1000;
  int control_period_ms = 100;
  double cheat_quiet_period_s = 10;
  // GPUNode publishing.
  std::string kubeconfig;  // empty: the in-cluster configuration
  std::string node_name;
  double publish_interval_s = 10;
  bool no_publish = false;
  bool trust_register = false;
  std::string no_gpu_reason = kReasonNoGpus;  // filled in by OpenDevices
};

// --devices: auto (NVML, or no GPU with the reason), nvml, simulated:N.
// `no_gpu_reason`: for a node left without GPUs, why (NoGpuReasonFor).
// `node_name`: simulated devices derive their UUIDs from it (SimulatedGpuOptions::node_name).
absl::StatusOr<GpuDevicesPtr> OpenDevices(const std::string& spec, const std::string& node_name,
                                          Clock& clock, bool* nvml, std::string* no_gpu_reason) {
  *nvml = false;
  if (absl::StartsWith(spec, "simulated")) {
    SimulatedGpuOptions options;
    options.node_name = node_name;
    if (spec != "simulated") {
      std::uint32_t n = 0;
      if (!absl::StartsWith(spec, "simulated:") || !absl::SimpleAtoi(spec.substr(10), &n) ||
          n < 1) {
        return absl::InvalidArgumentError("--devices: simulated:N needs a GPU count >= 1, got " +
                                          spec);
      }
      options.gpus = n;
    }
    WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedGpus> gpus,
                              SimulatedGpus::Create(clock, options));
    return GpuDevicesPtr(std::move(gpus));
  }
  if (spec != "auto" && spec != "nvml") {
    return absl::InvalidArgumentError("--devices: must be auto, nvml or simulated:N, got " + spec);
  }
  NvmlOptions options;
  options.clock = &clock;
  absl::StatusOr<GpuDevicesPtr> devices = OpenNvmlDevices(options);
  if (devices.ok()) {
    *nvml = true;
    return devices;
  }
  if (spec == "nvml") return devices.status();
  *no_gpu_reason = NoGpuReasonFor(devices.status());
  return MakeNoGpuDevices("no GPUs: " + std::string(devices.status().message()));
}

absl::StatusOr<MpsMode> ParseMps(const std::string& mode) {
  if (mode == "auto") return MpsMode::kAuto;
  if (mode == "on") return MpsMode::kOn;
  if (mode == "off") return MpsMode::kOff;
  return absl::InvalidArgumentError("--mps: must be auto, on or off, got " + mode);
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "unknown";
}

// A duration flag in seconds: a number in [min, max]. CLI::Range lets NaN through (it fails both
// comparisons), and a value past max would overflow its conversion to nanoseconds.
CLI::Validator SecondsIn(double min, double max) {
  const std::string range = absl::StrCat("[", min, ", ", max, "]");
  return CLI::Validator(
      [min, max, range](std::string& input) {
        double seconds = 0;
        if (absl::SimpleAtod(input, &seconds) && seconds >= min && seconds <= max) {
          return std::string();
        }
        return absl::StrCat("must be a number of seconds in ", range, ", got ", input);
      },
      "SECONDS in " + range);
}

int Fail(const absl::Status& status) {
  std::cerr << "wavepool-agent: " << status.message() << "\n";
  return 1;
}

// The GPUNode publisher, or nullptr when publishing is off or cannot start (no node name, no
// Kubernetes configuration): the agent's work on the node goes on without it, and the reason is
// logged. Failures after the start are retried by the publisher itself.
// The Kubernetes API client (the GPUNode and the pods that workers belong to).
absl::StatusOr<std::unique_ptr<wavepool::kube::Client>> ConnectKubernetes(const Flags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(wavepool::kube::ClientConfig config,
                            flags.kubeconfig.empty()
                                ? wavepool::kube::InClusterConfig()
                                : wavepool::kube::LoadKubeconfig(flags.kubeconfig));
  return wavepool::kube::Client::Connect(config);
}

// Who workers are: their pods, as the API server lists them on this node (peer_identity.h),
// placed there by their TrainingJob (placement_records.h).
struct Identity {
  PodSourcePtr pods;
  PlacementRecordsPtr placements;
  PeerIdentityPtr peers;
};

absl::StatusOr<Identity> StartIdentity(const Flags& flags, wavepool::kube::Client* client,
                                       Clock* clock) {
  KubePodSourceOptions options;
  options.node_name = flags.node_name;
  WAVEPOOL_ASSIGN_OR_RETURN(PodSourcePtr pods, MakeKubePodSource(client, options, clock));
  WAVEPOOL_ASSIGN_OR_RETURN(PlacementRecordsPtr placements,
                            MakeKubePlacementRecords(client, flags.node_name));
  Identity identity;
  identity.pods = std::move(pods);
  identity.placements = std::move(placements);
  identity.peers =
      std::make_unique<KubernetesPeerIdentity>(identity.pods.get(), identity.placements.get());
  return identity;
}

struct Publishing {
  std::unique_ptr<GpuNodePublisher> publisher;
};

Publishing StartPublishing(const Flags& flags, Agent* agent, Clock* clock,
                           const absl::StatusOr<std::unique_ptr<wavepool::kube::Client>>& client) {
  Publishing out;
  if (flags.no_publish) return out;
  auto off = [](const std::string& why) {
    std::cerr << "wavepool-agent: GPUNode publishing off: " << why << std::endl;
  };
  if (!client.ok()) {
    off(std::string(client.status().message()) + " (--kubeconfig, or --no-publish)");
    return out;
  }
  GpuNodePublisherOptions options;
  options.node_name = flags.node_name;
  options.agent_version = flags.options.version;
  options.no_gpu_reason = flags.no_gpu_reason;
  options.interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(flags.publish_interval_s));
  absl::StatusOr<std::unique_ptr<GpuNodePublisher>> publisher = GpuNodePublisher::Create(
      options, client->get(), [agent] { return agent->Status(); }, clock);
  if (!publisher.ok()) {
    off(std::string(publisher.status().message()));
    return out;
  }
  out.publisher = *std::move(publisher);
  out.publisher->Start();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  AgentOptions& o = flags.options;
  o.directory = "/var/run/wavepool";
  o.hostname = HostName();
  o.version = WAVEPOOL_VERSION;
  o.metrics_address = "0.0.0.0";
  o.metrics_port = 9402;
  CLI::App app{"wavepool-agent: the wavepool node agent"};
  app.set_version_flag("--version", "wavepool-agent " WAVEPOOL_VERSION);
  app.add_option("--dir", o.directory, "Host directory for the socket, gates and MPS pipes")
      ->capture_default_str();
  app.add_option("--hostname", o.hostname,
                 "Node name for the metrics (default: --node-name when given, else the host's)")
      ->capture_default_str();
  app.add_option("--devices", flags.devices, "auto, nvml or simulated:N")->capture_default_str();
  app.add_option("--mps", flags.mps, "auto, on or off")->capture_default_str();
  app.add_option("--socket-group", flags.socket_group,
                 "Group allowed to use the socket: a name, or a numeric gid");
  app.add_option("--metrics-address", o.metrics_address, "Address of /metrics ('' to disable)")
      ->capture_default_str();
  app.add_option("--metrics-port", o.metrics_port, "Port of /metrics")->capture_default_str();
  app.add_option("--slots-per-gpu", o.slots_per_gpu, "Workers per GPU")->capture_default_str();
  app.add_option("--foreground-credits", o.pacing.foreground_credits)->capture_default_str();
  app.add_option("--background-credits", o.pacing.background_credits)->capture_default_str();
  app.add_option("--background-alone-credits", o.pacing.background_alone_credits)
      ->capture_default_str();
  app.add_option("--max-foreground-slowdown", o.feedback.default_max_slowdown,
                 "Slowdown limit of foreground jobs that set none")
      ->capture_default_str();
  app.add_option("--sample-period-ms", flags.sample_period_ms)->capture_default_str();
  app.add_option("--telemetry-period-ms", flags.telemetry_period_ms,
                 "Utilisation, per-process use and SM occupancy")
      ->capture_default_str();
  app.add_option("--control-period-ms", flags.control_period_ms)->capture_default_str();
  app.add_option("--cheat-sm-threshold", o.cheat.sm_threshold,
                 "SM share (0..1) of a background process that counts as GPU use when its gate "
                 "holds it")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  app.add_option("--cheat-flag-after", o.cheat.flag_after,
                 "Consecutive suspicious samples before a background process is flagged")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--cheat-quiet-period", flags.cheat_quiet_period_s,
                 "Seconds without a suspicious sample before a flag clears")
      ->check(SecondsIn(0.001, 86400))
      ->capture_default_str();
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr) flags.node_name = node;
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "Kubeconfig for the GPUNode (default: the in-cluster service account)");
  app.add_option("--node-name", flags.node_name, "Node whose GPUNode to publish ($NODE_NAME)")
      ->capture_default_str();
  app.add_option("--publish-interval", flags.publish_interval_s,
                 "Seconds between GPUNode status updates (the heartbeat)")
      ->check(SecondsIn(0.001, 86400))
      ->capture_default_str();
  app.add_flag("--no-publish", flags.no_publish, "Do not publish the GPUNode");
  app.add_flag("--trust-register", flags.trust_register,
               "Believe the role, job and pod workers send in Register instead of reading them "
               "from their pods (only where every process on the machine is trusted: "
               "single-machine benchmarks)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // The metrics' hostname label names the same node as the GPUNode unless told otherwise.
  if (app.count("--hostname") == 0 && !flags.node_name.empty()) o.hostname = flags.node_name;
  absl::StatusOr<MpsMode> mps = ParseMps(flags.mps);
  if (!mps.ok()) return Fail(mps.status());
  o.mps.mode = *mps;
  o.sample_period = std::chrono::milliseconds(flags.sample_period_ms);
  o.control_period = std::chrono::milliseconds(flags.control_period_ms);
  o.telemetry_period = std::chrono::milliseconds(flags.telemetry_period_ms);
  o.cheat.quiet_period = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(flags.cheat_quiet_period_s));
  // A numeric gid needs no entry in this image's /etc/group: the pods' gid is what counts.
  std::uint32_t gid = 0;
  if (absl::SimpleAtoi(flags.socket_group, &gid)) {
    o.group = gid;
  } else if (!flags.socket_group.empty()) {
    const group* g = getgrnam(flags.socket_group.c_str());
    if (g == nullptr)
      return Fail(absl::NotFoundError("--socket-group: no group " + flags.socket_group));
    o.group = g->gr_gid;
  }
  // Signals go to the thread that waits for them, not to the agent's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ClockPtr clock = MakeRealClock();
  absl::StatusOr<GpuDevicesPtr> devices =
      OpenDevices(flags.devices, flags.node_name.empty() ? HostName() : flags.node_name, *clock,
                  &o.nvml_devices, &flags.no_gpu_reason);
  if (!devices.ok()) return Fail(devices.status());
  CommandRunnerPtr runner = MakeSystemCommandRunner();
  absl::StatusOr<std::unique_ptr<wavepool::kube::Client>> kube =
      flags.no_publish && flags.trust_register
          ? absl::StatusOr<std::unique_ptr<wavepool::kube::Client>>(
                absl::FailedPreconditionError("not needed"))
          : ConnectKubernetes(flags);
  Identity identity;
  o.trust_register = flags.trust_register;
  if (!flags.trust_register) {
    if (!kube.ok()) {
      return Fail(absl::FailedPreconditionError(absl::StrCat(
          "worker identity needs the Kubernetes API (--kubeconfig, or the in-cluster service "
          "account): ",
          kube.status().message(),
          "; on a machine whose every process is trusted, --trust-register")));
    }
    absl::StatusOr<Identity> started = StartIdentity(flags, kube->get(), clock.get());
    if (!started.ok()) return Fail(started.status());
    identity = *std::move(started);
    o.identity = identity.peers.get();
  }
  absl::StatusOr<std::unique_ptr<Agent>> agent =
      Agent::Start(o, *std::move(devices), clock.get(), runner.get());
  if (!agent.ok()) return Fail(agent.status());
  const AgentStatus status = (*agent)->Status();
  std::cout << "wavepool-agent " << o.version << " on " << o.hostname << ": " << status.devices
            << "; " << status.mps << "; socket " << (*agent)->socket_path() << "; metrics "
            << (o.metrics_address.empty()
                    ? std::string("off")
                    : o.metrics_address + ":" + std::to_string((*agent)->metrics_port()))
            << std::endl;
  Publishing publishing = StartPublishing(flags, agent->get(), clock.get(), kube);
  int signal = 0;
  sigwait(&signals, &signal);
  std::cout << "wavepool-agent: stopping on signal " << signal << std::endl;
  if (publishing.publisher != nullptr) publishing.publisher->Stop();
  (*agent)->Stop();
  return 0;
}
