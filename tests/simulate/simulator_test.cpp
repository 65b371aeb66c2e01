#include "wavepool/simulate/simulator.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/simulate/report.h"
#include "wavepool/simulate/trace.h"

namespace wavepool::simulate {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

// 4 nodes x 8 GPUs a little overloaded (an offered load near 1.1) by gangs of 2 to 8 GPUs.
TraceOptions SmallTraceOptions(std::uint64_t seed) {
  TraceOptions o;
  o.jobs = 120;
  o.seed = seed;
  o.arrival_rate = 0.4;
  o.foreground_gpus = {2, 4, 8};
  o.foreground_steps_min = 200;
  o.foreground_steps_max = 2000;
  o.background_steps_min = 2000;
  o.background_steps_max = 20000;
  return o;
}

Trace SmallTrace(std::uint64_t seed) { return *GenerateTrace(SmallTraceOptions(seed)); }

SimulationOptions SmallCluster() {
  SimulationOptions o;
  o.nodes = 4;
  o.gpus_per_node = 8;
  return o;
}

const PolicyResult& ResultOf(const SimulationReport& report, Policy policy) {
  for (const PolicyResult& r : report.results) {
    if (r.policy == policy) return r;
  }
  ADD_FAILURE() << "no result for " << PolicyName(policy);
  return report.results.front();
}

TEST(Simulate, IsDeterministicForATraceAndItsSeed) {
  const Trace trace = SmallTrace(5);
  ASSERT_OK_AND_ASSIGN(SimulationReport a, Simulate(trace, AllPolicies(), SmallCluster()));
  ASSERT_OK_AND_ASSIGN(SimulationReport b, Simulate(trace, AllPolicies(), SmallCluster()));
  EXPECT_EQ(ToJson(a).dump(), ToJson(b).dump());
  ASSERT_OK_AND_ASSIGN(SimulationReport c, Simulate(SmallTrace(6), AllPolicies(), SmallCluster()));
  EXPECT_NE(ToJson(a).dump(), ToJson(c).dump());
}

TEST(Simulate, ComparesThePoliciesOnOneTrace) {
  const Trace trace = SmallTrace(1);
  ASSERT_OK_AND_ASSIGN(SimulationReport report, Simulate(trace, AllPolicies(), SmallCluster()));
  ASSERT_EQ(report.results.size(), 3u);
  EXPECT_EQ(report.jobs, 120);
  EXPECT_EQ(report.foreground_jobs + report.background_jobs, 120);
  EXPECT_GT(report.foreground_jobs, 30);
  EXPECT_GT(report.background_jobs, 30);
  for (const PolicyResult& r : report.results) {
    EXPECT_EQ(r.foreground_jobs, report.foreground_jobs) << PolicyName(r.policy);
    EXPECT_EQ(r.background_jobs, report.background_jobs) << PolicyName(r.policy);
    EXPECT_GT(r.foreground_samples_per_second, 0) << PolicyName(r.policy);
    EXPECT_LE(r.gpu_busy, r.gpu_held + 1e-12) << PolicyName(r.policy);
    EXPECT_LE(r.gpu_held, 1 + 1e-12) << PolicyName(r.policy);
    EXPECT_DOUBLE_EQ(r.window_seconds, trace.jobs.back().arrival_seconds);
    EXPECT_GE(r.horizon_seconds, r.window_seconds);
  }
  const PolicyResult& dp = ResultOf(report, Policy::kExclusiveDataParallel);
  const PolicyResult& burst = ResultOf(report, Policy::kBurst);
  const PolicyResult& wavepool = ResultOf(report, Policy::kWavepool);
  // Burst-parallel plans hold no more GPUs than data-parallel ones (their widest stage).
  EXPECT_LE(burst.foreground_gpus_mean, dp.foreground_gpus_mean);
  EXPECT_DOUBLE_EQ(burst.foreground_gpus_mean, wavepool.foreground_gpus_mean);
  // Only the burst policy runs no background job; alone on their GPUs, gangs are not slowed.
  EXPECT_EQ(burst.background_samples_per_second, 0);
  EXPECT_EQ(burst.background_placements, 0);
  EXPECT_GT(dp.background_samples_per_second, 0);
  EXPECT_GT(wavepool.background_samples_per_second, 0);
  EXPECT_NEAR(dp.foreground_slowdown.max, 1, 1e-9);
  EXPECT_NEAR(burst.foreground_slowdown.max, 1, 1e-9);
  // Collocation slows gangs, within the SLO.
  EXPECT_GT(wavepool.foreground_slowdown.max, 1.001);
  EXPECT_LE(wavepool.foreground_slowdown.max, 1.1 + 1e-9);
  EXPECT_EQ(wavepool.foreground_over_slo, 0);
  // On a saturated cluster, sharing trains more background work than lending free GPUs only.
  EXPECT_GT(wavepool.background_progress, dp.background_progress);
  ASSERT_TRUE(ThroughputRatio(report, Policy::kWavepool, Policy::kExclusiveDataParallel, false));
  EXPECT_GT(*ThroughputRatio(report, Policy::kWavepool, Policy::kExclusiveDataParallel, false), 1);
}

// Checks every state of a run from outside the engine.
class InvariantChecker {
 public:
  InvariantChecker(const Trace& trace, Policy policy) : trace_(trace), policy_(policy) {}

  void operator()(const Snapshot& s) {
    ++snapshots_;
    EXPECT_GE(s.time_seconds, last_time_);
    last_time_ = s.time_seconds;
    const std::size_t gpus = s.foreground_on.size();
    std::vector<JobId> fg_holder(gpus, kNoJob), bg_holder(gpus, kNoJob);
    if (steps_.empty()) steps_.assign(s.jobs.size(), 0);
    for (std::size_t j = 0; j < s.jobs.size(); ++j) {
      const JobSnapshot& job = s.jobs[j];
      const TraceJob& spec = trace_.jobs[j];
      const auto id = static_cast<JobId>(j);
      // Work is conserved: steps never go back (a preempted job keeps what it trained) and
      // never pass what the job asked for.
      EXPECT_GE(job.steps_trained, steps_[j] - 1e-6) << spec.name << " at " << s.time_seconds;
      EXPECT_LE(job.steps_trained, static_cast<double>(spec.steps) + 1e-6) << spec.name;
      steps_[j] = job.steps_trained;
      if (job.phase == JobPhase::kNotArrived) {
        EXPECT_LE(s.time_seconds, spec.arrival_seconds);
      }
      if (job.phase == JobPhase::kDone) {
        EXPECT_DOUBLE_EQ(job.steps_trained, static_cast<double>(spec.steps)) << spec.name;
      }
      // No GPU is double-booked: each GPU has at most one gang and one background job, and the
      // cluster's records agree with the jobs'.
      std::vector<JobId>& holders = spec.role == api::Role::kForeground ? fg_holder : bg_holder;
      for (GpuId g : job.gpus) {
        EXPECT_EQ(holders[g], kNoJob) << "GPU " << g << " booked twice at " << s.time_seconds;
        holders[g] = id;
      }
      if (spec.role == api::Role::kForeground && !job.gpus.empty()) {
        EXPECT_EQ(static_cast<std::int64_t>(job.gpus.size()), job.plan_gpus) << spec.name;
      }
    }
    EXPECT_EQ(fg_holder, s.foreground_on);
    EXPECT_EQ(bg_holder, s.background_on);
    std::int64_t without_fg = 0, empty = 0;
    for (std::size_t g = 0; g < gpus; ++g) {
      without_fg += s.foreground_on[g] == kNoJob;
      empty += s.foreground_on[g] == kNoJob && s.background_on[g] == kNoJob;
      if (policy_ != Policy::kWavepool) {
        EXPECT_FALSE(s.foreground_on[g] != kNoJob && s.background_on[g] != kNoJob)
            << PolicyName(policy_) << " shares GPU " << g;
      }
      shared_ += s.foreground_on[g] != kNoJob && s.background_on[g] != kNoJob;
    }
    // Nothing waits that fits: a waiting gang needs more GPUs than hold no gang (placement
    // preempts background jobs for it), and under exclusive-dp a waiting background job means
    // no GPU is empty.
    for (std::size_t j = 0; j < s.jobs.size(); ++j) {
      if (s.jobs[j].phase != JobPhase::kWaiting) continue;
      if (trace_.jobs[j].role == api::Role::kForeground) {
        EXPECT_GT(s.jobs[j].plan_gpus, without_fg) << trace_.jobs[j].name << " waits";
      } else if (policy_ == Policy::kExclusiveDataParallel) {
        EXPECT_EQ(empty, 0) << trace_.jobs[j].name << " waits beside an empty GPU";
      }
    }
    last_ = s;
  }

  int snapshots_ = 0;
  std::int64_t shared_ = 0;  // GPU-states with a gang and a background job
  Snapshot last_;

 private:
  const Trace& trace_;
  Policy policy_;
  double last_time_ = 0;
  std::vector<double> steps_;
};

class PolicyInvariants : public ::testing::TestWithParam<Policy> {};

TEST_P(PolicyInvariants, HoldInEveryStateOfARun) {
  for (std::uint64_t seed : {2, 3}) {
    const Trace trace = SmallTrace(seed);
    InvariantChecker checker(trace, GetParam());
    SimulationOptions options = SmallCluster();
    options.observer = [&](const Snapshot& s) { checker(s); };
    PlanCache plans(options.device, options.amplification_limit);
    CollocationModel collocation(options.collocation);
    ASSERT_OK_AND_ASSIGN(PolicyResult r,
                         SimulatePolicy(trace, GetParam(), options, plans, collocation));
    EXPECT_GT(checker.snapshots_, 100);
    EXPECT_EQ(checker.snapshots_, r.events);
    // Every gang trained all its steps; background progress is what the states show.
    double bg_steps = 0, bg_asked = 0;
    for (std::size_t j = 0; j < trace.jobs.size(); ++j) {
      const JobSnapshot& job = checker.last_.jobs[j];
      if (trace.jobs[j].role == api::Role::kForeground) {
        EXPECT_EQ(job.phase, JobPhase::kDone) << trace.jobs[j].name;
      } else {
        bg_steps += job.steps_trained;
        bg_asked += static_cast<double>(trace.jobs[j].steps);
      }
    }
    EXPECT_NEAR(r.background_progress, bg_steps / bg_asked, 1e-9);
    if (GetParam() == Policy::kWavepool) {
      EXPECT_GT(checker.shared_, 0) << "no GPU was ever shared";
      EXPECT_EQ(r.foreground_over_slo, 0);
      EXPECT_LE(r.foreground_slowdown.max, options.max_foreground_slowdown + 1e-9);
    }
    if (GetParam() == Policy::kExclusiveDataParallel) {
      EXPECT_GT(r.preemptions, 0) << "no preemption: the resumed-progress check saw none";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PolicyInvariants, ::testing::ValuesIn(AllPolicies()),
                         [](const ::testing::TestParamInfo<Policy>& param) {
                           std::string name(PolicyName(param.param));
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

// Every placement on the few candidate nodes is checked against the controller's placement on
// the whole inventory (cluster.h); a difference would fail the run with Internal.
TEST(Simulate, PlacementMatchesTheWholeInventoryAtEveryDecision) {
  SimulationOptions options = SmallCluster();
  options.verify_placement = true;
  for (std::uint64_t seed : {7, 8}) {
    EXPECT_OK(Simulate(SmallTrace(seed), AllPolicies(), options).status()) << seed;
  }
}

// The shared-GPU figures come from the agent's interference model: without interference, gangs
// beside background jobs are not slowed at all and the background trains faster.
TEST(Simulate, FollowsTheAgentsInterferenceModel) {
  const Trace trace = SmallTrace(4);
  ASSERT_OK_AND_ASSIGN(SimulationReport base, Simulate(trace, {Policy::kWavepool}, SmallCluster()));
  SimulationOptions none = SmallCluster();
  none.collocation.interference.foreground_sharing = 0;
  none.collocation.interference.foreground_blocking = 0;
  none.collocation.interference.background_sharing = 0;
  ASSERT_OK_AND_ASSIGN(SimulationReport free, Simulate(trace, {Policy::kWavepool}, none));
  EXPECT_GT(base.results[0].foreground_slowdown.max, 1.001);
  EXPECT_NEAR(free.results[0].foreground_slowdown.max, 1, 1e-9);
  EXPECT_GT(free.results[0].background_progress, base.results[0].background_progress);
}

// An SLO the agent's loop cannot keep (collocation.h) shows as jobs over the SLO, not hidden.
TEST(Simulate, ReportsGangsOverATooTightSlo) {
  SimulationOptions tight = SmallCluster();
  tight.max_foreground_slowdown = 1.01;
  ASSERT_OK_AND_ASSIGN(SimulationReport report,
                       Simulate(SmallTrace(4), {Policy::kWavepool}, tight));
  EXPECT_GT(report.results[0].foreground_over_slo, 0);
  EXPECT_GT(report.results[0].foreground_slowdown.max, 1.01);
}

// DeepPool's own setting (deeppool-burst-parallel §7.1, Figure 9): one 8-GPU server, one
// strong-scaled VGG-16 gang with a global batch of 32, a VGG-16 background job per GPU. It
// reports 1.2-2.3x the cluster throughput of data parallelism alone.
TEST(Simulate, OneServerCollocationGainsWhatDeepPoolReports) {
  const std::string csv =
      "name,role,arrival_seconds,model,gpus,global_batch,steps\n"
      "fg,Foreground,0,vgg16,8,32,5000\n"
      "bg-0,Background,0,vgg16,1,8,10000000\nbg-1,Background,0,vgg16,1,8,10000000\n"
      "bg-2,Background,0,vgg16,1,8,10000000\nbg-3,Background,0,vgg16,1,8,10000000\n"
      "bg-4,Background,0,vgg16,1,8,10000000\nbg-5,Background,0,vgg16,1,8,10000000\n"
      "bg-6,Background,0,vgg16,1,8,10000000\nbg-7,Background,0,vgg16,1,8,10000000\n";
  ASSERT_OK_AND_ASSIGN(Trace trace, ParseTraceCsv("deeppool.csv", csv));
  SimulationOptions one = SmallCluster();
  one.nodes = 1;
  ASSERT_OK_AND_ASSIGN(SimulationReport report, Simulate(trace, AllPolicies(), one));
  const PolicyResult& wavepool = ResultOf(report, Policy::kWavepool);
  EXPECT_DOUBLE_EQ(wavepool.window_seconds, wavepool.horizon_seconds);  // all arrive at 0
  const std::optional<double> gain =
      ThroughputRatio(report, Policy::kWavepool, Policy::kExclusiveDataParallel, true);
  ASSERT_TRUE(gain);
  EXPECT_GT(*gain, 1.2);
  EXPECT_LT(*gain, 4.0);
  EXPECT_LE(wavepool.foreground_slowdown.max, 1.1 + 1e-9);
  EXPECT_FALSE(report.offered_foreground_load);  // no arrival window
}

TEST(Simulate, OfferedLoadScalesWithTheArrivalRate) {
  Trace trace = SmallTrace(9);
  ASSERT_OK_AND_ASSIGN(SimulationReport slow, Simulate(trace, {Policy::kBurst}, SmallCluster()));
  for (TraceJob& job : trace.jobs) job.arrival_seconds /= 2;
  ASSERT_OK_AND_ASSIGN(SimulationReport fast, Simulate(trace, {Policy::kBurst}, SmallCluster()));
  ASSERT_TRUE(slow.offered_foreground_load && fast.offered_foreground_load);
  EXPECT_NEAR(*fast.offered_foreground_load, 2 * *slow.offered_foreground_load, 1e-9);
  EXPECT_GT(*slow.offered_foreground_load, 0.3);
}

TEST(Simulate, AJobThatCanNeverRunIsAnErrorNamingIt) {
  const std::string csv =
      "name,role,arrival_seconds,model,gpus,global_batch,steps\n"
      "small,Foreground,0,resnet50,2,32,10\n"
      "huge,Foreground,1,resnet50,64,64,10\n";
  ASSERT_OK_AND_ASSIGN(Trace trace, ParseTraceCsv("t.csv", csv));
  EXPECT_THAT(Simulate(trace, {Policy::kExclusiveDataParallel}, SmallCluster()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("exclusive-dp: job huge: its plan")));
  EXPECT_THAT(Simulate(trace, {Policy::kExclusiveDataParallel}, SmallCluster()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("needs 64 GPUs; the cluster has 32")));
  // Placement's memory margin (controller PlacementOptions) leaves too little of every GPU.
  trace.jobs.pop_back();
  SimulationOptions margin = SmallCluster();
  margin.placement.memory_margin_fraction = 0.999;
  EXPECT_THAT(
      Simulate(trace, {Policy::kBurst}, margin),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("after placement's margin")));
}

TEST(SimulationOptions, ErrorsNameTheField) {
  auto check = [](auto mutate, const std::string& field) {
    SimulationOptions o = SmallCluster();
    mutate(o);
    EXPECT_THAT(Simulate(SmallTrace(1), AllPolicies(), o),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field)))
        << field;
  };
  check([](SimulationOptions& o) { o.nodes = 0; }, "nodes: must be in [1, 99999]");
  check([](SimulationOptions& o) { o.gpus_per_node = 100; }, "gpus_per_node");
  check([](SimulationOptions& o) { o.device = "tpu"; }, "device");
  check([](SimulationOptions& o) { o.max_foreground_slowdown = 0.9; }, "max_foreground_slowdown");
  check([](SimulationOptions& o) { o.amplification_limit = 0.5; }, "amplification_limit");
  check([](SimulationOptions& o) { o.preemption_seconds = -1; }, "preemption_seconds");
  check([](SimulationOptions& o) { o.collocation.background_intensity = 2; },
        "collocation: background_intensity");
}

TEST(Policy, NamesRoundTripAndUnknownNamesAreListed) {
  for (Policy p : AllPolicies()) {
    ASSERT_OK_AND_ASSIGN(Policy back, ParsePolicy(PolicyName(p)));
    EXPECT_EQ(back, p);
  }
  EXPECT_THAT(ParsePolicy("dp"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown policy \"dp\"; known: exclusive-dp, burst, wavepool")));
}

TEST(PercentilesOf, UsesNearestRank) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) values.push_back(i);
  const Percentiles p = PercentilesOf(values);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 99);
  EXPECT_EQ(p.max, 100);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
  EXPECT_EQ(PercentilesOf({7}).p50, 7);
  EXPECT_EQ(PercentilesOf({}).max, 0);
}

TEST(ThroughputRatio, IsMissingWithoutBothPolicies) {
  SimulationReport report;
  report.results.push_back({});
  report.results.back().policy = Policy::kWavepool;
  report.results.back().cluster_samples_per_second = 10;
  EXPECT_FALSE(ThroughputRatio(report, Policy::kWavepool, Policy::kBurst, false));
  report.results.push_back({});
  report.results.back().policy = Policy::kBurst;
  report.results.back().cluster_samples_per_second = 4;
  report.results.back().foreground_samples_per_second = 2;
  EXPECT_DOUBLE_EQ(*ThroughputRatio(report, Policy::kWavepool, Policy::kBurst, false), 2.5);
  EXPECT_DOUBLE_EQ(*ThroughputRatio(report, Policy::kWavepool, Policy::kBurst, true), 5);
}

}  // namespace
}  // namespace wavepool::simulate
