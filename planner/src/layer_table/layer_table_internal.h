// Pieces of the layer-table format shared by its reader (layer_table.cpp) and writer
// (layer_table_format.cpp).
#ifndef WAVEPOOL_PLANNER_SRC_LAYER_TABLE_LAYER_TABLE_INTERNAL_H_
#define WAVEPOOL_PLANNER_SRC_LAYER_TABLE_LAYER_TABLE_INTERNAL_H_

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "wavepool/planner/model.h"

namespace wavepool::planner::internal {

// Every column, in the order FormatLayerTable writes them.
inline constexpr std::array<std::string_view, 11> kLayerTableColumns = {
    "name",  "type",   "inputs",        "input_shape",    "weight_shape",      "output_shape",
    "attrs", "params", "forward_flops", "backward_flops", "time_us_per_sample"};
inline constexpr std::array<std::string_view, 5> kRequiredLayerTableColumns = {
    "name", "type", "inputs", "input_shape", "output_shape"};

// The `type` of an opaque layer is "opaque" or this prefix and its type name ("opaque:my_head").
inline constexpr std::string_view kOpaquePrefix = "opaque:";

// Every layer kind a `type` may name, in LayerKind order, without "opaque".
inline std::vector<std::string> KnownLayerTypes() {
  std::vector<std::string> names;
  for (int k = 0; k < static_cast<int>(LayerKind::kOpaque); ++k) {
    names.emplace_back(LayerKindName(static_cast<LayerKind>(k)));
  }
  return names;
}

// The attrs keys a kind accepts (layer_table.h).
inline std::vector<std::string_view> AttrKeysOf(LayerKind kind) {
  switch (kind) {
    case LayerKind::kConv2d:
      return {"stride", "pad", "bias", "batch_norm", "relu"};
    case LayerKind::kLinear:
      return {"bias"};
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
      return {"kernel", "stride", "pad"};
    case LayerKind::kResNetBottleneck:
      return {"planes", "stride", "base_width"};
    case LayerKind::kEmbedding:
      return {"vocab", "positions", "types"};
    case LayerKind::kTransformerAttention:
      return {"heads"};
    case LayerKind::kTransformerFeedForward:
      return {"intermediate"};
    default:
      return {};
  }
}

// "a, b, c" (absl::StrJoin does not take std::string_view with this abseil).
template <typename Names>
std::string JoinNames(const Names& names, std::string_view separator = ", ") {
  std::string joined;
  for (std::string_view name : names) {
    if (!joined.empty()) joined.append(separator);
    joined.append(name);
  }
  return joined;
}

}  // namespace wavepool::planner::internal

#endif  // WAVEPOOL_PLANNER_SRC_LAYER_TABLE_LAYER_TABLE_INTERNAL_H_
