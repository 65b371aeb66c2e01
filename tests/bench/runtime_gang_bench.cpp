// Step times of whole gangs of wavepool-worker processes on this machine (docs/performance.md,
// "Training runtime"): each configuration is planned by the planner, run as N worker processes
// meeting over a TCP store on loopback (one intra-op thread each), and every rank's progress lines
// give the iteration time and the time spent waiting for transfers and all-reduces. Reported:
// medians over the steps after the warm-up, of the slowest rank per step (the gang's pace) and
// of each kind of wait over all ranks.
//
//   runtime_gang_bench --worker build/bin/wavepool-worker [--steps 40] [--warmup 5]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/planner.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::runtime {
namespace {

struct Config {
  std::string name;
  std::string model;
  int gpus;
  std::int64_t batch;
  api::Strategy strategy;
  api::Toggle tick_tock = api::Toggle::kOff;
  api::WavePlacement placement = api::WavePlacement::kStationary;
};

struct Step {
  double iteration = 0, transfer = 0, allreduce = 0;
};

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string PlanFile(const Config& c, const std::string& dir, std::int64_t steps) {
  const planner::ModelGraph graph = *planner::BuiltinModel(c.model);
  const planner::DeviceSpec device = *planner::FindDevice("a100");
  planner::ComputeCostModelPtr compute = planner::MakeAnalyticCostModel(device);
  const planner::CommModel comm(planner::DefaultNetworkModel(device));
  planner::PlanRequest request;
  request.gpus = c.gpus;
  request.global_batch = c.batch;
  request.strategy = c.strategy;
  request.tick_tock = c.tick_tock;
  request.gpu_counts = api::GpuCounts::kAllIntegers;
  request.amplification_limit = 8;
  absl::StatusOr<planner::PlanReport> report =
      planner::MakePlan(planner::PlanContext{graph, device, *compute, comm}, request);
  if (!report.ok()) {
    std::cerr << c.name << ": " << report.status() << "\n";
    std::exit(1);
  }
  report->plan.training.steps = steps;
  if (c.strategy == api::Strategy::kModelParallelWaves) report->plan.wave_placement = c.placement;
  const std::string path = dir + "/" + c.name + ".json";
  std::ofstream(path) << api::ToJson(report->plan).dump(2);
  return path;
}

// Waits for every rank; when one fails, kills the others (they would wait for it at the store or
// in a collective until their timeouts). Whether every rank succeeded.
bool WaitForGang(std::vector<pid_t> pids) {
  bool ok = true;
  while (!pids.empty()) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0) return false;
    pids.erase(std::remove(pids.begin(), pids.end(), done), pids.end());
    if (ok && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      ok = false;
      for (pid_t pid : pids) kill(pid, SIGKILL);
    }
  }
  return ok;
}

// Runs the gang; returns each rank's steps, or nothing when a rank failed (its stderr names why).
std::optional<std::vector<std::vector<Step>>> RunGang(const std::string& worker,
                                                      const std::string& plan, int ranks, int port,
                                                      const std::string& dir) {
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const std::string out = dir + "/rank" + std::to_string(r) + ".log";
    const pid_t pid = fork();
    if (pid == 0) {
      if (std::freopen(out.c_str(), "w", stdout) == nullptr) _exit(126);
      const std::string rank = std::to_string(r), world = std::to_string(ranks),
                        store = "tcp://127.0.0.1:" + std::to_string(port);
      execl(worker.c_str(), worker.c_str(), "--plan", plan.c_str(), "--rank", rank.c_str(),
            "--world-size", world.c_str(), "--store", store.c_str(), "--log-every", "1",
            "--threads", "1", static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  if (!WaitForGang(pids)) return std::nullopt;
  std::vector<std::vector<Step>> steps(static_cast<std::size_t>(ranks));
  const std::regex line(
      R"(iteration (\S+) s \(compute \S+, transfer (\S+), all-reduce (\S+), data \S+\))");
  for (int r = 0; r < ranks; ++r) {
    std::ifstream in(dir + "/rank" + std::to_string(r) + ".log");
    std::string text;
    while (std::getline(in, text)) {
      std::smatch m;
      if (std::regex_search(text, m, line)) {
        steps[static_cast<std::size_t>(r)].push_back(
            {std::stod(m[1]), std::stod(m[2]), std::stod(m[3])});
      }
    }
  }
  return steps;
}

}  // namespace
}  // namespace wavepool::runtime

int main(int argc, char** argv) {
  using namespace wavepool;
  using runtime::Config;
  CLI::App app("Step times of wavepool-worker gangs");
  std::string worker;
  std::int64_t steps = 40, warmup = 5;
  app.add_option("--worker", worker, "wavepool-worker")->required();
  app.add_option("--steps", steps, "Steps per gang");
  app.add_option("--warmup", warmup, "Steps left out of the medians");
  CLI11_PARSE(app, argc, argv);
  const std::vector<Config> configs = {
      {"dp-cnn_tiny-1", "cnn_tiny", 1, 64, api::Strategy::kDataParallel},
      {"dp-cnn_tiny-2", "cnn_tiny", 2, 64, api::Strategy::kDataParallel},
      {"dp-cnn_tiny-4", "cnn_tiny", 4, 64, api::Strategy::kDataParallel},
      {"dp-branchy_tiny-4", "branchy_tiny", 4, 64, api::Strategy::kDataParallel},
      {"burst-branchy_tiny-4", "branchy_tiny", 4, 64, api::Strategy::kBurstParallel},
      {"ticktock-mlp_tiny-2", "mlp_tiny", 2, 64, api::Strategy::kDataParallel, api::Toggle::kOn},
      {"mpw-stationary-mlp_tiny-3", "mlp_tiny", 3, 64, api::Strategy::kModelParallelWaves,
       api::Toggle::kOff, api::WavePlacement::kStationary},
      {"mpw-roundrobin-mlp_tiny-3", "mlp_tiny", 3, 64, api::Strategy::kModelParallelWaves,
       api::Toggle::kOff, api::WavePlacement::kRoundRobin},
  };
  absl::StatusOr<wavepool::testing::TempDir> temp_dir =
      wavepool::testing::TempDir::Create("wavepool-gang-bench");
  if (!temp_dir.ok()) return std::fprintf(stderr, "%s\n", temp_dir.status().ToString().c_str()), 1;
  const std::string dir = temp_dir->path();
  std::printf(
      "| gang | ranks | step (median, slowest rank) ms | transfer wait ms | all-reduce wait ms "
      "|\n");
  std::printf("|---|---|---|---|---|\n");
  std::fflush(stdout);  // before the workers fork, or each prints it again
  int failed = 0;
  for (const Config& c : configs) {
    const std::string plan = runtime::PlanFile(c, dir, steps);
    const auto gang = runtime::RunGang(worker, plan, c.gpus, wavepool::testing::FreePort(), dir);
    if (!gang.has_value()) {
      std::fprintf(stderr, "%s: a rank failed; the others were stopped\n", c.name.c_str());
      ++failed;
      continue;
    }
    const auto& ranks = *gang;
    std::vector<double> pace, transfer, allreduce;
    for (std::int64_t s = warmup; s < steps; ++s) {
      double slowest = 0;
      for (const auto& rank : ranks) {
        if (static_cast<std::size_t>(s) >= rank.size()) continue;
        const runtime::Step& step = rank[static_cast<std::size_t>(s)];
        slowest = std::max(slowest, step.iteration);
        transfer.push_back(step.transfer);
        allreduce.push_back(step.allreduce);
      }
      pace.push_back(slowest);
    }
    std::printf("| %s | %d | %.2f | %.2f | %.2f |\n", c.name.c_str(), c.gpus,
                1e3 * runtime::Median(pace), 1e3 * runtime::Median(transfer),
                1e3 * runtime::Median(allreduce));
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}
