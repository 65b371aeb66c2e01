// A discrete-event simulation of a GPU cluster running a trace of foreground and background jobs
// under one of three policies, in simulated time only (never the wall clock), deterministic for
// a trace and options. docs/simulate.md describes the model; in short:
//  - each job's iteration time, GPU count, idle share and memory come from its plan (PlanCache:
//    the controller's PlanJob on the planner);
//  - placement and preemption are the controller's (SimulatedCluster: controller/placement.h);
//  - a background job sharing a foreground GPU slows the foreground and trains at the rate the
//    agent's interference model and slowdown feedback loop give (CollocationModel);
//  - events: arrivals, completions, and gangs starting once the background pods they preempted
//    have checkpointed and stopped. Between events every job trains at a constant rate.
//  - after every event the waiting gangs are placed in arrival order (a later gang that fits may
//    pass an earlier one that does not), then the waiting background jobs in line (the first that
//    finds no GPU stops the pass until the cluster changes).
//
// Policies (deeppool-burst-parallel §7 compares the same three):
//  - exclusive-dp: every foreground job trains data-parallel on the GPUs it asks for, alone on
//    them; background jobs run only on GPUs no foreground holds, and a gang that needs such a GPU
//    preempts them ("DP", plus the idle GPUs a cluster would lend to best-effort work);
//  - burst: burst-parallel foreground plans, no background jobs ("BP");
//  - wavepool: burst-parallel foreground plans, background jobs beside them under the slowdown
//    SLO and on GPUs no foreground holds ("BP + Col").
//
// Thread safety: the functions keep no global state; SimulatePolicy mutates the PlanCache and
// CollocationModel it is given, so concurrent simulations need their own.
#ifndef WAVEPOOL_SIMULATE_SIMULATOR_H_
#define WAVEPOOL_SIMULATE_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/controller/placement.h"
#include "wavepool/simulate/cluster.h"
#include "wavepool/simulate/collocation.h"
#include "wavepool/simulate/job_costs.h"
#include "wavepool/simulate/trace.h"

namespace wavepool::simulate {

enum class Policy { kExclusiveDataParallel, kBurst, kWavepool };

// "exclusive-dp", "burst", "wavepool".
std::string_view PolicyName(Policy policy);
// The inverse of PolicyName; InvalidArgument listing the names.
absl::StatusOr<Policy> ParsePolicy(std::string_view name);
// Every policy, in the order above.
std::vector<Policy> AllPolicies();

// Where a job is in its life. A background job goes back to kWaiting when it is preempted (after
// kStopping, while it checkpoints), keeping the steps it trained.
enum class JobPhase { kNotArrived, kWaiting, kStarting, kRunning, kStopping, kDone };

// The state after one event was handled and the placement passes ran, for tests and tools that
// check the simulation from outside (SimulationOptions::observer). `jobs` is indexed like the
// trace; `foreground_on` and `background_on` by GPU (node x gpus_per_node + index).
struct JobSnapshot {
  JobPhase phase = JobPhase::kNotArrived;
  std::int64_t plan_gpus = 0;  // GPUs its plan runs on under the policy; 0: it never runs
  std::vector<GpuId> gpus;     // a gang's GPUs, in rank order, or a background job's one GPU
  double steps_trained = 0;
  double steps_per_second = 0;  // until the next event
};
struct Snapshot {
  double time_seconds = 0;
  std::vector<JobId> foreground_on;
  std::vector<JobId> background_on;
  std::vector<JobSnapshot> jobs;
};
// Called on the simulating thread; it must not keep the reference.
using SnapshotObserver = std::function<void(const Snapshot&)>;

struct SimulationOptions {
  int nodes = 16;               // 1..99999
  int gpus_per_node = 8;        // 1..64
  std::string device = "a100";  // a planner catalog name: the GPUs and the plans' cost model
  // The foreground jobs' slowdown SLO (spec.collocation.maxForegroundSlowdown), >= 1.
  double max_foreground_slowdown = 1.10;
  double amplification_limit = 2.0;  // of burst-parallel plans, >= 1
  // How long a preempted background pod takes to checkpoint and exit; the gang that preempted it
  // starts after that (the controller allows up to 120 s, owned_objects.h). >= 0.
  double preemption_seconds = 10;
  controller::PlacementOptions placement;
  CollocationOptions collocation;
  // Check every placement against the whole inventory (cluster.h); slow, for tests.
  bool verify_placement = false;
  // Shown every state (after each event) when set; slow at scale, for tests.
  SnapshotObserver observer;
};

// InvalidArgument naming the field.
absl::Status Validate(const SimulationOptions& options);

// Nearest-rank percentiles (the smallest value with at least p% of the values at or below it)
// and the mean; all 0 for no value.
struct Percentiles {
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
  double mean = 0;
};
Percentiles PercentilesOf(std::vector<double> values);

// The span of simulated time a policy's throughput is measured over: from 0 to the trace's last
// arrival, while jobs keep coming (an overloaded cluster is saturated over all of it, and the
// drain after it, whose length depends on a few long jobs, does not dilute the rates); the whole
// horizon when every job arrives at 0.
double MeasurementWindow(const Trace& trace, double horizon_seconds);

// What one policy did with the trace. Throughput and utilisation are over the measurement window;
// times and slowdowns are per job, over the whole run, which ends with the last foreground
// completion (or the last arrival, when that is later or no job is foreground).
struct PolicyResult {
  Policy policy = Policy::kExclusiveDataParallel;
  double horizon_seconds = 0;
  double window_seconds = 0;
  double cluster_samples_per_second = 0;  // foreground + background
  double foreground_samples_per_second = 0;
  double background_samples_per_second = 0;
  double gpu_busy = 0;  // share of GPU-time with a job's work running (the GPU's utilisation)
  double gpu_held = 0;  // share of GPU-time held by a job
  std::int64_t foreground_jobs = 0;
  double foreground_gpus_mean = 0;            // GPUs a gang holds (its plan's), mean over jobs
  Percentiles foreground_completion_seconds;  // arrival to completion
  Percentiles foreground_wait_seconds;        // arrival to start
  Percentiles foreground_slowdown;            // run time over the plan's solo run time
  std::int64_t foreground_over_slo = 0;       // jobs slowed past the SLO
  std::int64_t background_jobs = 0;
  std::int64_t background_completed = 0;
  double background_progress = 0;  // steps trained over steps asked, all background jobs, run end
  std::int64_t background_placements = 0;
  std::int64_t preemptions = 0;
  std::int64_t events = 0;
};

// Simulates `trace` under `policy`. Costs come from `plans` (shared between policies, so each
// plan is made once) and shared GPUs from `collocation`. InvalidArgument for bad options;
// FailedPrecondition naming the job for one that can never run here (its plan fails, needs more
// GPUs than the cluster has or more memory than a GPU offers after placement's margin); Internal
// when a placement check fails (verify_placement).
absl::StatusOr<PolicyResult> SimulatePolicy(const Trace& trace, Policy policy,
                                            const SimulationOptions& options, PlanCache& plans,
                                            CollocationModel& collocation);

struct SimulationReport {
  SimulationOptions options;
  std::int64_t jobs = 0;
  std::int64_t foreground_jobs = 0;
  std::int64_t background_jobs = 0;
  std::int64_t plans = 0;  // distinct plans made
  // GPU-time the foreground jobs ask of the cluster under exclusive data-parallel plans (steps x
  // iteration x GPUs), over the cluster's GPU-time in the window from 0 to the last arrival: above
  // 1 the cluster cannot keep up with the trace, and waits grow with it. nullopt when every job
  // arrives at 0.
  std::optional<double> offered_foreground_load;
  std::vector<PolicyResult> results;  // in the order asked
};

// SimulationReport::offered_foreground_load for `trace` on the cluster of `options`, with the
// data-parallel plans of `plans`. FailedPrecondition naming the job whose plan fails.
absl::StatusOr<std::optional<double>> OfferedForegroundLoad(const Trace& trace,
                                                            const SimulationOptions& options,
                                                            PlanCache& plans);

// Every policy on the same trace, with one plan cache. Errors as SimulatePolicy.
absl::StatusOr<SimulationReport> Simulate(const Trace& trace, const std::vector<Policy>& policies,
                                          const SimulationOptions& options);

// Cluster samples/s of `numerator` over `denominator`'s; nullopt when either is missing or the
// denominator is 0. `foreground_only_denominator`: over the denominator's foreground samples/s
// only (DeepPool's basis: its DP baseline runs no background job, §7.1).
std::optional<double> ThroughputRatio(const SimulationReport& report, Policy numerator,
                                      Policy denominator, bool foreground_only_denominator);

}  // namespace wavepool::simulate

#endif  // WAVEPOOL_SIMULATE_SIMULATOR_H_
