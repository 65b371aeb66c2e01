// wavepool-agent: the node agent. Parses flags, opens the GPUs, runs the Agent until SIGTERM or
// SIGINT. See docs/agent.md.
#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/simulated_gpu.h"

namespace {

using namespace wavepool::agent;

struct Flags {
  AgentOptions options;
  std::string devices = "auto";
  std::string mps = "auto";
  std::string socket_group;
  int sample_period_ms = 10;
  int telemetry_period_ms = 1000;
  int control_period_ms = 100;
};

// --devices: auto (NVML, or no GPU with the reason), nvml, simulated:N.
absl::StatusOr<GpuDevicesPtr> OpenDevices(const std::string& spec, Clock& clock, bool* nvml) {
  *nvml = false;
  if (absl::StartsWith(spec, "simulated")) {
    SimulatedGpuOptions options;
    if (spec != "simulated") {
      std::uint32_t n = 0;
      if (!absl::StartsWith(spec, "simulated:") ||
          !absl::SimpleAtoi(spec.substr(10), &n) || n < 1) {
        return absl::InvalidArgumentError("--devices: simulated:N needs a GPU count >= 1, got " + spec);
      }
      options.gpus = n;
    }
    absl::StatusOr<std::unique_ptr<SimulatedGpus>> gpus = SimulatedGpus::Create(clock, options);
    if (!gpus.ok()) return gpus.status();
    return GpuDevicesPtr(std::move(*gpus));
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

int Fail(const absl::Status& status) {
  std::cerr << "wavepool-agent: " << status.message() << "\n";
  return 1;
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
  app.add_option("--dir", o.directory, "Host directory for the socket, gates and MPS pipes")
      ->capture_default_str();
  app.add_option("--hostname", o.hostname, "Node name for the metrics")->capture_default_str();
  app.add_option("--devices", flags.devices, "auto, nvml or simulated:N")->capture_default_str();
  app.add_option("--mps", flags.mps, "auto, on or off")->capture_default_str();
  app.add_option("--socket-group", flags.socket_group, "Group allowed to use the socket and gates");
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  absl::StatusOr<MpsMode> mps = ParseMps(flags.mps);
  if (!mps.ok()) return Fail(mps.status());
  o.mps.mode = *mps;
  o.sample_period = std::chrono::milliseconds(flags.sample_period_ms);
  o.control_period = std::chrono::milliseconds(flags.control_period_ms);
  o.telemetry_period = std::chrono::milliseconds(flags.telemetry_period_ms);
  if (!flags.socket_group.empty()) {
    const group* g = getgrnam(flags.socket_group.c_str());
    if (g == nullptr) return Fail(absl::NotFoundError("--socket-group: no group " + flags.socket_group));
    o.group = g->gr_gid;
  }
  // Signals go to the thread that waits for them, not to the agent's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ClockPtr clock = MakeRealClock();
  absl::StatusOr<GpuDevicesPtr> devices = OpenDevices(flags.devices, *clock, &o.nvml_devices);
  if (!devices.ok()) return Fail(devices.status());
  CommandRunnerPtr runner = MakeSystemCommandRunner();
  absl::StatusOr<std::unique_ptr<Agent>> agent =
      Agent::Start(o, *std::move(devices), clock.get(), runner.get());
  if (!agent.ok()) return Fail(agent.status());
  const AgentStatus status = (*agent)->Status();
  std::cout << "wavepool-agent " << o.version << " on " << o.hostname << ": " << status.devices
            << "; " << status.mps << "; socket " << (*agent)->socket_path() << "; metrics "
            << (o.metrics_address.empty() ? std::string("off")
                                          : o.metrics_address + ":" +
                                                std::to_string((*agent)->metrics_port()))
            << std::endl;
  int signal = 0;
  sigwait(&signals, &signal);
  std::cout << "wavepool-agent: stopping on signal " << signal << std::endl;
  (*agent)->Stop();
  return 0;
}
