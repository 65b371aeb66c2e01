#include "model_loading.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/planner/compute_cost.h"

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
  absl::StatusOr<std::string> text = ReadFile(flags.layer_table);
  if (!text.ok()) return text.status();
  return planner::LayerTableSource{std::filesystem::path(flags.layer_table).stem().string(),
                                   *std::move(text), flags.layer_table};
}

absl::StatusOr<planner::ComputeSource> ComputeSourceFor(const PlanFlags& flags) {
  absl::StatusOr<planner::Precision> precision = ParsePrecision(flags.precision);
  if (!precision.ok()) return precision.status();
  if (flags.analytic && !flags.profile.empty()) {
    return absl::InvalidArgumentError("give at most one of --analytic and --profile");
  }
  planner::ComputeSource source;
  source.precision = *precision;
  if (flags.analytic) {
    source.times = planner::AnalyticSource{};
  } else if (flags.profile.empty()) {
    source.times = planner::ShippedProfileSource{""};
  } else {
    absl::StatusOr<std::string> text = ReadFile(flags.profile);
    if (!text.ok()) return text.status();
    source.times = planner::MeasuredProfileSource{*std::move(text), flags.profile};
  }
  return source;
}

absl::StatusOr<planner::NetworkSource> NetworkSourceFor(const PlanFlags& flags) {
  if (flags.network.empty()) return planner::DefaultNetworkSource{};
  if (NamesAPreset(flags.network)) return planner::NetworkPresetSource{flags.network, "--network"};
  absl::StatusOr<std::string> text = ReadFile(flags.network);
  if (!text.ok()) return text.status();
  return planner::NetworkFileSource{*std::move(text), flags.network};
}

absl::StatusOr<planner::ModelGraph> LoadModel(const PlanFlags& flags) {
  absl::StatusOr<planner::ModelSource> source = ModelSourceFor(flags);
  if (!source.ok()) return source.status();
  return planner::ResolveModel(*source);
}

}  // namespace wavepool::cli
