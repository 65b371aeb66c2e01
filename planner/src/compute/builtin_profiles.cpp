#include "wavepool/planner/builtin_profiles.h"

#include <string>
#include <utility>
#include <vector>

#include "compute/builtin_profile_data.h"

namespace wavepool::planner {
namespace {

// Zoo names and their names in the profiles (the H100 profile keeps DeepPool's names).
constexpr std::pair<std::string_view, std::string_view> kProfileNames[] = {
    {"vgg16", "vgg16"}, {"wide_resnet101_2", "wrn101_2"}, {"inception_v3", "inception_v3"}};

struct ParsedFile {
  std::string_view device;
  std::vector<LayerProfile> profiles;
};

// Parsed once; the shipped texts are validated by the tests, so parsing cannot fail here.
const std::vector<ParsedFile>& Parsed() {
  static const std::vector<ParsedFile>* const parsed = [] {
    auto* files = new std::vector<ParsedFile>();
    for (const BuiltinProfileFile& file : BuiltinProfileFiles()) {
      absl::StatusOr<std::vector<LayerProfile>> profiles = ParseProfileCsv(file.csv);
      files->push_back(
          {file.device, profiles.ok() ? *std::move(profiles) : std::vector<LayerProfile>{}});
    }
    return files;
  }();
  return *parsed;
}

}  // namespace

const std::vector<BuiltinProfileFile>& BuiltinProfileFiles() {
  static const std::vector<BuiltinProfileFile>* const files = new std::vector<BuiltinProfileFile>{
      {"a100-40gb", "data/profiles/deeppool_a100_layer_profiles.csv",
       internal::DeepPoolA100ProfileCsv()},
      {"h100", "data/profiles/h100_layer_profiles.csv", internal::H100ProfileCsv()},
  };
  return *files;
}

std::optional<LayerProfile> FindBuiltinProfile(std::string_view model, std::string_view device) {
  for (const ParsedFile& file : Parsed()) {
    if (file.device != device) continue;
    for (const auto& [zoo_name, profile_name] : kProfileNames) {
      if (zoo_name != model && profile_name != model) continue;
      for (const LayerProfile& profile : file.profiles) {
        if (profile.model == profile_name) return profile;
      }
    }
  }
  return std::nullopt;
}

}  // namespace wavepool::planner
