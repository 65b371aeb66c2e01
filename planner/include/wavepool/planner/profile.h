// Measured layer profiles: per-layer forward/backward times at a few per-GPU batch sizes, bound to
// a model graph and interpolated for unmeasured batches.
//
// The file format is DeepPool's profile CSV (data/profiles/deeppool_a100_layer_profiles.csv):
//   model,per_gpu_batch,layer_idx,name,params_json,input_dim,total_ms,fw_us,bw_us
// one row per (model, per-GPU batch, profiled layer).
#ifndef WAVEPOOL_PLANNER_PROFILE_H_
#define WAVEPOOL_PLANNER_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {

// What identifies a profiled layer, so that profile rows can be matched to graph layers.
struct LayerSignature {
  std::string kind;  // the profile's layer type: conv2d, linear, ReLU2d, maxPool2d, ...
  TensorShape input;
  std::int64_t in_channels = 0, out_channels = 0;
  int kernel_h = 0, kernel_w = 0, stride = 0;

  bool operator==(const LayerSignature& other) const;
  std::string ToString() const;
};

struct ProfiledLayer {
  int index = 0;  // the profile's layer_idx
  LayerSignature signature;
  std::map<std::int64_t, LayerTime> by_batch;  // per-GPU batch -> measured time
};

struct LayerProfile {
  std::string model;
  std::vector<ProfiledLayer> layers;  // by index
};

// Parses every model in a profile CSV. InvalidArgument names the line and column of a bad row.
absl::StatusOr<std::vector<LayerProfile>> ParseProfileCsv(std::string_view text);

// The signature a graph layer would have in a profile (kOpaque layers have none).
std::optional<LayerSignature> SignatureOf(const Layer& layer);

// Binds `profile` to `model`: profiled layers are matched, in order, to graph layers with the
// same signature; graph layers without a row (joins, layers the profile skipped) are costed by
// `fallback`. Times at unmeasured batches are interpolated linearly between the two nearest
// measured batches, extrapolated from the largest (time proportional to batch) above it, and
// the smallest batch's time below it. InvalidArgument when a profile row matches no remaining
// layer, naming the row and how many rows matched before it.
absl::StatusOr<ComputeCostModelPtr> MakeProfiledCostModel(const LayerProfile& profile,
                                                          const ModelGraph& model,
                                                          ComputeCostModelPtr fallback);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_PROFILE_H_
