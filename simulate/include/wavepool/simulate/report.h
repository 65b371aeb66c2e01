// A simulation report as JSON, for machines (`wavepool simulate --json`): every figure of the
// text report at full precision, with the options it ran under. Field names are camelCase like
// the API's documents; docs/simulate.md lists them.
#ifndef WAVEPOOL_SIMULATE_REPORT_H_
#define WAVEPOOL_SIMULATE_REPORT_H_

#include "nlohmann/json.hpp"
#include "wavepool/simulate/simulator.h"

namespace wavepool::simulate {

// {"cluster": {...}, "trace": {...}, "plans": N, "policies": [...], "ratios": {...}}; a ratio is
// null when a policy it needs was not run.
nlohmann::json ToJson(const SimulationReport& report);

}  // namespace wavepool::simulate

#endif  // WAVEPOOL_SIMULATE_REPORT_H_
