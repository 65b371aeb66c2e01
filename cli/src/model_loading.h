// What `wavepool plan` reads from files and flags: the sources of the model, its compute cost model
// and the network model. The planner itself does no I/O.
#ifndef WAVEPOOL_CLI_SRC_MODEL_LOADING_H_
#define WAVEPOOL_CLI_SRC_MODEL_LOADING_H_

#include <string>

#include "absl/status/statusor.h"
#include "wavepool/cli/plan_command.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/plan_pipeline.h"

namespace wavepool::cli {

// The planner's sources (plan_pipeline.h) from the flags, with the files they name read; what the
// files hold is checked when the planner resolves them, its errors naming the file's path.

// The built-in model --model names, or the text of the layer table --layer-table points at
// (exactly one; the model is named after the file's stem).
absl::StatusOr<planner::ModelSource> ModelSourceFor(const PlanFlags& flags);

// --profile's measured profile, else the shipped profile of the model on the device, else the
// analytical model in --precision; with --analytic the analytical model alone.
absl::StatusOr<planner::ComputeSource> ComputeSourceFor(const PlanFlags& flags);

// --network's preset (a name without '/' or '.' that is not a file) or file, else the device's
// default network.
absl::StatusOr<planner::NetworkSource> NetworkSourceFor(const PlanFlags& flags);

// The model ModelSourceFor names, resolved (planner::ResolveModel).
absl::StatusOr<planner::ModelGraph> LoadModel(const PlanFlags& flags);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SRC_MODEL_LOADING_H_
