// Where a plan's compute cost comes from: a measured profile the user gave, else the profile
// wavepool ships for the model on the device, else the analytical model. `wavepool plan` and the
// controller both choose this way, so that a job plans the same from the command line and in the
// cluster. Pure functions: the caller reads the files or ConfigMaps and names them in its errors.
#ifndef WAVEPOOL_PLANNER_COMPUTE_SOURCE_H_
#define WAVEPOOL_PLANNER_COMPUTE_SOURCE_H_

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/profile.h"

namespace wavepool::planner {

// The profile of `model` in the text of a measured-profile CSV (profile.h gives the format): the
// text's only profile, whatever model it names (binding it to `model` then checks that it fits),
// else the first, in model-name order, whose model is model.name() or a zoo alias of it (zoo.h:
// the DeepPool profile calls wide_resnet101_2 "wrn101_2").
// InvalidArgument when the text does not parse (ParseProfileCsv's message, naming the line), or
// when it holds no profile of `model`: "no profile of model resnet50 (it has inception_v3, vgg16,
// wrn101_2)". Messages do not name where the text came from: the caller prefixes its file or
// field.
absl::StatusOr<LayerProfile> PickProfile(std::string_view profile_csv, const ModelGraph& model);

// The compute cost model for planning `model` on `device`, the first of:
//   1. `given`, a measured profile the user supplied (e.g. by PickProfile);
//   2. the profile wavepool ships for the model on the device (FindBuiltinProfile);
//   3. the analytical model of the device in `precision` (MakeAnalyticCostModel).
// A profile costs the layers it has no row for with the analytical model in `precision`.
// InvalidArgument (MakeProfiledCostModel's message, naming the profile and its first unmatched
// row) when the chosen profile does not fit `model`; `given.has_value()` tells the caller
// whether that was its profile or the shipped one.
absl::StatusOr<ComputeCostModelPtr> ChooseComputeCost(const std::optional<LayerProfile>& given,
                                                      const ModelGraph& model,
                                                      const DeviceSpec& device,
                                                      Precision precision);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_COMPUTE_SOURCE_H_
