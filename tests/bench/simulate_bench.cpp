// The cluster simulation at scale (docs/performance.md, "Cluster simulation"): a generated trace
// of --jobs jobs on --nodes x --gpus-per-node GPUs, every policy simulated on it in turn on one
// thread, each phase timed with the wall clock: generating the trace, planning (the plan cache
// is filled by the first policy that needs a plan; planning is timed apart by resolving every
// job's plans first), and each policy's event loop. The target is the whole run, 1,000 nodes x 8
// GPUs and 10,000 jobs, in under one minute on one core. The default arrival rate keeps the
// cluster about saturated (the CLI's default load, scaled from 128 to 8,000 GPUs); the offered
// load is printed.
//
//   simulate_bench [--nodes 1000] [--gpus-per-node 8] [--jobs 10000] [--arrival-rate 12.5]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "wavepool/simulate/collocation.h"
#include "wavepool/simulate/job_costs.h"
#include "wavepool/simulate/simulator.h"
#include "wavepool/simulate/trace.h"

namespace wavepool::simulate {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Plans every (job, policy) once so that the policies' timings are their event loops alone.
absl::Status Prepare(const Trace& trace, PlanCache& plans) {
  for (const TraceJob& job : trace.jobs) {
    const bool foreground = job.role == api::Role::kForeground;
    for (api::Strategy strategy : {api::Strategy::kDataParallel, api::Strategy::kBurstParallel}) {
      if (strategy == api::Strategy::kBurstParallel && (!foreground || job.gpus < 2)) continue;
      CostKey key{job.model, job.role, foreground ? job.gpus : 1, job.global_batch, strategy};
      absl::StatusOr<const JobCost*> cost = plans.Get(key);
      if (!cost.ok()) return cost.status();
    }
  }
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  SimulationOptions options;
  options.nodes = 1000;
  TraceOptions trace_options;
  trace_options.jobs = 10000;
  trace_options.arrival_rate = 12.5;
  CLI::App app{"Times the cluster simulation at scale"};
  app.add_option("--nodes", options.nodes)->capture_default_str();
  app.add_option("--gpus-per-node", options.gpus_per_node)->capture_default_str();
  app.add_option("--jobs", trace_options.jobs)->capture_default_str();
  app.add_option("--arrival-rate", trace_options.arrival_rate, "jobs per second")
      ->capture_default_str();
  app.add_option("--seed", trace_options.seed)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const Clock::time_point start = Clock::now();
  absl::StatusOr<Trace> trace = GenerateTrace(trace_options);
  if (!trace.ok()) {
    std::cerr << "trace: " << trace.status() << "\n";
    return 1;
  }
  const double generate_seconds = SecondsSince(start);
  if (absl::Status s = Validate(options); !s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  const Clock::time_point plan_start = Clock::now();
  PlanCache plans(options.device, options.amplification_limit);
  if (absl::Status s = Prepare(*trace, plans); !s.ok()) {
    std::cerr << "planning: " << s << "\n";
    return 1;
  }
  const double plan_seconds = SecondsSince(plan_start);
  absl::StatusOr<std::optional<double>> load = OfferedForegroundLoad(*trace, options, plans);
  if (!load.ok()) {
    std::cerr << "offered load: " << load.status() << "\n";
    return 1;
  }
  std::printf("cluster %d nodes x %d GPUs, %lld jobs, arrival rate %.3g/s, offered load %.2f\n",
              options.nodes, options.gpus_per_node, static_cast<long long>(trace->jobs.size()),
              trace_options.arrival_rate, load->value_or(0));
  std::printf("%-14s %10s %12s %12s %14s\n", "phase", "wall s", "events", "events/s",
              "simulated s");
  std::printf("%-14s %10.3f\n", "trace", generate_seconds);
  std::printf("%-14s %10.3f %12zu\n", "plans", plan_seconds, plans.plans());
  CollocationModel collocation(options.collocation);
  for (Policy policy : AllPolicies()) {
    const Clock::time_point policy_start = Clock::now();
    absl::StatusOr<PolicyResult> result =
        SimulatePolicy(*trace, policy, options, plans, collocation);
    const double seconds = SecondsSince(policy_start);
    if (!result.ok()) {
      std::cerr << PolicyName(policy) << ": " << result.status() << "\n";
      return 1;
    }
    std::printf("%-14s %10.3f %12lld %12.0f %14.0f\n", std::string(PolicyName(policy)).c_str(),
                seconds, static_cast<long long>(result->events),
                static_cast<double>(result->events) / seconds, result->horizon_seconds);
  }
  std::printf("%-14s %10.3f\n", "total", SecondsSince(start));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak memory %.0f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return 0;
}

}  // namespace
}  // namespace wavepool::simulate

int main(int argc, char** argv) { return wavepool::simulate::Run(argc, argv); }
