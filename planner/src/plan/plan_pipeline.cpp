// The plan pipeline (plan_pipeline.h): each source resolved by the planner's own loaders, its
// errors prefixed with the field the caller named, then MakePlan.
#include "wavepool/planner/plan_pipeline.h"

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/compute_source.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/profile.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

// "<field>: <message>", or the message alone for an empty field (plan_pipeline.h).
std::string Prefixed(const std::string& field, absl::string_view message) {
  return field.empty() ? std::string(message) : absl::StrCat(field, ": ", message);
}

absl::Status InField(const std::string& field, const absl::Status& status, absl::StatusCode code) {
  return absl::Status(code, Prefixed(field, status.message()));
}

absl::StatusOr<ModelGraph> ParseTable(const LayerTableSource& table) {
  absl::StatusOr<ModelGraph> model = ParseLayerTable(table.model_name, table.text);
  if (!model.ok()) {
    return InField(table.field, model.status(), absl::StatusCode::kInvalidArgument);
  }
  return model;
}

// The measured profile of `model` in `source`'s text, the analytical model for the layers it has
// no row for. Every error is the profile's: it names the source's field.
absl::StatusOr<ComputeCostModelPtr> MeasuredCost(const MeasuredProfileSource& source,
                                                 const ModelGraph& model, const DeviceSpec& device,
                                                 Precision precision) {
  absl::StatusOr<LayerProfile> profile = PickProfile(source.text, model);
  if (!profile.ok()) {
    return InField(source.field, profile.status(), absl::StatusCode::kInvalidArgument);
  }
  absl::StatusOr<ComputeCostModelPtr> cost =
      ChooseComputeCost(*std::move(profile), model, device, precision);
  if (!cost.ok()) return InField(source.field, cost.status(), absl::StatusCode::kInvalidArgument);
  return cost;
}

absl::StatusOr<ComputeCostModelPtr> ShippedCost(const ShippedProfileSource& source,
                                                const ModelGraph& model, const DeviceSpec& device,
                                                Precision precision) {
  absl::StatusOr<ComputeCostModelPtr> cost =
      ChooseComputeCost(std::nullopt, model, device, precision);
  if (!cost.ok()) return InField(source.field, cost.status(), cost.status().code());
  return cost;
}

absl::StatusOr<NetworkModel> PresetNetwork(const NetworkPresetSource& preset,
                                           const DeviceSpec& device) {
  absl::StatusOr<NetworkModel> network = FindNetworkPreset(preset.name, device);
  if (!network.ok()) {
    // The other kind of source is what would be valid instead.
    return absl::InvalidArgumentError(absl::StrCat(
        Prefixed(preset.field, network.status().message()), " (or give a JSON or YAML file)"));
  }
  return network;
}

absl::StatusOr<NetworkModel> ParseNetworkFile(const NetworkFileSource& file) {
  absl::StatusOr<NetworkModel> network = ParseNetworkModel(file.text);
  if (!network.ok()) {
    return InField(file.field, network.status(), absl::StatusCode::kInvalidArgument);
  }
  return network;
}

}  // namespace

absl::StatusOr<ModelGraph> ResolveModel(const ModelSource& source) {
  const auto* builtin = std::get_if<BuiltinModelSource>(&source);
  if (builtin == nullptr) return ParseTable(std::get<LayerTableSource>(source));
  absl::StatusOr<ModelGraph> model = BuiltinModel(builtin->name);
  if (!model.ok()) return InField(builtin->field, model.status(), model.status().code());
  return model;
}

absl::StatusOr<ComputeCostModelPtr> ResolveComputeCost(const ComputeSource& source,
                                                       const ModelGraph& model,
                                                       const DeviceSpec& device) {
  if (const auto* measured = std::get_if<MeasuredProfileSource>(&source.times)) {
    return MeasuredCost(*measured, model, device, source.precision);
  }
  if (const auto* shipped = std::get_if<ShippedProfileSource>(&source.times)) {
    return ShippedCost(*shipped, model, device, source.precision);
  }
  return MakeAnalyticCostModel(device, source.precision);
}

absl::StatusOr<NetworkModel> ResolveNetwork(const NetworkSource& source, const DeviceSpec& device) {
  if (const auto* preset = std::get_if<NetworkPresetSource>(&source)) {
    return PresetNetwork(*preset, device);
  }
  if (const auto* file = std::get_if<NetworkFileSource>(&source)) return ParseNetworkFile(*file);
  return DefaultNetworkModel(device);
}

absl::StatusOr<ResolvedPlan> PlanFromSources(const PlanSources& sources) {
  WAVEPOOL_ASSIGN_OR_RETURN(DeviceSpec device, FindDevice(sources.device));
  WAVEPOOL_ASSIGN_OR_RETURN(ModelGraph model, ResolveModel(sources.model));
  WAVEPOOL_ASSIGN_OR_RETURN(ComputeCostModelPtr compute,
                            ResolveComputeCost(sources.compute, model, device));
  WAVEPOOL_ASSIGN_OR_RETURN(NetworkModel network, ResolveNetwork(sources.network, device));
  const CommModel comm(std::move(network));
  WAVEPOOL_ASSIGN_OR_RETURN(PlanReport report,
                            MakePlan(PlanContext{model, device, *compute, comm}, sources.request));
  if (const auto* table = std::get_if<LayerTableSource>(&sources.model)) {
    report.plan.layer_table = table->text;
  }
  return ResolvedPlan{std::move(model), std::move(device), comm.network(), std::move(report)};
}

}  // namespace wavepool::planner
