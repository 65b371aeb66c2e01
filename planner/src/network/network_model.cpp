// ParseNetworkModel: JSON or YAML network files into a validated NetworkModel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/field_path.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/comm.h"
#include "yaml-cpp/yaml.h"

namespace wavepool::planner {
namespace {

using api::FieldPath;
using nlohmann::json;

constexpr Bytes kDefaultRingThreshold = 1 << 20;

// A YAML node as JSON. Plain scalars become numbers or booleans when they read as one; quoted
// scalars stay strings.
absl::StatusOr<json> YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Sequence: {
      json array = json::array();
      for (const YAML::Node& item : node) {
        WAVEPOOL_ASSIGN_OR_RETURN(json value, YamlToJson(item));
        array.push_back(std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "network model: line ", entry.first.Mark().line + 1, ": keys must be strings"));
        }
        WAVEPOOL_ASSIGN_OR_RETURN(json value, YamlToJson(entry.second));
        object[entry.first.Scalar()] = std::move(value);
      }
      return object;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return json(text);  // quoted
  std::int64_t integer = 0;
  if (YAML::convert<std::int64_t>::decode(node, integer)) return json(integer);
  double real = 0;
  if (YAML::convert<double>::decode(node, real)) return json(real);
  bool boolean = false;
  if (YAML::convert<bool>::decode(node, boolean)) return json(boolean);
  return json(text);
}

absl::StatusOr<json> ParseDocument(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return absl::InvalidArgumentError("network model: the document is empty");
  }
  if (text[first] == '{') {
    try {
      return json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat("network model: invalid JSON: ", e.what()));
    }
  }
  try {
    return YamlToJson(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("network model: invalid YAML at line ", e.mark.line + 1, ": ", e.msg));
  }
}

absl::Status CheckKnownFields(const json& object, const FieldPath& path,
                              const std::vector<std::string>& known) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return path.Child(key).Invalid(
          absl::StrCat("unknown field; known fields: ", absl::StrJoin(known, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const json*> RequireObject(const json& parent, std::string_view key,
                                          const FieldPath& path) {
  auto it = parent.find(std::string(key));
  if (it == parent.end()) return path.Invalid("is required");
  if (!it->is_object()) return path.Invalid("must be a mapping");
  return &*it;
}

// A number field; nullopt when absent.
absl::StatusOr<std::optional<double>> OptionalNumber(const json& object, std::string_view key,
                                                     const FieldPath& path) {
  auto it = object.find(std::string(key));
  if (it == object.end()) return std::optional<double>();
  if (!it->is_number()) return path.Invalid(absl::StrCat("must be a number, got ", it->dump()));
  const double value = it->get<double>();
  if (!std::isfinite(value)) return path.Invalid("must be finite");
  return std::optional<double>(value);
}

absl::StatusOr<std::optional<std::int64_t>> OptionalInteger(const json& object,
                                                            std::string_view key,
                                                            const FieldPath& path) {
  auto it = object.find(std::string(key));
  if (it == object.end()) return std::optional<std::int64_t>();
  if (!it->is_number_integer()) {
    return path.Invalid(absl::StrCat("must be an integer, got ", it->dump()));
  }
  return std::optional<std::int64_t>(it->get<std::int64_t>());
}

absl::StatusOr<int> OptionalCount(const json& object, std::string_view key, const FieldPath& path,
                                  int fallback) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<std::int64_t> value, OptionalInteger(object, key, path));
  if (!value.has_value()) return fallback;
  if (*value < 1 || *value > std::numeric_limits<int>::max()) {
    return path.Invalid(absl::StrCat("must be >= 1, got ", *value));
  }
  return static_cast<int>(*value);
}

absl::StatusOr<Link> ParseLink(const json& parent, std::string_view key, const FieldPath& path) {
  WAVEPOOL_ASSIGN_OR_RETURN(const json* object, RequireObject(parent, key, path));
  WAVEPOOL_RETURN_IF_ERROR(CheckKnownFields(*object, path, {"alphaSeconds", "bytesPerSecond"}));
  const FieldPath alpha_path = path.Child("alphaSeconds");
  const FieldPath bandwidth_path = path.Child("bytesPerSecond");
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> alpha,
                            OptionalNumber(*object, "alphaSeconds", alpha_path));
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> bandwidth,
                            OptionalNumber(*object, "bytesPerSecond", bandwidth_path));
  if (!alpha.has_value()) return alpha_path.Invalid("is required");
  if (!bandwidth.has_value()) return bandwidth_path.Invalid("is required");
  if (*alpha < 0) return alpha_path.Invalid(absl::StrCat("must be >= 0, got ", *alpha));
  if (*bandwidth <= 0) {
    return bandwidth_path.Invalid(absl::StrCat("must be > 0, got ", *bandwidth));
  }
  return Link{Seconds(*alpha), 1.0 / *bandwidth};
}

absl::StatusOr<std::vector<AlphaStep>> ParseSteps(const json& root) {
  const FieldPath path("interNodeAlphaSteps");
  auto it = root.find("interNodeAlphaSteps");
  if (it == root.end() || it->is_null()) return std::vector<AlphaStep>();
  if (!it->is_array()) return path.Invalid("must be a list of {upToGpus, alphaSeconds}");
  std::vector<AlphaStep> steps;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& item = (*it)[i];
    const FieldPath at = path.Index(i);
    if (!item.is_object()) return at.Invalid("must be a mapping {upToGpus, alphaSeconds}");
    WAVEPOOL_RETURN_IF_ERROR(CheckKnownFields(item, at, {"upToGpus", "alphaSeconds"}));
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<std::int64_t> up_to,
                              OptionalInteger(item, "upToGpus", at.Child("upToGpus")));
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> alpha,
                              OptionalNumber(item, "alphaSeconds", at.Child("alphaSeconds")));
    if (!up_to.has_value()) return at.Child("upToGpus").Invalid("is required");
    if (!alpha.has_value()) return at.Child("alphaSeconds").Invalid("is required");
    if (*up_to > std::numeric_limits<int>::max()) {
      return at.Child("upToGpus").Invalid(absl::StrCat("is too large, got ", *up_to));
    }
    steps.push_back({static_cast<int>(*up_to), Seconds(*alpha)});
  }
  return steps;
}

absl::Status ParseScalars(const json& root, NetworkModel& network) {
  if (auto it = root.find("name"); it != root.end()) {
    if (!it->is_string()) return FieldPath("name").Invalid("must be a string");
    network.name = it->get<std::string>();
  }
  WAVEPOOL_ASSIGN_OR_RETURN(int gpus,
                            OptionalCount(root, "gpusPerNode", FieldPath("gpusPerNode"), 8));
  network.gpus_per_node = gpus;
  WAVEPOOL_ASSIGN_OR_RETURN(int nics,
                            OptionalCount(root, "nicsPerNode", FieldPath("nicsPerNode"), gpus));
  network.nics_per_node = nics;
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> contention,
                            OptionalNumber(root, "contention", FieldPath("contention")));
  network.contention = contention.value_or(1.0);
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::optional<std::int64_t> threshold,
      OptionalInteger(root, "ringThresholdBytes", FieldPath("ringThresholdBytes")));
  network.ring_threshold_bytes = threshold.value_or(kDefaultRingThreshold);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NetworkModel> ParseNetworkModel(std::string_view text) {
  WAVEPOOL_ASSIGN_OR_RETURN(json root, ParseDocument(text));
  if (!root.is_object()) {
    return absl::InvalidArgumentError("network model: the document must be a mapping");
  }
  WAVEPOOL_RETURN_IF_ERROR(
      CheckKnownFields(root, FieldPath(),
                       {"name", "gpusPerNode", "nicsPerNode", "contention", "ringThresholdBytes",
                        "intraNode", "interNode", "interNodeAlphaSteps"}));
  NetworkModel network;
  network.name = "network file";
  WAVEPOOL_RETURN_IF_ERROR(ParseScalars(root, network));
  WAVEPOOL_ASSIGN_OR_RETURN(Link intra, ParseLink(root, "intraNode", FieldPath("intraNode")));
  WAVEPOOL_ASSIGN_OR_RETURN(Link inter, ParseLink(root, "interNode", FieldPath("interNode")));
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<AlphaStep> steps, ParseSteps(root));
  network.intra_node = intra;
  network.inter_node = inter;
  network.inter_node_alpha_steps = std::move(steps);
  WAVEPOOL_RETURN_IF_ERROR(ValidateNetworkModel(network));
  return network;
}

}  // namespace wavepool::planner
