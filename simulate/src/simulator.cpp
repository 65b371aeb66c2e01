// Running a policy (simulator.h): the options checked, every job's plan resolved before the first
// event (so that a job that can never run is an error up front, and planning is not mixed into
// the event loop), the engine run, its counters turned into a PolicyResult.
#include "wavepool/simulate/simulator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/device.h"

namespace wavepool::simulate {
namespace {

constexpr std::pair<Policy, std::string_view> kPolicyNames[] = {
    {Policy::kExclusiveDataParallel, "exclusive-dp"},
    {Policy::kBurst, "burst"},
    {Policy::kWavepool, "wavepool"}};

std::string GiB(planner::Bytes bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / static_cast<double>(1LL << 30));
}

// The plan a job trains with under `policy`. A one-GPU gang has nothing to burst.
CostKey KeyFor(const TraceJob& job, Policy policy) {
  CostKey key;
  key.model = job.model;
  key.role = job.role;
  key.gpus = job.role == api::Role::kForeground ? job.gpus : 1;
  key.global_batch = job.global_batch;
  key.strategy = job.role == api::Role::kForeground && key.gpus >= 2 &&
                         policy != Policy::kExclusiveDataParallel
                     ? api::Strategy::kBurstParallel
                     : api::Strategy::kDataParallel;
  return key;
}

absl::StatusOr<std::vector<const JobCost*>> ResolveCosts(const Trace& trace, Policy policy,
                                                         const SimulatedCluster& cluster,
                                                         PlanCache& plans) {
  std::vector<const JobCost*> costs;
  costs.reserve(trace.jobs.size());
  const planner::Bytes offered = cluster.shape().gpu_memory_bytes - cluster.margin_bytes();
  for (const TraceJob& job : trace.jobs) {
    if (job.role == api::Role::kBackground && policy == Policy::kBurst) {
      costs.push_back(nullptr);  // never runs
      continue;
    }
    absl::StatusOr<const JobCost*> cost = plans.Get(KeyFor(job, policy));
    if (!cost.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job.name, ": ", cost.status().message()));
    }
    if ((*cost)->gpus > cluster.gpu_count()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job.name, ": its plan (", (*cost)->description, ") needs ",
                       (*cost)->gpus, " GPUs; the cluster has ", cluster.gpu_count()));
    }
    if ((*cost)->memory_per_gpu_bytes > offered) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job.name, ": its plan (", (*cost)->description, ") needs ",
                       GiB((*cost)->memory_per_gpu_bytes), " per GPU; a GPU offers ", GiB(offered),
                       " after placement's margin"));
    }
    costs.push_back(*cost);
  }
  return costs;
}

}  // namespace

std::string_view PolicyName(Policy policy) {
  for (const auto& [p, name] : kPolicyNames) {
    if (p == policy) return name;
  }
  return "unknown";
}

absl::StatusOr<Policy> ParsePolicy(std::string_view name) {
  for (const auto& [p, known] : kPolicyNames) {
    if (known == name) return p;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown policy \"", std::string(name),
                                                 "\"; known: exclusive-dp, burst, wavepool"));
}

std::vector<Policy> AllPolicies() {
  return {Policy::kExclusiveDataParallel, Policy::kBurst, Policy::kWavepool};
}

absl::Status Validate(const SimulationOptions& o) {
  auto bad = [](const std::string& field, const std::string& problem) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
  };
  if (o.nodes < 1 || o.nodes > 99999) {
    return bad("nodes", absl::StrCat("must be in [1, 99999], got ", o.nodes));
  }
  if (o.gpus_per_node < 1 || o.gpus_per_node > 64) {
    return bad("gpus_per_node", absl::StrCat("must be in [1, 64], got ", o.gpus_per_node));
  }
  if (absl::StatusOr<planner::DeviceSpec> d = planner::FindDevice(o.device); !d.ok()) {
    return bad("device", std::string(d.status().message()));
  }
  if (!(o.max_foreground_slowdown >= 1) || !std::isfinite(o.max_foreground_slowdown)) {
    return bad("max_foreground_slowdown",
               absl::StrCat("must be >= 1, got ", o.max_foreground_slowdown));
  }
  if (!(o.amplification_limit >= 1) || !std::isfinite(o.amplification_limit)) {
    return bad("amplification_limit", absl::StrCat("must be >= 1, got ", o.amplification_limit));
  }
  if (!(o.preemption_seconds >= 0) || !std::isfinite(o.preemption_seconds)) {
    return bad("preemption_seconds", absl::StrCat("must be >= 0, got ", o.preemption_seconds));
  }
  if (absl::Status s = Validate(o.collocation); !s.ok()) {
    return bad("collocation", std::string(s.message()));
  }
  return absl::OkStatus();
}

Percentiles PercentilesOf(std::vector<double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<double>(values.size());
  auto rank = [&](double q) {
    const auto r = static_cast<std::size_t>(std::ceil(q / 100.0 * n));
    return values[std::clamp<std::size_t>(r, 1, values.size()) - 1];
  };
  p.p50 = rank(50);
  p.p90 = rank(90);
  p.p99 = rank(99);
  p.max = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  p.mean = sum / n;
  return p;
}

absl::StatusOr<std::optional<double>> OfferedForegroundLoad(const Trace& trace,
                                                            const SimulationOptions& options,
                                                            PlanCache& plans) {
  const double window = MeasurementWindow(trace, 0);
  if (!(window > 0)) return std::optional<double>();
  double gpu_seconds = 0;
  for (const TraceJob& job : trace.jobs) {
    if (job.role != api::Role::kForeground) continue;
    absl::StatusOr<const JobCost*> cost = plans.Get(KeyFor(job, Policy::kExclusiveDataParallel));
    if (!cost.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job.name, ": ", cost.status().message()));
    }
    gpu_seconds += static_cast<double>(job.steps) * (*cost)->iteration_seconds *
                   static_cast<double>((*cost)->gpus);
  }
  const double capacity = static_cast<double>(options.nodes) * options.gpus_per_node * window;
  return std::optional<double>(gpu_seconds / capacity);
}

double MeasurementWindow(const Trace& trace, double horizon_seconds) {
  const double last_arrival = trace.jobs.empty() ? 0 : trace.jobs.back().arrival_seconds;
  return last_arrival > 0 ? last_arrival : horizon_seconds;
}

absl::StatusOr<PolicyResult> SimulatePolicy(const Trace& trace, Policy policy,
                                            const SimulationOptions& options, PlanCache& plans,
                                            CollocationModel& collocation) {
  WAVEPOOL_RETURN_IF_ERROR(Validate(options));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::DeviceSpec device, planner::FindDevice(options.device));
  ClusterShape shape;
  shape.nodes = options.nodes;
  shape.gpus_per_node = options.gpus_per_node;
  shape.gpu_memory_bytes = device.memory_bytes;
  shape.gpu_model = device.display_name;
  std::vector<std::string> names;
  names.reserve(trace.jobs.size());
  for (const TraceJob& job : trace.jobs) names.push_back(job.name);
  WAVEPOOL_ASSIGN_OR_RETURN(SimulatedCluster cluster,
                            SimulatedCluster::Create(shape, options.placement, std::move(names),
                                                     options.verify_placement));
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<const JobCost*> costs,
                            ResolveCosts(trace, policy, cluster, plans));
  internal::Engine engine(trace, policy, options, std::move(costs), std::move(cluster),
                          collocation);
  return engine.Run();
}

absl::StatusOr<SimulationReport> Simulate(const Trace& trace, const std::vector<Policy>& policies,
                                          const SimulationOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(Validate(options));
  PlanCache plans(options.device, options.amplification_limit);
  CollocationModel collocation(options.collocation);
  SimulationReport report;
  report.options = options;
  report.jobs = static_cast<std::int64_t>(trace.jobs.size());
  for (const TraceJob& job : trace.jobs) {
    ++(job.role == api::Role::kForeground ? report.foreground_jobs : report.background_jobs);
  }
  for (Policy policy : policies) {
    absl::StatusOr<PolicyResult> result =
        SimulatePolicy(trace, policy, options, plans, collocation);
    if (!result.ok()) {
      return absl::Status(result.status().code(), absl::StrCat(std::string(PolicyName(policy)),
                                                               ": ", result.status().message()));
    }
    report.results.push_back(*std::move(result));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> load,
                            OfferedForegroundLoad(trace, options, plans));
  report.offered_foreground_load = load;
  report.plans = static_cast<std::int64_t>(plans.plans());
  return report;
}

std::optional<double> ThroughputRatio(const SimulationReport& report, Policy numerator,
                                      Policy denominator, bool foreground_only_denominator) {
  const PolicyResult* num = nullptr;
  const PolicyResult* den = nullptr;
  for (const PolicyResult& r : report.results) {
    if (r.policy == numerator) num = &r;
    if (r.policy == denominator) den = &r;
  }
  if (num == nullptr || den == nullptr) return std::nullopt;
  const double base = foreground_only_denominator ? den->foreground_samples_per_second
                                                  : den->cluster_samples_per_second;
  if (!(base > 0)) return std::nullopt;
  return num->cluster_samples_per_second / base;
}

namespace internal {

PolicyResult Engine::Result() const {
  PolicyResult r;
  r.policy = policy_;
  r.horizon_seconds = now_;
  r.window_seconds = window_end_;
  const double window = window_end_ > 0 ? window_end_ : 1;  // rates of an empty window are 0
  r.foreground_samples_per_second = window_foreground_samples_ / window;
  r.background_samples_per_second = window_background_samples_ / window;
  r.cluster_samples_per_second = r.foreground_samples_per_second + r.background_samples_per_second;
  const double gpu_seconds = static_cast<double>(cluster_.gpu_count()) * window;
  r.gpu_busy = window_busy_seconds_ / gpu_seconds;
  r.gpu_held = window_held_seconds_ / gpu_seconds;
  double bg_steps = 0, bg_asked = 0, fg_gpus = 0;
  std::vector<double> completion, wait, slowdown;
  for (const JobState& job : jobs_) {
    const double steps = static_cast<double>(job.spec->steps);
    if (job.foreground) {
      ++r.foreground_jobs;
      fg_gpus += static_cast<double>(job.cost->gpus);
      completion.push_back(job.finished - job.spec->arrival_seconds);
      wait.push_back(job.started - job.spec->arrival_seconds);
      slowdown.push_back((job.finished - job.started) / (steps * job.cost->iteration_seconds));
      if (slowdown.back() > options_.max_foreground_slowdown * (1 + 1e-9)) {
        ++r.foreground_over_slo;
      }
      continue;
    }
    ++r.background_jobs;
    bg_asked += steps;
    if (job.cost == nullptr) continue;  // a policy without background jobs
    if (job.phase == JobPhase::kDone) ++r.background_completed;
    bg_steps += StepsAt(job, now_);
  }
  r.foreground_gpus_mean =
      r.foreground_jobs > 0 ? fg_gpus / static_cast<double>(r.foreground_jobs) : 0;
  r.foreground_completion_seconds = PercentilesOf(std::move(completion));
  r.foreground_wait_seconds = PercentilesOf(std::move(wait));
  r.foreground_slowdown = PercentilesOf(std::move(slowdown));
  r.background_progress = bg_asked > 0 ? bg_steps / bg_asked : 0;
  r.background_placements = background_placements_;
  r.preemptions = preemptions_;
  r.events = events_handled_;
  return r;
}

}  // namespace internal
}  // namespace wavepool::simulate
