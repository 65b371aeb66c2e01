#include "model_loading.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/planner/compute_source.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::cli {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string reason = std::strerror(errno);
    return errno == ENOENT ? absl::NotFoundError(absl::StrCat("open ", path, ": ", reason))
                           : absl::PermissionDeniedError(absl::StrCat("open ", path, ": ", reason));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("read ", path, ": failed"));
  return text.str();
}

absl::StatusOr<planner::ModelGraph> LoadModel(const PlanFlags& flags,
                                              std::string* layer_table_text) {
  if (flags.model.empty() == flags.layer_table.empty()) {
    return absl::InvalidArgumentError("give exactly one of --model and --layer-table");
  }
  if (!flags.model.empty()) return planner::BuiltinModel(flags.model);
  absl::StatusOr<std::string> text = ReadFile(flags.layer_table);
  if (!text.ok()) return text.status();
  const std::string name = std::filesystem::path(flags.layer_table).stem().string();
  absl::StatusOr<planner::ModelGraph> model = planner::ParseLayerTable(name, *text);
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.layer_table, ": ", model.status().message()));
  }
  if (layer_table_text != nullptr) *layer_table_text = *std::move(text);
  return model;
}

absl::StatusOr<planner::ComputeCostModelPtr> LoadComputeCost(const PlanFlags& flags,
                                                             const planner::ModelGraph& model,
                                                             const planner::DeviceSpec& device) {
  std::optional<planner::Precision> precision;
  for (planner::Precision p :
       {planner::Precision::kMixed, planner::Precision::kTf32, planner::Precision::kFp32}) {
    if (flags.precision == planner::PrecisionName(p)) precision = p;
  }
  if (!precision) {
    return absl::InvalidArgumentError(
        absl::StrCat("--precision: must be mixed, tf32 or fp32, got ", flags.precision));
  }
  if (flags.analytic && !flags.profile.empty()) {
    return absl::InvalidArgumentError("give at most one of --analytic and --profile");
  }
  if (flags.analytic) return planner::MakeAnalyticCostModel(device, *precision);
  std::optional<planner::LayerProfile> profile;
  if (!flags.profile.empty()) {
    absl::StatusOr<std::string> text = ReadFile(flags.profile);
    if (!text.ok()) return text.status();
    absl::StatusOr<planner::LayerProfile> picked = planner::PickProfile(*text, model);
    if (!picked.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flags.profile, ": ", picked.status().message()));
    }
    profile = *std::move(picked);
  }
  absl::StatusOr<planner::ComputeCostModelPtr> compute =
      planner::ChooseComputeCost(profile, model, device, *precision);
  if (!compute.ok() && profile.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.profile, ": ", compute.status().message()));
  }
  return compute;
}

// A preset's name has no '/' or '.' (which every file path has but one in the working directory
// without an extension: give that one as ./NAME).
bool NamesAPreset(const std::string& value) {
  return value.find_first_of("/.") == std::string::npos && !std::filesystem::exists(value);
}

absl::StatusOr<planner::NetworkModel> LoadNetwork(const PlanFlags& flags,
                                                  const planner::DeviceSpec& device) {
  if (flags.network.empty()) return planner::DefaultNetworkModel(device);
  if (NamesAPreset(flags.network)) {
    absl::StatusOr<planner::NetworkModel> preset =
        planner::FindNetworkPreset(flags.network, device);
    if (!preset.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--network: ", preset.status().message(), " (or give a JSON or YAML file)"));
    }
    return preset;
  }
  absl::StatusOr<std::string> text = ReadFile(flags.network);
  if (!text.ok()) return text.status();
  absl::StatusOr<planner::NetworkModel> network = planner::ParseNetworkModel(*text);
  if (!network.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.network, ": ", network.status().message()));
  }
  return network;
}

}  // namespace wavepool::cli
