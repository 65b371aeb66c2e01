// What `wavepool plan` reads from files and flags: the model, its compute cost model and the
// network model. The planner itself does no I/O.
#ifndef WAVEPOOL_CLI_SRC_MODEL_LOADING_H_
#define WAVEPOOL_CLI_SRC_MODEL_LOADING_H_

#include <string>

#include "absl/status/statusor.h"
#include "wavepool/cli/plan_command.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/model.h"

namespace wavepool::cli {

// The whole content of a file; NotFound / PermissionDenied name the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// The built-in model --model names, or the layer table --layer-table points at (exactly one).
// With a layer table and `layer_table_text` not null, the file's text is stored there: the Plan
// carries it, so that the workers build the very model that was planned.
absl::StatusOr<planner::ModelGraph> LoadModel(const PlanFlags& flags,
                                              std::string* layer_table_text = nullptr);

// --profile's measured profile, else the shipped profile of the model on the device, else (or
// with --analytic) the analytical model of the device (planner::ChooseComputeCost).
absl::StatusOr<planner::ComputeCostModelPtr> LoadComputeCost(const PlanFlags& flags,
                                                             const planner::ModelGraph& model,
                                                             const planner::DeviceSpec& device);

// --network's preset (planner::FindNetworkPreset: a name without '/' or '.' that is not a file)
// or file, else the device's default network.
absl::StatusOr<planner::NetworkModel> LoadNetwork(const PlanFlags& flags,
                                                  const planner::DeviceSpec& device);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SRC_MODEL_LOADING_H_
