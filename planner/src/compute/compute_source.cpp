// Choosing a plan's compute cost (compute_source.h).
#include "wavepool/planner/compute_source.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

// True when a profile's model name is `model` or one of its zoo aliases ("wrn101_2").
bool NamesModel(const std::string& profile_model, const std::string& model) {
  if (profile_model == model) return true;
  absl::StatusOr<ModelGraph> builtin = BuiltinModel(profile_model);
  return builtin.ok() && builtin->name() == model;
}

}  // namespace

absl::StatusOr<LayerProfile> PickProfile(std::string_view profile_csv, const ModelGraph& model) {
  absl::StatusOr<std::vector<LayerProfile>> all = ParseProfileCsv(profile_csv);
  if (!all.ok()) return absl::InvalidArgumentError(all.status().message());
  // ParseProfileCsv returns the profiles in model-name order, one per name.
  std::vector<std::string> names;
  for (LayerProfile& candidate : *all) {
    if (all->size() == 1 || NamesModel(candidate.model, model.name())) return std::move(candidate);
    names.push_back(candidate.model);
  }
  return absl::InvalidArgumentError(absl::StrCat("no profile of model ", model.name(), " (it has ",
                                                 absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<ComputeCostModelPtr> ChooseComputeCost(const std::optional<LayerProfile>& given,
                                                      const ModelGraph& model,
                                                      const DeviceSpec& device,
                                                      Precision precision) {
  ComputeCostModelPtr analytic = MakeAnalyticCostModel(device, precision);
  const std::optional<LayerProfile> shipped =
      given.has_value() ? std::nullopt : FindBuiltinProfile(model.name(), device.name);
  const std::optional<LayerProfile>& profile = given.has_value() ? given : shipped;
  if (!profile.has_value()) return analytic;
  return MakeProfiledCostModel(*profile, model, std::move(analytic));
}

}  // namespace wavepool::planner
