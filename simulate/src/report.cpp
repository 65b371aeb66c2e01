// The JSON report (report.h).
#include "wavepool/simulate/report.h"

#include <optional>

namespace wavepool::simulate {
namespace {

using nlohmann::json;

json ToJson(const Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}};
}

json Ratio(const SimulationReport& report, Policy numerator, Policy denominator,
           bool foreground_only) {
  const std::optional<double> r = ThroughputRatio(report, numerator, denominator, foreground_only);
  return r ? json(*r) : json(nullptr);
}

json ToJson(const PolicyResult& r) {
  return {
      {"policy", PolicyName(r.policy)},
      {"horizonSeconds", r.horizon_seconds},
      {"windowSeconds", r.window_seconds},
      {"clusterSamplesPerSecond", r.cluster_samples_per_second},
      {"gpuBusy", r.gpu_busy},
      {"gpuHeld", r.gpu_held},
      {"foreground",
       {{"jobs", r.foreground_jobs},
        {"samplesPerSecond", r.foreground_samples_per_second},
        {"gpusMean", r.foreground_gpus_mean},
        {"completionSeconds", ToJson(r.foreground_completion_seconds)},
        {"waitSeconds", ToJson(r.foreground_wait_seconds)},
        {"slowdown", ToJson(r.foreground_slowdown)},
        {"overSlo", r.foreground_over_slo}}},
      {"background",
       {{"jobs", r.background_jobs},
        {"samplesPerSecond", r.background_samples_per_second},
        {"progress", r.background_progress},
        {"completed", r.background_completed},
        {"placements", r.background_placements},
        {"preemptions", r.preemptions}}},
      {"events", r.events},
  };
}

}  // namespace

json ToJson(const SimulationReport& report) {
  const SimulationOptions& o = report.options;
  json policies = json::array();
  for (const PolicyResult& r : report.results) policies.push_back(ToJson(r));
  return {
      {"cluster",
       {{"nodes", o.nodes},
        {"gpusPerNode", o.gpus_per_node},
        {"gpus", static_cast<std::int64_t>(o.nodes) * o.gpus_per_node},
        {"device", o.device},
        {"maxForegroundSlowdown", o.max_foreground_slowdown},
        {"amplificationLimit", o.amplification_limit},
        {"preemptionSeconds", o.preemption_seconds}}},
      {"trace",
       {{"jobs", report.jobs},
        {"foreground", report.foreground_jobs},
        {"background", report.background_jobs}}},
      {"plans", report.plans},
      {"offeredForegroundLoad",
       report.offered_foreground_load ? json(*report.offered_foreground_load) : json(nullptr)},
      {"policies", policies},
      {"ratios",
       {{"wavepoolOverExclusiveDp",
         Ratio(report, Policy::kWavepool, Policy::kExclusiveDataParallel, false)},
        {"wavepoolOverExclusiveDpForeground",
         Ratio(report, Policy::kWavepool, Policy::kExclusiveDataParallel, true)},
        {"burstOverExclusiveDp",
         Ratio(report, Policy::kBurst, Policy::kExclusiveDataParallel, false)}}},
  };
}

}  // namespace wavepool::simulate
