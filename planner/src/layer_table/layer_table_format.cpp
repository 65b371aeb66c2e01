// FormatLayerTable: writes a graph in the format ParseLayerTable reads (layer_table.h), with
// every column, so that the table rebuilds an equal graph.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "layer_table/layer_table_internal.h"
#include "wavepool/planner/layer_table.h"

namespace wavepool::planner {
namespace {

std::string ShapeText(const TensorShape& shape) { return absl::StrJoin(shape.dims, "x"); }

// The shortest decimal whose value, passed through `read`, gives back `value`. `shown` is the
// value converted for display (seconds to microseconds), and that conversion rounds: when no
// decimal of `shown` reads back, one of its nearest neighbours may (a large time, 1.8e21 us); %.17g
// of `shown` when none does.
template <typename Read>
std::string ShortestNumber(double shown, Read read) {
  for (int digits = 1; digits <= 17; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, shown);
    double parsed = 0;
    if (absl::SimpleAtod(text, &parsed) && read(parsed)) return text;
  }
  double below = shown;
  double above = shown;
  for (int step = 0; step < 8; ++step) {
    below = std::nextafter(below, -HUGE_VAL);
    above = std::nextafter(above, HUGE_VAL);
    for (double candidate : {below, above}) {
      if (read(candidate)) return absl::StrFormat("%.17g", candidate);
    }
  }
  return absl::StrFormat("%.17g", shown);
}

std::string FlopsText(double flops) {
  return ShortestNumber(flops, [flops](double parsed) { return parsed == flops; });
}

std::string TimeText(Seconds time) {
  return ShortestNumber(ToMicros(time),
                        [time](double parsed) { return Microseconds(parsed) == time; });
}

std::string PadText(int pad_h, int pad_w) {
  return pad_h == pad_w ? absl::StrCat(pad_h) : absl::StrCat(pad_h, "x", pad_w);
}

std::string WeightShapeText(const Layer& layer) {
  if (layer.kind == LayerKind::kConv2d) {
    const WindowAttrs& w = layer.window;
    return absl::StrCat(layer.out_channels, "x", layer.in_channels / w.groups, "x", w.kernel_h, "x",
                        w.kernel_w);
  }
  if (layer.kind == LayerKind::kLinear) {
    return absl::StrCat(layer.out_channels, "x", layer.in_channels);
  }
  return "";
}

std::string AttrsText(const Layer& layer) {
  const WindowAttrs& w = layer.window;
  const LayerAttrs& a = layer.attrs;
  switch (layer.kind) {
    case LayerKind::kConv2d:
      return absl::StrCat("stride=", w.stride_h, " pad=", PadText(w.pad_h, w.pad_w),
                          " bias=", a.bias ? 1 : 0, " batch_norm=", a.batch_norm ? 1 : 0,
                          " relu=", a.relu ? 1 : 0);
    case LayerKind::kLinear:
      return absl::StrCat("bias=", a.bias ? 1 : 0);
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
      return absl::StrCat("kernel=", w.kernel_h, " stride=", w.stride_h, " pad=", w.pad_h);
    case LayerKind::kResNetBottleneck:
      return absl::StrCat("planes=", a.planes, " stride=", w.stride_h,
                          " base_width=", a.base_width);
    case LayerKind::kEmbedding:
      return absl::StrCat("vocab=", layer.in_channels, " positions=", a.max_positions,
                          " types=", a.type_vocab);
    case LayerKind::kTransformerAttention:
      return absl::StrCat("heads=", a.heads);
    case LayerKind::kTransformerFeedForward:
      return absl::StrCat("intermediate=", a.intermediate);
    default:
      return "";
  }
}

// "opaque:<type>" for an opaque layer with a type name of its own, else the kind's name.
std::string TypeText(const Layer& layer) {
  const std::string_view kind = LayerKindName(layer.kind);
  if (layer.kind != LayerKind::kOpaque || layer.opaque_type.empty() || layer.opaque_type == kind) {
    return std::string(kind);
  }
  return std::string(internal::kOpaquePrefix) + layer.opaque_type;
}

std::string RowText(const ModelGraph& model, const Layer& layer) {
  std::vector<std::string> inputs;
  for (LayerId in : layer.inputs) inputs.push_back(model.layer(in).name);
  const bool opaque = layer.kind == LayerKind::kOpaque;
  // The order of internal::kLayerTableColumns.
  const std::vector<std::string> fields = {
      layer.name,
      TypeText(layer),
      absl::StrJoin(inputs, ";"),
      ShapeText(layer.input),
      WeightShapeText(layer),
      ShapeText(layer.output),
      AttrsText(layer),
      absl::StrCat(layer.params),
      opaque ? FlopsText(layer.forward_flops) : "",
      opaque ? FlopsText(layer.backward_flops) : "",
      layer.measured_time_per_sample ? TimeText(*layer.measured_time_per_sample) : "",
  };
  return absl::StrJoin(fields, ",");
}

}  // namespace

std::string FormatLayerTable(const ModelGraph& model) {
  std::string text = absl::StrCat("# wavepool layer table: model ", model.name(), ", input ",
                                  ShapeText(model.input_shape()), ", ", model.size(), " layers\n",
                                  internal::JoinNames(internal::kLayerTableColumns, ","), "\n");
  for (const Layer& layer : model.layers()) absl::StrAppend(&text, RowText(model, layer), "\n");
  return text;
}

}  // namespace wavepool::planner
