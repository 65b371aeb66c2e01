// Layer tables: models described layer by layer in a text file, so that measured or foreign
// models can be planned. The format (CSV with a header) is documented in docs/planner.md:
//
//   name,type,inputs,input_shape,weight_shape,output_shape,time_us_per_sample
//   conv1,conv2d,,3x224x224,64x3x7x7,64x112x112,41.5
//   relu1,relu,conv1,64x112x112,,64x112x112,
//
// `inputs` lists predecessor names separated by ';' (empty: the model input), shapes are per
// sample with 'x' between dims, `weight_shape` may be empty, and the measured time is optional.
#ifndef WAVEPOOL_PLANNER_LAYER_TABLE_H_
#define WAVEPOOL_PLANNER_LAYER_TABLE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {

// Parses a layer table's text. Errors are InvalidArgument and name the line and the column,
// e.g. "layer table line 4, column output_shape: dimension 'x0' is not a positive integer".
absl::StatusOr<ModelGraph> ParseLayerTable(std::string_view model_name, std::string_view text);

// Writes `model` as a layer table that ParseLayerTable reads back to an equal graph.
std::string FormatLayerTable(const ModelGraph& model);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_LAYER_TABLE_H_
