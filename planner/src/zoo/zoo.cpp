#include "wavepool/planner/zoo.h"

#include <array>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/planner/names.h"
#include "zoo/zoo_internal.h"

namespace wavepool::planner {
namespace {

struct ZooEntry {
  std::string_view name;
  absl::StatusOr<ModelGraph> (*build)();
};

// The order BuiltinModelNames() promises (zoo.h).
constexpr std::array<ZooEntry, 8> kZoo = {{
    {"vgg16", internal::BuildVgg16},
    {"resnet50", internal::BuildResNet50},
    {"wide_resnet101_2", internal::BuildWideResNet101_2},
    {"inception_v3", internal::BuildInceptionV3},
    {"bert_base", internal::BuildBertBase},
    {"mlp_tiny", internal::BuildMlpTiny},
    {"cnn_tiny", internal::BuildCnnTiny},
    {"branchy_tiny", internal::BuildBranchyTiny},
}};

// Names other tools use for the same models (DeepPool's profile calls WRN-101-2 "wrn101_2").
constexpr std::array<std::pair<std::string_view, std::string_view>, 1> kAliases = {{
    {"wrn101_2", "wide_resnet101_2"},
}};

}  // namespace

std::vector<std::string> BuiltinModelNames() {
  std::vector<std::string> names;
  for (const ZooEntry& entry : kZoo) names.emplace_back(entry.name);
  return names;
}

absl::StatusOr<ModelGraph> BuiltinModel(std::string_view name) {
  std::string_view canonical = name;
  for (const auto& [alias, target] : kAliases) {
    if (SameName(alias, name)) canonical = target;
  }
  for (const ZooEntry& entry : kZoo) {
    if (SameName(entry.name, canonical)) return entry.build();
  }
  std::vector<std::string> spellings = BuiltinModelNames();
  for (const auto& [alias, target] : kAliases) spellings.emplace_back(alias);
  return absl::NotFoundError(absl::StrCat(
      "unknown built-in model '", std::string(name), "'; known models: ",
      absl::StrJoin(BuiltinModelNames(), ", "), " (alias: wrn101_2)", DidYouMean(name, spellings)));
}

}  // namespace wavepool::planner
