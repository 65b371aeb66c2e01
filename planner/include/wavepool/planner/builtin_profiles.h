// Measured profiles that ship inside wavepool: DeepPool's A100 layer profiles of vgg16,
// wide_resnet101_2 and inception_v3 (data/profiles/deeppool_a100_layer_profiles.csv, compiled in
// so that planning needs no data files at run time).
#ifndef WAVEPOOL_PLANNER_BUILTIN_PROFILES_H_
#define WAVEPOOL_PLANNER_BUILTIN_PROFILES_H_

#include <optional>
#include <string_view>

#include "wavepool/planner/profile.h"

namespace wavepool::planner {

// The text of the shipped profile CSV.
std::string_view BuiltinProfileCsv();

// The profile measured for the zoo model `model` on the catalog device `device` (canonical name,
// e.g. "a100-40gb"), if wavepool ships one.
std::optional<LayerProfile> FindBuiltinProfile(std::string_view model, std::string_view device);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_BUILTIN_PROFILES_H_
