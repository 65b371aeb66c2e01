#include "model_loading.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/profile.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::cli {
namespace {

// True when a profile's model name is `model`'s name or one of its zoo aliases: the shipped
// DeepPool profile calls wide_resnet101_2 "wrn101_2" (zoo.h).
bool NamesModel(const std::string& profile_model, const std::string& model) {
  if (profile_model == model) return true;
  absl::StatusOr<planner::ModelGraph> builtin = planner::BuiltinModel(profile_model);
  return builtin.ok() && builtin->name() == model;
}

}  // namespace

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

absl::StatusOr<planner::ModelGraph> LoadModel(const PlanFlags& flags) {
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
  planner::ComputeCostModelPtr analytic = planner::MakeAnalyticCostModel(device, *precision);
  if (flags.analytic) return analytic;
  std::optional<planner::LayerProfile> profile;
  if (!flags.profile.empty()) {
    absl::StatusOr<std::string> text = ReadFile(flags.profile);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<planner::LayerProfile>> all = planner::ParseProfileCsv(*text);
    if (!all.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(flags.profile, ": ", all.status().message()));
    }
    std::vector<std::string> names;
    for (planner::LayerProfile& candidate : *all) {
      names.push_back(candidate.model);
      if (all->size() == 1 || NamesModel(candidate.model, model.name())) {
        profile = std::move(candidate);
      }
    }
    if (!profile) {
      return absl::InvalidArgumentError(absl::StrCat(flags.profile, ": no profile of model ",
                                                     model.name(), " (it has ",
                                                     absl::StrJoin(names, ", "), ")"));
    }
  } else {
    profile = planner::FindBuiltinProfile(model.name(), device.name);
  }
  if (!profile) return analytic;
  absl::StatusOr<planner::ComputeCostModelPtr> profiled =
      planner::MakeProfiledCostModel(*profile, model, std::move(analytic));
  if (!profiled.ok() && !flags.profile.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.profile, ": ", profiled.status().message()));
  }
  return profiled;
}

absl::StatusOr<planner::NetworkModel> LoadNetwork(const PlanFlags& flags,
                                                  const planner::DeviceSpec& device) {
  if (flags.network.empty()) return planner::DefaultNetworkModel(device);
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
