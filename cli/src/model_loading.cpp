#include "model_loading.h"

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "binary_file.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/compute_cost.h"

namespace wavepool::cli {

namespace {

// --precision's value.
absl::StatusOr<planner::Precision> ParsePrecision(const std::string& value) {
  for (planner::Precision p :
       {planner::Precision::kMixed, planner::Precision::kTf32, planner::Precision::kFp32}) {
    if (value == planner::PrecisionName(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--precision: must be mixed, tf32 or fp32, got ", value));
}

// A preset's name has no '/' or '.' (which every file path has but one in the working directory
// without an extension: give that one as ./NAME).
bool NamesAPreset(const std::string& value) {
  return value.find_first_of("/.") == std::string::npos && !std::filesystem::exists(value);
}

}  // namespace

absl::StatusOr<planner::ModelSource> ModelSourceFor(const PlanFlags& flags) {
  if (flags.model.empty() == flags.layer_table.empty()) {
    return absl::InvalidArgumentError("give exactly one of --model and --layer-table");
  }
  // BuiltinModel's NotFound quotes the name: no prefix needed.
  if (!flags.model.empty()) return planner::BuiltinModelSource{flags.model, ""};
  WAVEPOOL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(flags.layer_table));
  return planner::LayerTableSource{std::filesystem::path(flags.layer_table).stem().string(),
                                   std::move(text), flags.layer_table};
}

absl::StatusOr<planner::ComputeSource> ComputeSourceFor(const PlanFlags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(planner::Precision precision, ParsePrecision(flags.precision));
  if (flags.analytic && !flags.profile.empty()) {
    return absl::InvalidArgumentError("give at most one of --analytic and --profile");
  }
  planner::ComputeSource source;
  source.precision = precision;
  if (flags.analytic) {
    source.times = planner::AnalyticSource{};
  } else if (flags.profile.empty()) {
    source.times = planner::ShippedProfileSource{""};
  } else {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(flags.profile));
    source.times = planner::MeasuredProfileSource{std::move(text), flags.profile};
  }
  return source;
}

absl::StatusOr<planner::NetworkSource> NetworkSourceFor(const PlanFlags& flags) {
  if (flags.network.empty()) return planner::DefaultNetworkSource{};
  if (NamesAPreset(flags.network)) return planner::NetworkPresetSource{flags.network, "--network"};
  WAVEPOOL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(flags.network));
  return planner::NetworkFileSource{std::move(text), flags.network};
}

absl::StatusOr<planner::ModelGraph> LoadModel(const PlanFlags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(planner::ModelSource source, ModelSourceFor(flags));
  return planner::ResolveModel(source);
}

}  // namespace wavepool::cli
