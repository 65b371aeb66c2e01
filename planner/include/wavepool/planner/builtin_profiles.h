// Measured profiles that ship inside wavepool, compiled in so that planning needs no data files at
// run time (data/README.md describes them):
//   a100-40gb: DeepPool's A100 layer profiles (data/profiles/deeppool_a100_layer_profiles.csv);
//   h100:      H100 layer profiles in mixed precision, measured with
//              tools/measure_layer_profile.py (data/profiles/h100_layer_profiles.csv).
// Each covers vgg16, wide_resnet101_2 and inception_v3.
#ifndef WAVEPOOL_PLANNER_BUILTIN_PROFILES_H_
#define WAVEPOOL_PLANNER_BUILTIN_PROFILES_H_

#include <optional>
#include <string_view>
#include <vector>

#include "wavepool/planner/profile.h"

namespace wavepool::planner {

// One shipped profile CSV (profile.h gives the format).
struct BuiltinProfileFile {
  std::string_view device;     // canonical catalog name of the GPU it was measured on
  std::string_view data_path;  // its source, relative to the repository root
  std::string_view csv;        // its text, with "\n" line breaks
};

// Every shipped profile file, one per device, in catalog order. The texts live as long as the
// program.
const std::vector<BuiltinProfileFile>& BuiltinProfileFiles();

// The profile measured for the zoo model `model` (its zoo name or its name in the profile, e.g.
// "wrn101_2") on the catalog device `device` (canonical name, e.g. "a100-40gb"), if wavepool
// ships one.
std::optional<LayerProfile> FindBuiltinProfile(std::string_view model, std::string_view device);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_BUILTIN_PROFILES_H_
