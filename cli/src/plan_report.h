// Human-readable renderings of a PlanReport for `wavepool plan`.
#ifndef WAVEPOOL_CLI_SRC_PLAN_REPORT_H_
#define WAVEPOOL_CLI_SRC_PLAN_REPORT_H_

#include <string>

#include "wavepool/planner/comm.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/planner.h"

namespace wavepool::cli {

// The plan: a summary (the network it was planned on, one iteration time and what it counts),
// its stages, transfers and sync groups, memory, GPU time left for background jobs, and the
// decisions behind it. `gpus_allowed` is the request's GPU count (the plan may use fewer);
// `per_layer` adds the GPUs of every layer.
std::string FormatPlan(const planner::PlanReport& report, const planner::ModelGraph& model,
                       const planner::DeviceSpec& device, const planner::NetworkModel& network,
                       int gpus_allowed, bool per_layer);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SRC_PLAN_REPORT_H_
