// Layer tables: models described layer by layer in a text file, so that measured or foreign
// models can be planned (docs/planner.md, "Layer tables", has a full example).
//
// A table is CSV text. Blank lines and lines starting with '#' are ignored; the first other line
// is the header naming the columns, in any order; then one row per layer, in a topological order
// (every input defined on an earlier row). Fields may be quoted (RFC 4180), as spreadsheets export
// them; no valid field holds a comma.
//
//   name,type,inputs,input_shape,weight_shape,output_shape,attrs,params,time_us_per_sample
//   conv1,conv2d,,3x224x224,64x3x7x7,64x112x112,stride=2 pad=3 bias=0 batch_norm=1 relu=1,9536,
//   pool1,maxpool2d,conv1,64x112x112,,64x56x56,kernel=3 stride=2 pad=1,,12.5
//   head,opaque:my_head,pool1,64x56x56,1000x200704,1000,,,41.5
//
// Columns (name, type, inputs, input_shape and output_shape are required):
//   name          unique, non-empty; no ',', ';' or '"'.
//   type          a LayerKindName (conv2d, linear, relu, maxpool2d, concat, ...; any case), or
//                 "opaque:<name>" ("opaque" alone: no name of its own): an opaque layer, whose
//                 costs the row gives and which keeps <name> (Layer::opaque_type). Anything else is
//                 an error naming the closest known types, so that a typo is not taken for an
//                 opaque layer.
//   inputs        predecessor names separated by ';'; empty: the layer reads the model input.
//   input_shape   per sample, dims separated by 'x' ("3x224x224", "4096"). Must equal the first
//                 input's output shape; rows without inputs define the model input and agree on it.
//   output_shape  per sample. For a known type it must equal what ModelBuilder derives.
//   weight_shape  conv2d (required): Cout x Cin/groups x kh x kw, so groups = Cin / the 2nd dim;
//                 linear (required): out x in; opaque (optional): params = the product (no bias);
//                 empty for every other type.
//   attrs         space-separated key=value settings the shapes do not give (defaults in ()):
//                   conv2d     stride (1), pad (0; "P" or "PHxPW"), bias (1, as torch.nn.Conv2d),
//                              batch_norm (0), relu (0): a fused BatchNorm / ReLU after the conv
//                   linear     bias (1)
//                   maxpool2d, avgpool2d   kernel (required), stride (= kernel), pad (0)
//                   resnet_bottleneck      planes (required), stride (1), base_width (64)
//                   embedding  vocab, positions (required), types (0); hidden = the output's
//                              last dim
//                   transformer_attention    heads (required)
//                   transformer_feedforward  intermediate (required)
//                 Booleans are 0, 1, false or true. Other types take no attrs.
//   params        trainable parameters. Known types: optional, checked against the derived count.
//                 Opaque: the count (default: the weight_shape product, else 0).
//   forward_flops, backward_flops   per sample; opaque layers only (known types derive theirs
//                 from the shapes, model_builder.h). Forward defaults to 0, backward to
//                 2 x forward when the layer has parameters, else 1 x forward.
//   time_us_per_sample   optional measured forward+backward time of one sample, in
//                 microseconds (>= 0); the compute cost models prefer it to FLOPs.
#ifndef WAVEPOOL_PLANNER_LAYER_TABLE_H_
#define WAVEPOOL_PLANNER_LAYER_TABLE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {

// Parses a layer table's text into a graph named `model_name`. Errors are InvalidArgument and name
// the line and the column, e.g.
//   "layer table line 4, column output_shape: dimension 'x0' is not a positive integer",
//   "layer table line 3, column type: unknown layer type 'rleu'; known types: ...; did you mean
//   'relu'?";
// a geometry error ModelBuilder finds (a kernel larger than its padded input) names the line and
// the layer, as does a size that would overflow: an attribute or shape whose parameter or
// activation count passes 2^63 / kBytesPerItem items is named, e.g. "layer table line 2: model m,
// layer ff (transformer_feedforward): intermediate 4611686018427387904 on input [128,768] makes
// its parameters or activations exceed 2305843009213693951 items (their bytes would overflow 64
// bits)".
absl::StatusOr<ModelGraph> ParseLayerTable(std::string_view model_name, std::string_view text);

// Writes `model` as a layer table with every column (a '#' comment line first), an opaque layer's
// type as "opaque:<opaque_type>" ("opaque" when it has none of its own). For a graph built
// by ModelBuilder or ParseLayerTable, ParseLayerTable(model.name(), text) returns an equal graph
// (ModelGraph::operator==); measured times are written with the fewest digits that read back to
// the same value.
std::string FormatLayerTable(const ModelGraph& model);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_LAYER_TABLE_H_
