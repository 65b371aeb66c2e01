// The node agent's CPU cost under load: a real wavepool-agent process on simulated GPUs, with
// workers (AgentClient, as the runtime uses it) registered on every GPU and each reporting op
// groups at a fixed rate. Prints the agent's CPU time over the measured window as a share of one
// core. Figures: docs/performance.md.
//
//   agent_load_bench AGENT_BINARY [--gpus 8] [--tasks-per-gpu 4] [--rate-hz 1000] [--seconds 10]
//                    [--nvml]   (the node's real GPUs through NVML instead of simulated ones)
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.h"
#include "wavepool/agent/client/agent_client.h"

extern char** environ;

namespace {

using namespace wavepool::agent;

// utime + stime of a process, in seconds (/proc/<pid>/stat fields 14 and 15).
double CpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stol(field);
  }
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s AGENT_BINARY [--gpus N] [--tasks-per-gpu N] [--rate-hz N] "
                 "[--seconds N]\n",
                 argv[0]);
    return 2;
  }
  int gpus = 8, tasks_per_gpu = 4, rate_hz = 1000, seconds = 10;
  bool nvml = false;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--nvml") {
      nvml = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) return std::fprintf(stderr, "%s needs a value\n", flag.c_str()), 2;
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--gpus")
      gpus = value;
    else if (flag == "--tasks-per-gpu")
      tasks_per_gpu = value;
    else if (flag == "--rate-hz")
      rate_hz = value;
    else if (flag == "--seconds")
      seconds = value;
    else
      return std::fprintf(stderr, "unknown flag %s\n", flag.c_str()), 2;
  }
  absl::StatusOr<wavepool::testing::TempDir> temp_dir =
      wavepool::testing::TempDir::Create("wavepool-load");
  if (!temp_dir.ok()) return std::fprintf(stderr, "%s\n", temp_dir.status().ToString().c_str()), 1;
  const std::string dir = temp_dir->path();
  const std::string devices = nvml ? "nvml" : "simulated:" + std::to_string(gpus);
  std::vector<std::string> args = {argv[1], "--dir",          dir, "--devices", devices, "--mps",
                                   "off",   "--metrics-port", "0"};
  // Every worker is a thread of this process, on one machine: trust what they send in Register.
  args.push_back("--trust-register");
  std::vector<char*> argp;
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  pid_t agent = 0;
  if (posix_spawn(&agent, argv[1], nullptr, nullptr, argp.data(), environ) != 0) {
    std::perror("spawn agent");
    return 1;
  }
  const std::string socket = dir + "/agent.sock";
  if (!WaitForFile(socket)) {
    std::fprintf(stderr, "the agent did not start\n");
    kill(agent, SIGTERM);
    return 1;
  }
  std::atomic<bool> stop{false};
  std::atomic<long> reports{0};
  std::vector<std::thread> workers;
  for (int g = 0; g < gpus; ++g) {
    for (int t = 0; t < tasks_per_gpu; ++t) {
      workers.emplace_back([&, g, t] {
        AgentClient::Options options;
        options.socket_path = socket;
        RegisterRequest& identity = options.registration;
        identity.namespace_name = "load";
        identity.job = t == 0 ? "fg" : "bg";
        identity.pod = "pod-" + std::to_string(g) + "-" + std::to_string(t);
        identity.role = t == 0 ? Role::kForeground : Role::kBackground;
        identity.gpu_index = static_cast<std::uint32_t>(g);
        identity.max_foreground_slowdown = 1.1;
        identity.batch_size = 32;
        options.log = [](std::string_view) {};
        auto client = AgentClient::Connect(options);
        if (!client.ok()) {
          std::fprintf(stderr, "connect: %s\n", std::string(client.status().message()).c_str());
          return;
        }
        const auto period = std::chrono::nanoseconds(1'000'000'000 / rate_hz);
        auto next = std::chrono::steady_clock::now();
        std::uint32_t op = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          (void)(*client)->ReportOp({op++ % 64, OpKind::kCompute, 100'000 + (op % 7) * 1000});
          reports.fetch_add(1, std::memory_order_relaxed);
          next += period;
          std::this_thread::sleep_until(next);
        }
        (*client)->Close();
      });
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // registered and warmed up
  const double cpu_before = CpuSeconds(agent);
  const long reports_before = reports.load();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds(agent) - cpu_before;
  const long sent = reports.load() - reports_before;
  stop = true;
  for (std::thread& w : workers) w.join();
  kill(agent, SIGTERM);
  waitpid(agent, nullptr, 0);
  std::printf(
      "%d %s GPUs x %d tasks at %d Hz: %.0f reports/s offered; agent CPU %.2f%% of one "
      "core (%.3f s over %.1f s)\n",
      gpus, nvml ? "NVML" : "simulated", tasks_per_gpu, rate_hz, static_cast<double>(sent) / wall,
      100 * cpu / wall, cpu, wall);
  return 0;
}
