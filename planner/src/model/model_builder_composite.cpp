// ModelBuilder's composite layers: a ResNet bottleneck block and the BERT blocks as single
// layers (the granularity DeepPool profiles them at), the loss, and opaque layers.
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/model_builder_internal.h"
#include "wavepool/planner/model_builder.h"

namespace wavepool::planner {
namespace {

using internal::CheckedItems;
using internal::kGeluFlopsPerItem;
using internal::kNormFlopsPerItem;
using internal::kSoftmaxFlopsPerItem;
using internal::WindowOutput;

double D(std::int64_t value) { return static_cast<double>(value); }

}  // namespace

// torchvision.models.resnet.Bottleneck (v1.5: the stride sits on the 3x3 conv).
LayerId ModelBuilder::ResNetBottleneck(const std::string& name, LayerId in, std::int64_t planes,
                                       int stride, int base_width) {
  Layer layer;
  if (!Start(name, LayerKind::kResNetBottleneck, {in}, layer)) return kInput;
  if (planes < 1 || base_width < 1) {
    return Fail(layer, absl::StrCat("planes (", planes, ") and base_width (", base_width,
                                    ") must be >= 1"));
  }
  if (!CheckWindow(layer, 3, 3, stride, 1, 1)) return kInput;
  CheckedItems items;
  const std::string attribute = absl::StrCat("planes ", planes, " with base_width ", base_width,
                                             " on input ", layer.input.ToString());
  const std::int64_t width = items.Mul(planes, base_width, attribute) / 64;
  const std::int64_t out = items.Mul(planes, 4, attribute);  // Bottleneck.expansion
  if (items.overflowed()) return Fail(layer, items.Message("its channels"));
  if (width < 1) {
    return Fail(layer, absl::StrCat("width planes*base_width/64 = ", planes, "*", base_width,
                                    "/64 rounds down to 0"));
  }
  const std::int64_t cin = layer.input.dims[0];
  const std::int64_t hw = layer.input.dims[1] * layer.input.dims[2];
  const std::int64_t ho = WindowOutput(layer.input.dims[1], 3, stride, 1);
  const std::int64_t wo = WindowOutput(layer.input.dims[2], 3, stride, 1);
  const std::int64_t ohw = ho * wo;
  const bool downsample = stride != 1 || cin != out;
  layer.output.dims = {out, ho, wo};
  layer.window = {3, 3, stride, stride, 1, 1, 1};
  layer.attrs.planes = planes;
  layer.attrs.base_width = base_width;
  const auto mul = [&](std::int64_t a, std::int64_t b) { return items.Mul(a, b, attribute); };
  const auto add = [&](std::int64_t a, std::int64_t b) { return items.Add(a, b, attribute); };
  const std::int64_t conv1 = add(mul(cin, width), mul(2, width));            // conv1 1x1 + bn1
  const std::int64_t conv2 = add(mul(9, mul(width, width)), mul(2, width));  // conv2 3x3 + bn2
  const std::int64_t conv3 = add(mul(width, out), mul(2, out));              // conv3 1x1 + bn3
  const std::int64_t shortcut = downsample ? add(mul(cin, out), mul(2, out)) : 0;  // 1x1 + bn
  layer.params = add(add(conv1, conv2), add(conv3, shortcut));
  layer.internal_activation_items =
      add(add(mul(width, hw), mul(width, ohw)), mul(out, ohw) * (downsample ? 2 : 1));
  if (items.overflowed()) return Fail(layer, items.Message("its parameters or activations"));
  const double bn_relu = kNormFlopsPerItem + 1;
  const double w = D(width);
  layer.forward_flops = 2 * D(cin) * w * D(hw) + bn_relu * w * D(hw) + 2 * 9 * w * w * D(ohw) +
                        bn_relu * w * D(ohw) + 2 * w * D(out) * D(ohw) +
                        kNormFlopsPerItem * D(out) * D(ohw) +
                        (downsample ? (2 * D(cin) + kNormFlopsPerItem) * D(out) * D(ohw) : 0) +
                        2 * D(out) * D(ohw);  // residual add and the final ReLU
  return Append(std::move(layer));
}

// Hugging Face BertEmbeddings (dropout not modelled: it adds no FLOPs worth counting).
LayerId ModelBuilder::Embedding(const std::string& name, LayerId in, std::int64_t vocab,
                                std::int64_t max_positions, std::int64_t type_vocab,
                                std::int64_t hidden) {
  Layer layer;
  if (!Start(name, LayerKind::kEmbedding, {in}, layer)) return kInput;
  if (layer.input.dims.size() != 1) {
    return Fail(layer,
                absl::StrCat("needs a {seq_len} input of token ids, got ", layer.input.ToString()));
  }
  if (vocab < 1 || max_positions < 1 || type_vocab < 0 || hidden < 1) {
    return Fail(
        layer, absl::StrCat("vocab (", vocab, "), max_positions (", max_positions, ") and hidden (",
                            hidden, ") must be >= 1, type_vocab (", type_vocab, ") >= 0"));
  }
  const std::int64_t tokens = layer.input.dims[0];
  if (tokens > max_positions) {
    return Fail(layer,
                absl::StrCat("sequence length ", tokens, " exceeds max_positions ", max_positions));
  }
  const std::int64_t tables = type_vocab > 0 ? 3 : 2;
  layer.output.dims = {tokens, hidden};
  layer.in_channels = vocab;
  layer.out_channels = hidden;
  layer.attrs.max_positions = max_positions;
  layer.attrs.type_vocab = type_vocab;
  CheckedItems items;
  const std::string attribute = absl::StrCat("vocab ", vocab, ", max_positions ", max_positions,
                                             ", type_vocab ", type_vocab, " and hidden ", hidden);
  const std::int64_t rows =
      items.Add(items.Add(vocab, max_positions, attribute), type_vocab, attribute);
  layer.params = items.Mul(items.Add(rows, 2, attribute), hidden, attribute);
  layer.internal_activation_items = items.Mul(tokens, hidden, attribute);
  if (items.overflowed()) return Fail(layer, items.Message("its parameters or activations"));
  layer.forward_flops =
      D(tables - 1) * D(tokens) * D(hidden) + kNormFlopsPerItem * D(tokens) * D(hidden);
  return Append(std::move(layer));
}

// Hugging Face BertAttention: BertSelfAttention + BertSelfOutput (dense, residual, LayerNorm).
LayerId ModelBuilder::TransformerAttention(const std::string& name, LayerId in, int heads) {
  Layer layer;
  if (!Start(name, LayerKind::kTransformerAttention, {in}, layer)) return kInput;
  if (layer.input.dims.size() != 2) {
    return Fail(layer, absl::StrCat("needs a {T,D} input, got ", layer.input.ToString()));
  }
  const std::int64_t t = layer.input.dims[0];
  const std::int64_t d = layer.input.dims[1];
  if (heads < 1 || d % heads != 0) {
    return Fail(layer,
                absl::StrCat("heads ", heads, " must be >= 1 and divide the hidden size ", d));
  }
  layer.output = layer.input;
  layer.attrs.heads = heads;
  CheckedItems items;
  const std::string attribute = absl::StrCat("heads ", heads, " on input ", layer.input.ToString());
  const auto mul = [&](std::int64_t a, std::int64_t b) { return items.Mul(a, b, attribute); };
  const auto add = [&](std::int64_t a, std::int64_t b) { return items.Add(a, b, attribute); };
  layer.params = add(mul(4, add(mul(d, d), d)), mul(2, d));
  layer.internal_activation_items = add(mul(5, mul(t, d)), mul(heads, mul(t, t)));
  if (items.overflowed()) return Fail(layer, items.Message("its parameters or activations"));
  layer.forward_flops = 4 * D(t) * (2 * D(d) * D(d) + D(d))                    // Q, K, V, output
                        + 2 * (2 * D(t) * D(t) * D(d))                         // QK^T and AV
                        + (1 + kSoftmaxFlopsPerItem) * D(heads) * D(t) * D(t)  // scale, softmax
                        + (1 + kNormFlopsPerItem) * D(t) * D(d);               // residual, norm
  return Append(std::move(layer));
}

// Hugging Face BertIntermediate (dense + GELU) and BertOutput (dense, residual, LayerNorm).
LayerId ModelBuilder::TransformerFeedForward(const std::string& name, LayerId in,
                                             std::int64_t intermediate) {
  Layer layer;
  if (!Start(name, LayerKind::kTransformerFeedForward, {in}, layer)) return kInput;
  if (layer.input.dims.size() != 2) {
    return Fail(layer, absl::StrCat("needs a {T,D} input, got ", layer.input.ToString()));
  }
  if (intermediate < 1) {
    return Fail(layer, absl::StrCat("intermediate size must be >= 1, got ", intermediate));
  }
  const std::int64_t t = layer.input.dims[0];
  const std::int64_t d = layer.input.dims[1];
  const std::int64_t i = intermediate;
  layer.output = layer.input;
  layer.attrs.intermediate = intermediate;
  CheckedItems items;
  const std::string attribute =
      absl::StrCat("intermediate ", intermediate, " on input ", layer.input.ToString());
  const auto mul = [&](std::int64_t a, std::int64_t b) { return items.Mul(a, b, attribute); };
  const auto add = [&](std::int64_t a, std::int64_t b) { return items.Add(a, b, attribute); };
  layer.params = add(add(mul(2, mul(d, i)), i), mul(3, d));
  layer.internal_activation_items = add(mul(2, mul(t, i)), mul(t, d));
  if (items.overflowed()) return Fail(layer, items.Message("its parameters or activations"));
  layer.forward_flops = D(t) * (2 * D(d) * D(i) + D(i))           // dense up
                        + kGeluFlopsPerItem * D(t) * D(i)         // GELU
                        + D(t) * (2 * D(i) * D(d) + D(d))         // dense down
                        + (1 + kNormFlopsPerItem) * D(t) * D(d);  // residual, LayerNorm
  return Append(std::move(layer));
}

// Hugging Face BertPooler: tanh(dense(h[:, 0])). Only the first token is read; the rest of the
// input gets a zero gradient.
LayerId ModelBuilder::TransformerPooler(const std::string& name, LayerId in) {
  Layer layer;
  if (!Start(name, LayerKind::kTransformerPooler, {in}, layer)) return kInput;
  if (layer.input.dims.size() != 2) {
    return Fail(layer, absl::StrCat("needs a {T,D} input, got ", layer.input.ToString()));
  }
  const std::int64_t d = layer.input.dims[1];
  layer.output.dims = {d};
  CheckedItems items;
  layer.params = items.Add(items.Mul(d, d, absl::StrCat("input ", layer.input.ToString())), d,
                           absl::StrCat("input ", layer.input.ToString()));
  if (items.overflowed()) return Fail(layer, items.Message("its parameters"));
  layer.forward_flops = 2 * D(d) * D(d) + D(d)  // dense
                        + D(d);                 // tanh
  return Append(std::move(layer));
}

LayerId ModelBuilder::SoftmaxCrossEntropy(const std::string& name, LayerId in) {
  Layer layer;
  if (!Start(name, LayerKind::kSoftmaxCrossEntropy, {in}, layer)) return kInput;
  const std::int64_t items = layer.input.Elements();
  const std::int64_t rows = items / layer.input.dims.back();
  layer.output.dims = {1};
  layer.forward_flops = kSoftmaxFlopsPerItem * D(items) + D(rows);  // + pick and log per row
  layer.internal_activation_items = items;                          // the probabilities
  return Append(std::move(layer));
}

LayerId ModelBuilder::Opaque(const std::string& name, const std::vector<LayerId>& ins,
                             TensorShape output, std::int64_t params, double forward_flops,
                             double backward_flops, std::string type) {
  Layer layer;
  if (!Start(name, LayerKind::kOpaque, ins, layer)) return kInput;
  layer.opaque_type = std::move(type);
  bool positive = !output.dims.empty();
  for (std::int64_t d : output.dims) positive = positive && d > 0;
  if (!positive) {
    return Fail(layer, absl::StrCat("output shape ", output.ToString(),
                                    " must have at least one dim, all positive"));
  }
  if (params < 0 || !std::isfinite(forward_flops) || forward_flops < 0 ||
      !std::isfinite(backward_flops) || backward_flops < 0) {
    return Fail(
        layer, absl::StrCat("params (", params, "), forward FLOPs (", forward_flops,
                            ") and backward FLOPs (", backward_flops, ") must be finite and >= 0"));
  }
  layer.output = std::move(output);
  layer.params = params;
  layer.forward_flops = forward_flops;
  layer.backward_flops = backward_flops;
  return Append(std::move(layer));
}

}  // namespace wavepool::planner
