// ModelBuilder: plumbing (names, ids, errors) and the simple layers. The composite layers
// (bottleneck, transformer blocks, loss, opaque) are in model_builder_composite.cpp.
#include "wavepool/planner/model_builder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/model_builder_internal.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

using internal::CheckedItems;
using internal::kGeluFlopsPerItem;
using internal::kMaxItems;
using internal::kNormFlopsPerItem;
using internal::WindowOutput;

// {C,H,W} -> C; otherwise the last dim ({T,D} -> D, {N} -> N).
std::int64_t ChannelsOf(const TensorShape& shape) {
  if (shape.dims.empty()) return 0;
  return shape.dims.size() == 3 ? shape.dims[0] : shape.dims.back();
}

bool IsInPlace(LayerKind kind) {
  return kind == LayerKind::kReLU || kind == LayerKind::kGELU || kind == LayerKind::kBatchNorm2d ||
         kind == LayerKind::kDropout;
}

bool HasPositiveDims(const TensorShape& shape) {
  return !shape.dims.empty() &&
         std::all_of(shape.dims.begin(), shape.dims.end(), [](std::int64_t d) { return d > 0; });
}

double D(std::int64_t value) { return static_cast<double>(value); }

// Sum over the adaptive windows' lengths along one dim (PyTorch's start/end index rule: window i
// spans [floor(i*n/out), ceil((i+1)*n/out))). Window i ends one past where window i+1 starts
// unless out divides (i+1)*n, which happens for gcd(n, out) of the out windows, so the sum is
// n + out - gcd(n, out): no loop over a user-chosen out, and no product that can overflow.
// REQUIRES: n >= 1, out >= 1.
std::int64_t AdaptiveSpan(std::int64_t n, std::int64_t out) { return n + out - std::gcd(n, out); }

}  // namespace

ModelBuilder::ModelBuilder(std::string model_name, TensorShape input_shape)
    : name_(std::move(model_name)), input_shape_(std::move(input_shape)) {
  if (!HasPositiveDims(input_shape_)) {
    first_error_ = absl::InvalidArgumentError(
        absl::StrCat("model ", name_, ": input shape ", input_shape_.ToString(),
                     " must have at least one dim, all positive"));
    return;
  }
  CheckedItems items;
  items.Elements(input_shape_.dims, absl::StrCat("input shape ", input_shape_.ToString()));
  if (items.overflowed()) {
    first_error_ = absl::InvalidArgumentError(
        absl::StrCat("model ", name_, ": ", items.Message("the model input")));
  }
}

ModelBuilder::Conv ModelBuilder::Square(std::int64_t out_channels, int kernel, int stride,
                                        int pad) {
  Conv conv;
  conv.out_channels = out_channels;
  conv.kernel_h = conv.kernel_w = kernel;
  conv.stride = stride;
  conv.pad_h = conv.pad_w = pad;
  return conv;
}

const TensorShape& ModelBuilder::OutputShape(LayerId id) const {
  static const TensorShape* const kNone = new TensorShape();
  if (id == kInput) return input_shape_;
  if (id < 0 || id >= size()) return *kNone;
  return layers_[static_cast<size_t>(id)].output;
}

LayerId ModelBuilder::Fail(const Layer& layer, const std::string& message) {
  if (first_error_.ok()) {
    first_error_ = absl::InvalidArgumentError(
        absl::StrCat("model ", name_, ", layer ", layer.name, " (",
                     std::string(LayerKindName(layer.kind)), "): ", message));
  }
  return kInput;
}

bool ModelBuilder::Start(const std::string& name, LayerKind kind, const std::vector<LayerId>& ins,
                         Layer& layer) {
  if (!first_error_.ok()) return false;
  layer.name = name;
  layer.kind = kind;
  if (name.empty() || name.find_first_of(",;\"\r\n") != std::string::npos) {
    Fail(layer, "a name must be non-empty and hold no ',', ';', '\"' or line break");
    return false;
  }
  if (names_.count(name) > 0) {
    Fail(layer, "the name is already used by an earlier layer");
    return false;
  }
  for (size_t k = 0; k < ins.size(); ++k) {
    const LayerId in = ins[k];
    if (in == kInput && ins.size() > 1) {
      Fail(layer, "a layer with several inputs cannot read the model input directly");
      return false;
    }
    if (in != kInput && (in < 0 || in >= size())) {
      Fail(layer,
           absl::StrCat("input id ", in, " is not a layer added before (there are ", size(), ")"));
      return false;
    }
    if (std::count(ins.begin(), ins.end(), in) > 1) {
      Fail(layer,
           absl::StrCat("input ", layers_[static_cast<size_t>(in)].name, " is listed twice"));
      return false;
    }
  }
  if (!ins.empty() && ins[0] != kInput) layer.inputs = ins;
  layer.input = ins.empty() ? input_shape_ : OutputShape(ins[0]);
  return true;
}

bool ModelBuilder::CheckWindow(const Layer& layer, int kernel_h, int kernel_w, int stride,
                               int pad_h, int pad_w) {
  const TensorShape& in = layer.input;
  if (in.dims.size() != 3) {
    Fail(layer, absl::StrCat("needs a {C,H,W} input, got ", in.ToString()));
    return false;
  }
  if (kernel_h < 1 || kernel_w < 1 || stride < 1 || pad_h < 0 || pad_w < 0) {
    Fail(layer, absl::StrCat("kernel ", kernel_h, "x", kernel_w, ", stride ", stride, ", padding ",
                             pad_h, "x", pad_w, ": kernel and stride must be >= 1, padding >= 0"));
    return false;
  }
  const std::int64_t padded_h = in.dims[1] + 2 * std::int64_t{pad_h};
  const std::int64_t padded_w = in.dims[2] + 2 * std::int64_t{pad_w};
  if (kernel_h > padded_h || kernel_w > padded_w) {
    Fail(layer, absl::StrCat("kernel ", kernel_h, "x", kernel_w,
                             " is larger than the padded input ", padded_h, "x", padded_w,
                             " (input ", in.ToString(), ", padding ", pad_h, "x", pad_w, ")"));
    return false;
  }
  return true;
}

LayerId ModelBuilder::Conv2d(const std::string& name, LayerId in, const Conv& conv) {
  Layer layer;
  if (!Start(name, LayerKind::kConv2d, {in}, layer) ||
      !CheckWindow(layer, conv.kernel_h, conv.kernel_w, conv.stride, conv.pad_h, conv.pad_w)) {
    return kInput;
  }
  const std::int64_t cin = layer.input.dims[0];
  const std::int64_t cout = conv.out_channels;
  if (cout < 1) return Fail(layer, absl::StrCat("out_channels must be >= 1, got ", cout));
  if (conv.groups < 1 || cin % conv.groups != 0 || cout % conv.groups != 0) {
    return Fail(layer, absl::StrCat("groups ", conv.groups, " must be >= 1 and divide both the ",
                                    cin, " input and the ", cout, " output channels"));
  }
  const std::int64_t ho = WindowOutput(layer.input.dims[1], conv.kernel_h, conv.stride, conv.pad_h);
  const std::int64_t wo = WindowOutput(layer.input.dims[2], conv.kernel_w, conv.stride, conv.pad_w);
  layer.output.dims = {cout, ho, wo};
  layer.window = {conv.kernel_h, conv.kernel_w, conv.stride, conv.stride,
                  conv.pad_h,    conv.pad_w,    conv.groups};
  layer.attrs.bias = conv.bias;
  layer.attrs.batch_norm = conv.batch_norm;
  layer.attrs.relu = conv.relu;
  CheckedItems items;
  const std::string attribute =
      absl::StrCat("out_channels ", cout, " with a ", conv.kernel_h, "x", conv.kernel_w,
                   " kernel on input ", layer.input.ToString());
  const std::int64_t taps =
      items.Mul(items.Mul(cin / conv.groups, conv.kernel_h, attribute), conv.kernel_w, attribute);
  const std::int64_t per_channel = (conv.bias ? 1 : 0) + (conv.batch_norm ? 2 : 0);
  layer.params = items.Add(items.Mul(cout, taps, attribute),
                           items.Mul(cout, per_channel, attribute), attribute);
  const double out_items = D(items.Elements(layer.output.dims, attribute));
  if (items.overflowed()) return Fail(layer, items.Message("its parameters or output"));
  layer.forward_flops = 2.0 * D(taps) * out_items + (conv.bias ? out_items : 0) +
                        (conv.batch_norm ? kNormFlopsPerItem * out_items : 0) +
                        (conv.relu ? out_items : 0);
  return Append(std::move(layer));
}

LayerId ModelBuilder::Linear(const std::string& name, LayerId in, std::int64_t out_features,
                             bool bias) {
  Layer layer;
  if (!Start(name, LayerKind::kLinear, {in}, layer)) return kInput;
  if (out_features < 1) {
    return Fail(layer, absl::StrCat("out_features must be >= 1, got ", out_features));
  }
  const std::int64_t d = layer.input.dims.back();
  const double rows = static_cast<double>(layer.input.Elements() / d);
  layer.output = layer.input;
  layer.output.dims.back() = out_features;
  layer.attrs.bias = bias;
  CheckedItems items;
  const std::string attribute =
      absl::StrCat("out_features ", out_features, " on input ", layer.input.ToString());
  layer.params =
      items.Add(items.Mul(d, out_features, attribute), bias ? out_features : 0, attribute);
  items.Elements(layer.output.dims, attribute);
  if (items.overflowed()) return Fail(layer, items.Message("its parameters or output"));
  layer.forward_flops = rows * (2.0 * D(d) * D(out_features) + (bias ? D(out_features) : 0));
  return Append(std::move(layer));
}

LayerId ModelBuilder::Elementwise(const std::string& name, LayerKind kind, LayerId in,
                                  double flops_per_item) {
  Layer layer;
  if (!Start(name, kind, {in}, layer)) return kInput;
  layer.output = layer.input;
  layer.forward_flops = flops_per_item * static_cast<double>(layer.input.Elements());
  return Append(std::move(layer));
}

LayerId ModelBuilder::ReLU(const std::string& name, LayerId in) {
  return Elementwise(name, LayerKind::kReLU, in, 1);
}

LayerId ModelBuilder::GELU(const std::string& name, LayerId in) {
  return Elementwise(name, LayerKind::kGELU, in, kGeluFlopsPerItem);
}

LayerId ModelBuilder::Dropout(const std::string& name, LayerId in) {
  return Elementwise(name, LayerKind::kDropout, in, 1);
}

LayerId ModelBuilder::BatchNorm2d(const std::string& name, LayerId in) {
  Layer layer;
  if (!Start(name, LayerKind::kBatchNorm2d, {in}, layer)) return kInput;
  if (layer.input.dims.size() != 3) {
    return Fail(layer, absl::StrCat("needs a {C,H,W} input, got ", layer.input.ToString()));
  }
  layer.output = layer.input;
  layer.params = 2 * layer.input.dims[0];
  layer.forward_flops = kNormFlopsPerItem * static_cast<double>(layer.input.Elements());
  return Append(std::move(layer));
}

LayerId ModelBuilder::LayerNorm(const std::string& name, LayerId in) {
  Layer layer;
  if (!Start(name, LayerKind::kLayerNorm, {in}, layer)) return kInput;
  layer.output = layer.input;
  layer.params = 2 * layer.input.dims.back();
  layer.forward_flops = kNormFlopsPerItem * static_cast<double>(layer.input.Elements());
  return Append(std::move(layer));
}

LayerId ModelBuilder::Pool(const std::string& name, LayerKind kind, LayerId in, int kernel,
                           int stride, int pad) {
  Layer layer;
  if (!Start(name, kind, {in}, layer) || !CheckWindow(layer, kernel, kernel, stride, pad, pad)) {
    return kInput;
  }
  if (2 * pad > kernel) {  // PyTorch: "pad should be at most half of kernel size"
    return Fail(layer, absl::StrCat("padding ", pad, " must be at most half the kernel ", kernel));
  }
  const std::int64_t ho = WindowOutput(layer.input.dims[1], kernel, stride, pad);
  const std::int64_t wo = WindowOutput(layer.input.dims[2], kernel, stride, pad);
  layer.output.dims = {layer.input.dims[0], ho, wo};
  layer.window = {kernel, kernel, stride, stride, pad, pad, 1};
  layer.forward_flops =
      static_cast<double>(kernel) * kernel * static_cast<double>(layer.output.Elements());
  return Append(std::move(layer));
}

LayerId ModelBuilder::MaxPool2d(const std::string& name, LayerId in, int kernel, int stride,
                                int pad) {
  return Pool(name, LayerKind::kMaxPool2d, in, kernel, stride, pad);
}

LayerId ModelBuilder::AvgPool2d(const std::string& name, LayerId in, int kernel, int stride,
                                int pad) {
  return Pool(name, LayerKind::kAvgPool2d, in, kernel, stride, pad);
}

LayerId ModelBuilder::AdaptiveAvgPool2d(const std::string& name, LayerId in, int out_h, int out_w) {
  Layer layer;
  if (!Start(name, LayerKind::kAdaptiveAvgPool2d, {in}, layer)) return kInput;
  if (layer.input.dims.size() != 3) {
    return Fail(layer, absl::StrCat("needs a {C,H,W} input, got ", layer.input.ToString()));
  }
  if (out_h < 1 || out_w < 1) {
    return Fail(layer, absl::StrCat("output size ", out_h, "x", out_w, " must be >= 1x1"));
  }
  const std::int64_t c = layer.input.dims[0];
  layer.output.dims = {c, out_h, out_w};
  layer.forward_flops = D(c) * D(AdaptiveSpan(layer.input.dims[1], out_h)) *
                        D(AdaptiveSpan(layer.input.dims[2], out_w));
  return Append(std::move(layer));
}

LayerId ModelBuilder::Flatten(const std::string& name, LayerId in) {
  Layer layer;
  if (!Start(name, LayerKind::kFlatten, {in}, layer)) return kInput;
  layer.output.dims = {layer.input.Elements()};
  return Append(std::move(layer));
}

LayerId ModelBuilder::Join(const std::string& name, LayerKind kind,
                           const std::vector<LayerId>& ins) {
  Layer layer;
  layer.name = name;
  layer.kind = kind;
  if (!first_error_.ok()) return kInput;
  if (ins.size() < 2) {
    return Fail(layer, absl::StrCat("a join needs at least 2 inputs, got ", ins.size()));
  }
  if (!Start(name, kind, ins, layer)) return kInput;
  const TensorShape& first = layer.input;
  std::int64_t channels = 0;
  CheckedItems items;
  for (LayerId in : ins) {
    const TensorShape& shape = OutputShape(in);
    const bool matches =
        kind == LayerKind::kAdd
            ? shape == first
            : shape.dims.size() == first.dims.size() &&
                  std::equal(shape.dims.begin() + 1, shape.dims.end(), first.dims.begin() + 1);
    if (!matches) {
      return Fail(layer,
                  absl::StrCat("input ", layers_[static_cast<size_t>(in)].name, " ",
                               shape.ToString(), " does not match input ",
                               layers_[static_cast<size_t>(ins[0])].name, " ", first.ToString(),
                               kind == LayerKind::kAdd
                                   ? " (a sum needs equal shapes)"
                                   : " (a concatenation needs equal dims but the channels)"));
    }
    channels =
        items.Add(channels, shape.dims[0],
                  absl::StrCat("the channels of input ", layers_[static_cast<size_t>(in)].name));
  }
  if (items.overflowed()) return Fail(layer, items.Message("the concatenated output"));
  layer.output = first;
  if (kind == LayerKind::kConcat) layer.output.dims[0] = channels;
  const double per_item = kind == LayerKind::kAdd ? static_cast<double>(ins.size() - 1) : 1.0;
  layer.forward_flops = per_item * static_cast<double>(layer.output.Elements());
  return Append(std::move(layer));
}

LayerId ModelBuilder::Concat(const std::string& name, const std::vector<LayerId>& ins) {
  return Join(name, LayerKind::kConcat, ins);
}

LayerId ModelBuilder::Add(const std::string& name, const std::vector<LayerId>& ins) {
  return Join(name, LayerKind::kAdd, ins);
}

namespace {

// A layer whose item counts would overflow their bytes, or whose FLOPs are not finite, cannot be
// planned: the memory and cost models multiply these further.
absl::Status CheckSizes(const Layer& layer) {
  CheckedItems items;
  items.Elements(layer.output.dims, absl::StrCat("output shape ", layer.output.ToString()));
  if (items.overflowed()) return absl::InvalidArgumentError(items.Message("its output"));
  for (const auto& [what, count] :
       {std::pair<const char*, std::int64_t>{"params", layer.params},
        {"internal activation items", layer.internal_activation_items}}) {
    if (count > kMaxItems) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " ", count, " exceed ", kMaxItems, " items (their bytes would overflow 64 bits)"));
    }
  }
  if (!std::isfinite(layer.forward_flops) || !std::isfinite(layer.backward_flops)) {
    return absl::InvalidArgumentError(absl::StrCat("FLOPs (forward ", layer.forward_flops,
                                                   ", backward ", layer.backward_flops,
                                                   ") are not finite"));
  }
  return absl::OkStatus();
}

}  // namespace

LayerId ModelBuilder::Append(Layer layer) {
  if (absl::Status sizes = CheckSizes(layer); !sizes.ok()) {
    return Fail(layer, std::string(sizes.message()));
  }
  layer.id = size();
  if (layer.in_channels == 0 && layer.out_channels == 0) {
    layer.in_channels = ChannelsOf(layer.input);
    layer.out_channels = ChannelsOf(layer.output);
  }
  layer.reuses_input_memory = IsInPlace(layer.kind);
  // Input gradient (~ the forward's cost) plus, with weights, the weight gradient (the same).
  if (layer.kind != LayerKind::kOpaque) {
    layer.backward_flops = layer.params > 0 ? 2 * layer.forward_flops : layer.forward_flops;
  }
  names_.insert(layer.name);
  layers_.push_back(std::move(layer));
  return size() - 1;
}

void ModelBuilder::SetMeasuredTime(LayerId id, Seconds per_sample) {
  if (!first_error_.ok()) return;
  if (id < 0 || id >= size()) {
    first_error_ = absl::InvalidArgumentError(absl::StrCat(
        "model ", name_, ": SetMeasuredTime: layer id ", id, " is not a layer added before"));
    return;
  }
  Layer& layer = layers_[static_cast<size_t>(id)];
  if (!(per_sample.count() >= 0)) {
    Fail(layer, absl::StrCat("measured time per sample must be >= 0 s, got ", per_sample.count()));
    return;
  }
  layer.measured_time_per_sample = per_sample;
}

absl::StatusOr<ModelGraph> ModelBuilder::Build() && {
  WAVEPOOL_RETURN_IF_ERROR(first_error_);
  return ModelGraph::Create(std::move(name_), std::move(input_shape_), std::move(layers_));
}

}  // namespace wavepool::planner
