// The controller at cluster scale: N TrainingJobs (foreground gangs of 1, 2, 4 or 8 GPUs and
// one-GPU background jobs, mixed) placed over M simulated nodes of G GPUs by the real
// `wavepool-controller` binary, run as a child process so that its memory and CPU are its own.
// The test API server, the simulated kubelet and the node agents run in this process; the
// controller reaches the server over loopback HTTP through a kubeconfig.
//
// Measured:
//  - time from the first job's creation until every job is placed (status.placement set) and
//    until every job is Running (its pods Running), as this process's informer sees the jobs;
//  - creation -> placed latency per job, as seen here (includes the watch to this process);
//  - the controller's own histograms from /metrics: one placement decision
//    (wavepool_controller_placement_duration_seconds) and creation -> placed
//    (wavepool_controller_placement_latency_seconds), median and p99 interpolated within buckets
//    as Prometheus's histogram_quantile does;
//  - the controller's peak resident memory (VmHWM) and CPU time (utime + stime).
// Figures: docs/performance.md.
//
//   controller_bench [--jobs 1000] [--nodes 100] [--gpus-per-node 8] [--foreground-share 0.25]
//                    [--workers 4] [--timeout 900] [--controller PATH]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/cluster/crds.h"
#include "tests/support/cluster/simulated_kubelet.h"
#include "tests/support/cluster/simulated_node_agent.h"
#include "tests/support/free_port.h"
#include "tests/support/http_get.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/informer.h"
#include "wavepool/kube/resource.h"

namespace {

namespace kube = wavepool::kube;
using wavepool::testing::apiserver::TestApiServer;
using SteadyClock = std::chrono::steady_clock;

constexpr char kNamespace[] = "bench";

struct Flags {
  int jobs = 1000;
  int nodes = 100;
  std::int64_t gpus_per_node = 8;
  double foreground_share = 0.25;
  int workers = 4;
  int timeout_s = 900;
  std::string controller;
  bool dump_metrics = false;
};

// Foreground gangs: mostly small, as on a shared cluster (1 GPU 40 %, 2: 30 %, 4: 20 %, 8: 10 %).
std::int64_t DrawGang(std::mt19937& rng) {
  std::discrete_distribution<int> pick({40, 30, 20, 10});
  return std::int64_t{1} << pick(rng);
}

nlohmann::json Job(const std::string& name, bool foreground, std::int64_t gpus) {
  nlohmann::json spec = {
      {"role", foreground ? "Foreground" : "Background"},
      {"model", {{"name", foreground ? "cnn_tiny" : "mlp_tiny"}}},
      {"globalBatchSize", 64},
      {"gpus", gpus},
      {"steps", 1'000'000},
      {"template",
       {{"spec",
         {{"containers",
           {{{"name", "worker"}, {"image", "registry.example.com/wavepool/worker:bench"}}}}}}}}};
  if (foreground) {
    spec["parallelism"] = {{"strategy", "DataParallel"}};  // all the gang's GPUs
  } else {
    spec["checkpoint"] = {{"path", "/checkpoints/" + name}, {"intervalSteps", 100}};
  }
  return {{"apiVersion", "wavepool.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", kNamespace}}},
          {"spec", spec}};
}

// The job mix: foreground gangs within 90 % of the GPUs, background jobs at most one per GPU,
// shuffled so that both kinds arrive throughout.
std::vector<nlohmann::json> MakeJobs(const Flags& flags, int* foreground_gpus) {
  std::mt19937 rng(1);
  const std::int64_t gpus = flags.nodes * flags.gpus_per_node;
  std::int64_t budget = gpus * 9 / 10;
  const int foreground = static_cast<int>(flags.jobs * flags.foreground_share + 0.5);
  std::vector<nlohmann::json> jobs;
  *foreground_gpus = 0;
  for (int i = 0; i < flags.jobs; ++i) {
    if (i < foreground && budget > 0) {
      std::int64_t gang = DrawGang(rng);
      while (gang > budget) gang /= 2;
      budget -= gang;
      *foreground_gpus += static_cast<int>(gang);
      jobs.push_back(Job("fg-" + std::to_string(i), true, gang));
    } else {
      jobs.push_back(Job("bg-" + std::to_string(i), false, 1));
    }
  }
  std::shuffle(jobs.begin(), jobs.end(), rng);
  return jobs;
}

// GET http://127.0.0.1:<port><path>; the body of a 200 answer, "" otherwise.
std::string OkBody(int port, const std::string& path) {
  absl::StatusOr<wavepool::testing::HttpResponse> answer = wavepool::testing::HttpGet(port, path);
  if (!answer.ok() || answer->status != 200) return "";
  return std::move(answer->body);
}

// One histogram summed over its labels: cumulative counts by upper bound.
struct Histogram {
  std::map<double, double> buckets;  // le -> cumulative count
  double sum = 0;
  double count = 0;
};

// `name`'s buckets from the Prometheus text format, every label set added together.
Histogram ParseHistogram(const std::string& text, const std::string& name) {
  Histogram histogram;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    const double value = std::strtod(line.c_str() + space + 1, nullptr);
    if (line.compare(0, name.size() + 8, name + "_bucket{") == 0) {
      // The label `le` itself, not the end of another label's name ("role=").
      std::size_t le = line.find(",le=\"");
      if (le == std::string::npos) le = line.find("{le=\"");
      if (le == std::string::npos) continue;
      le += 1;
      const std::string bound = line.substr(le + 4, line.find('"', le + 4) - le - 4);
      const double upper = bound == "+Inf" ? HUGE_VAL : std::strtod(bound.c_str(), nullptr);
      histogram.buckets[upper] += value;
    } else if (line.compare(0, name.size() + 4, name + "_sum") == 0) {
      histogram.sum += value;
    } else if (line.compare(0, name.size() + 6, name + "_count") == 0) {
      histogram.count += value;
    }
  }
  return histogram;
}

// histogram_quantile: linear interpolation inside the bucket that holds the rank.
double Quantile(const Histogram& histogram, double q) {
  if (histogram.count <= 0) return NAN;
  const double rank = q * histogram.count;
  double lower = 0, below = 0;
  for (const auto& [upper, cumulative] : histogram.buckets) {
    if (cumulative >= rank) {
      if (std::isinf(upper)) return lower;  // past the last finite bound
      const double in_bucket = cumulative - below;
      return in_bucket <= 0 ? upper : lower + (upper - lower) * (rank - below) / in_bucket;
    }
    lower = upper;
    below = cumulative;
  }
  return lower;
}

double ExactQuantile(std::vector<double> values, double q) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const std::size_t index =
      std::min(values.size() - 1, static_cast<std::size_t>(q * static_cast<double>(values.size())));
  return values[index];
}

std::int64_t ProcStatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      return std::strtoll(line.c_str() + field.size() + 1, nullptr, 10);
    }
  }
  return -1;
}

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

// What this process sees of each job: when it was created, placed and Running.
class JobTracker {
 public:
  void Created(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    created_[name] = SteadyClock::now();
  }
  void Observe(const nlohmann::json& job) {
    const std::string name = job["metadata"].value("name", "");
    const nlohmann::json status = job.value("status", nlohmann::json::object());
    const auto now = SteadyClock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (status.contains("placement") && !status["placement"].empty()) placed_.emplace(name, now);
    if (status.value("phase", "") == "Running") running_.emplace(name, now);
  }
  std::size_t placed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return placed_.size();
  }
  std::size_t running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return running_.size();
  }
  // Seconds from `start` to the last placement / Running; creation -> placed of each job.
  double LastPlaced(SteadyClock::time_point start) const { return Last(placed_, start); }
  double LastRunning(SteadyClock::time_point start) const { return Last(running_, start); }
  std::vector<double> PlacementLatencies() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> out;
    for (const auto& [name, at] : placed_) {
      auto created = created_.find(name);
      if (created != created_.end()) {
        out.push_back(std::chrono::duration<double>(at - created->second).count());
      }
    }
    return out;
  }

 private:
  double Last(const std::map<std::string, SteadyClock::time_point>& times,
              SteadyClock::time_point start) const {
    std::lock_guard<std::mutex> lock(mu_);
    SteadyClock::time_point last = start;
    for (const auto& [name, at] : times) last = std::max(last, at);
    return std::chrono::duration<double>(last - start).count();
  }

  mutable std::mutex mu_;
  std::map<std::string, SteadyClock::time_point> created_, placed_, running_;
};

pid_t StartController(const Flags& flags, const std::string& kubeconfig, int port,
                      const std::string& log_path) {
  std::vector<std::string> args = {flags.controller,
                                   "--kubeconfig=" + kubeconfig,
                                   "--leader-elect=false",
                                   "--http-address=127.0.0.1",
                                   "--http-port=" + std::to_string(port),
                                   "--workers=" + std::to_string(flags.workers),
                                   "--heartbeat-timeout=600"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  return pid;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "controller_bench: %s\n", message.c_str());
  return 1;
}

int Run(const Flags& flags) {
  TestApiServer::Options server_options;
  server_options.store.finish_pod_deletion_after_grace = false;
  server_options.store.history_size = 100'000;
  auto server = TestApiServer::Start(server_options);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  kube::ClientConfig config;
  config.server = (*server)->url();
  auto client = kube::Client::Connect(config);
  if (!client.ok()) return Fail(std::string(client.status().message()));
  kube::Client& api = **client;
  if (auto s = wavepool::testing::RegisterWavepoolCrds(api); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  auto ns = api.Create(
      kube::kNamespaces,
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}});
  if (!ns.ok()) return Fail(std::string(ns.status().message()));

  std::vector<std::string> nodes;
  for (int i = 0; i < flags.nodes; ++i) nodes.push_back("node-" + std::to_string(i));
  wavepool::testing::SimulatedKubelet::Options kubelet_options;
  kubelet_options.gpus_per_node = flags.gpus_per_node;
  auto kubelet = wavepool::testing::SimulatedKubelet::Start(api, nodes, kubelet_options);
  if (!kubelet.ok()) return Fail(std::string(kubelet.status().message()));
  wavepool::testing::SimulatedNodeAgents::Options agent_options;
  agent_options.heartbeat_period = std::chrono::seconds(30);
  auto agents = wavepool::testing::SimulatedNodeAgents::Start(
      api, wavepool::testing::SimulatedNodeAgents::Uniform(nodes, flags.gpus_per_node),
      agent_options);
  if (!agents.ok()) return Fail(std::string(agents.status().message()));

  char kubeconfig[] = "/tmp/controller-bench-kubeconfig-XXXXXX";
  const int kubeconfig_fd = mkstemp(kubeconfig);
  const std::string kubeconfig_text = (*server)->Kubeconfig();
  if (kubeconfig_fd < 0 || write(kubeconfig_fd, kubeconfig_text.data(), kubeconfig_text.size()) !=
                               static_cast<ssize_t>(kubeconfig_text.size())) {
    return Fail("cannot write the kubeconfig");
  }
  close(kubeconfig_fd);
  const std::string log_path = std::string(kubeconfig) + ".controller.log";
  const int port = wavepool::testing::FreePort();
  const pid_t controller = StartController(flags, kubeconfig, port, log_path);
  const auto ready_deadline = SteadyClock::now() + std::chrono::seconds(60);
  while (OkBody(port, "/readyz").empty()) {
    if (SteadyClock::now() > ready_deadline || waitpid(controller, nullptr, WNOHANG) != 0) {
      kill(controller, SIGKILL);
      return Fail("the controller did not become ready; its log: " + log_path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::int64_t idle_rss_kib = ProcStatusKiB(controller, "VmRSS");
  const double idle_cpu = CpuSeconds(controller);

  JobTracker tracker;
  kube::SharedInformer::Options informer_options;
  informer_options.ns = kNamespace;
  informer_options.log = [](std::string_view) {};
  kube::SharedInformer informer(api, wavepool::api::kTrainingJobs, informer_options);
  kube::ResourceEventHandlers handlers;
  handlers.on_add = [&](const nlohmann::json& job) { tracker.Observe(job); };
  handlers.on_update = [&](const nlohmann::json&, const nlohmann::json& job) {
    tracker.Observe(job);
  };
  (void)informer.AddEventHandler(handlers);
  informer.Run();
  informer.WaitForSync(std::chrono::seconds(30));

  int foreground_gpus = 0;
  const std::vector<nlohmann::json> jobs = MakeJobs(flags, &foreground_gpus);
  int foreground = 0;
  for (const auto& job : jobs) foreground += job["spec"]["role"] == "Foreground";
  const auto start = SteadyClock::now();
  // Four creators, as several users submitting at once; each job's creation time is recorded
  // just before its POST.
  std::atomic<std::size_t> next{0};
  std::atomic<int> create_errors{0};
  std::vector<std::thread> creators;
  for (int t = 0; t < 4; ++t) {
    creators.emplace_back([&] {
      for (std::size_t i = next++; i < jobs.size(); i = next++) {
        tracker.Created(jobs[i]["metadata"]["name"]);
        if (!api.Create(wavepool::api::kTrainingJobs, jobs[i]).ok()) ++create_errors;
      }
    });
  }
  for (auto& creator : creators) creator.join();
  const double created_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const auto deadline = start + std::chrono::seconds(flags.timeout_s);
  while (tracker.running() < jobs.size() && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool complete = tracker.running() >= jobs.size() && tracker.placed() >= jobs.size();
  const double placed_s = tracker.LastPlaced(start);
  const double running_s = tracker.LastRunning(start);
  const std::string metrics = OkBody(port, "/metrics");
  if (flags.dump_metrics) std::printf("%s\n", metrics.c_str());
  const std::int64_t peak_kib = ProcStatusKiB(controller, "VmHWM");
  const double cpu = CpuSeconds(controller) - idle_cpu;
  kill(controller, SIGTERM);
  int exit_status = 0;
  waitpid(controller, &exit_status, 0);
  informer.Stop();
  (*agents)->Stop();
  (*kubelet)->Stop();

  const Histogram decision =
      ParseHistogram(metrics, "wavepool_controller_placement_duration_seconds");
  const Histogram latency =
      ParseHistogram(metrics, "wavepool_controller_placement_latency_seconds");
  const std::vector<double> seen = tracker.PlacementLatencies();
  std::printf(
      "controller_bench: %zu jobs (%d foreground gangs on %d GPUs, %zu background) over "
      "%d nodes x %lld GPUs, %d workers\n",
      jobs.size(), foreground, foreground_gpus, jobs.size() - foreground, flags.nodes,
      static_cast<long long>(flags.gpus_per_node), flags.workers);
  std::printf("  %-52s %10.2f s%s\n", "all jobs created (4 clients)", created_s,
              create_errors > 0 ? " (with errors)" : "");
  std::printf("  %-52s %10.2f s  (%zu/%zu)\n", "first creation -> every job placed", placed_s,
              tracker.placed(), jobs.size());
  std::printf("  %-52s %10.2f s  (%zu/%zu)\n", "first creation -> every job Running", running_s,
              tracker.running(), jobs.size());
  std::printf("  %-52s %10.0f jobs/s\n", "placement throughput", jobs.size() / placed_s);
  std::printf("  %-52s %7.2f / %.2f ms  (%.0f decisions)\n",
              "placement decision, median / p99 (controller)", Quantile(decision, 0.5) * 1e3,
              Quantile(decision, 0.99) * 1e3, decision.count);
  std::printf("  %-52s %g s\n", "placement decision, mean = sum / count (controller)",
              decision.count > 0 ? decision.sum / decision.count : NAN);
  std::printf("  %-52s %7.2f / %.2f s\n", "created -> placed, median / p99 (controller)",
              Quantile(latency, 0.5), Quantile(latency, 0.99));
  std::printf("  %-52s %7.2f / %.2f s\n", "created -> placed, median / p99 (seen here)",
              ExactQuantile(seen, 0.5), ExactQuantile(seen, 0.99));
  std::printf("  %-52s %7.1f MiB (idle after sync: %.1f MiB)\n", "controller peak RSS (VmHWM)",
              peak_kib / 1024.0, idle_rss_kib / 1024.0);
  std::printf("  %-52s %7.2f s (%.2f ms per job)\n", "controller CPU while placing", cpu,
              cpu / jobs.size() * 1e3);
  std::remove(kubeconfig);
  if (!complete) return Fail("not every job was Running in time; controller log: " + log_path);
  std::remove(log_path.c_str());
  return create_errors > 0 ? Fail("some creations failed") : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The controller placing TrainingJobs at cluster scale (docs/performance.md)"};
  Flags flags;
#ifdef WAVEPOOL_CONTROLLER_BIN
  flags.controller = WAVEPOOL_CONTROLLER_BIN;
#endif
  app.add_option("--jobs", flags.jobs, "TrainingJobs to create")->check(CLI::PositiveNumber);
  app.add_option("--nodes", flags.nodes, "Simulated GPU nodes")->check(CLI::PositiveNumber);
  app.add_option("--gpus-per-node", flags.gpus_per_node)->check(CLI::PositiveNumber);
  app.add_option("--foreground-share", flags.foreground_share, "Share of jobs that are foreground")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--workers", flags.workers, "The controller's --workers")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", flags.timeout_s, "Give up after this many seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--controller", flags.controller, "The wavepool-controller binary");
  app.add_flag("--dump-metrics", flags.dump_metrics, "Print the controller's /metrics at the end");
  CLI11_PARSE(app, argc, argv);
  if (flags.controller.empty()) return Fail("--controller is required");
  const int background = flags.jobs - static_cast<int>(flags.jobs * flags.foreground_share + 0.5);
  if (background > flags.nodes * flags.gpus_per_node) {
    return Fail("more background jobs than GPUs: they could not all be placed at once");
  }
  return Run(flags);
}
