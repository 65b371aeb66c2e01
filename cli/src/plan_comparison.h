// `wavepool plan --compare`: every strategy of a PlanReport ranked, what each figure counts, and
// why the plan was chosen over the rows that are faster; as text or as JSON at full precision.
#ifndef WAVEPOOL_CLI_SRC_PLAN_COMPARISON_H_
#define WAVEPOOL_CLI_SRC_PLAN_COMPARISON_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "wavepool/api/enums.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/planner.h"

namespace wavepool::cli {

// One row of the comparison. Figures are in seconds and bytes; a negative one is unknown.
struct ComparisonRow {
  std::string strategy;  // "burst-parallel", "data-parallel", "spatial", "tick-tock (2 waves)", ...
  std::string model;     // the cost model: "burst search", "wavelet" or "ParaDL"
  int gpus = 0;
  double iteration = 0;
  double compute = -1;
  double communication = -1;     // everything on the critical path that is not compute
  double input = -1;             // the input copy on the critical path (part of communication)
  double memory = -1;            // the busiest GPU
  double gpu_seconds = -1;       // GPU time per iteration
  double idle_gpu_seconds = -1;  // what its GPUs leave to background jobs per iteration
  std::string status;    // "ok", "out of memory", a tick-tock verdict, why ParaDL cannot run
  bool runs = false;     // ranked before every row that cannot run
  bool is_plan = false;  // the row the plan is
  std::string why_not;   // for a row faster than the plan: why the plan was chosen anyway
};

// The PlanReport's strategies ranked: rows that run first, by iteration, then the rest. Exactly
// one row is the plan. `requested` is the strategy the command line asked for.
std::vector<ComparisonRow> CompareStrategies(const planner::PlanReport& report,
                                             api::Strategy requested,
                                             const planner::DeviceSpec& device);

// The ranked table, what its figures count, why the plan wins over faster rows, and the ParaDL
// oracle's breakdown.
std::string FormatComparison(const planner::PlanReport& report, api::Strategy requested,
                             const planner::DeviceSpec& device);

// {"plan": the Plan document, "strategies": the ranked rows, "paradl": every oracle prediction
// with its parts and memory, "decisions": the plan's reasons}, every figure a JSON number at full
// precision (seconds and bytes), an unknown one null.
nlohmann::json ComparisonJson(const planner::PlanReport& report, api::Strategy requested,
                              const planner::DeviceSpec& device);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SRC_PLAN_COMPARISON_H_
