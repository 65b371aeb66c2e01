#include "wavepool/planner/builtin_profiles.h"

#include <string>
#include <vector>

namespace wavepool::planner {
namespace {

// Zoo names and their names in the DeepPool profile.
constexpr std::pair<std::string_view, std::string_view> kProfileNames[] = {
    {"vgg16", "vgg16"}, {"wide_resnet101_2", "wrn101_2"}, {"inception_v3", "inception_v3"}};
constexpr std::string_view kProfiledDevice = "a100-40gb";

// Parsed once; the shipped text is validated by the tests, so parsing cannot fail here.
const std::vector<LayerProfile>& Profiles() {
  static const std::vector<LayerProfile>* const profiles = [] {
    absl::StatusOr<std::vector<LayerProfile>> parsed = ParseProfileCsv(BuiltinProfileCsv());
    return new std::vector<LayerProfile>(parsed.ok() ? *std::move(parsed)
                                                     : std::vector<LayerProfile>{});
  }();
  return *profiles;
}

}  // namespace

std::optional<LayerProfile> FindBuiltinProfile(std::string_view model, std::string_view device) {
  if (device != kProfiledDevice) return std::nullopt;
  for (const auto& [zoo_name, profile_name] : kProfileNames) {
    if (zoo_name != model && profile_name != model) continue;
    for (const LayerProfile& profile : Profiles()) {
      if (profile.model == profile_name) return profile;
    }
  }
  return std::nullopt;
}

}  // namespace wavepool::planner
