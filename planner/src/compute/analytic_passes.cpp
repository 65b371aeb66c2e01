// Which kernels each layer kind launches in PyTorch, forward and backward, and what each moves.
// The kernels are those of PyTorch's implementation of torchvision's layers (a BasicConv2d is a
// cuDNN convolution, a BatchNorm and a ReLU; a bottleneck three of them, a residual add and a
// ReLU), plus, under autocast, the casts and layout transposes around every matrix kernel.
#include "compute/analytic_passes.h"

#include <algorithm>
#include <utility>

namespace wavepool::planner::internal {
namespace {

// Tensors between layers are FP32 (the planner's item, and how the profiles fed every layer).
constexpr double kBoundaryBytes = static_cast<double>(kBytesPerItem);
// A 16-bit item: what autocast hands to, and gets back from, the tensor cores.
constexpr double kHalfBytes = 2;
// A cast FP32 -> 16 bits (or back) reads 4 bytes and writes 2 per item.
constexpr double kCastBytesPerItem = 6;
// BatchNorm in training: forward reads its input for the batch statistics, then reads and writes
// it to normalise (3 passes, 2 kernels); backward reads the output gradient and the input for
// the two reductions, then both again to write the input gradient (5 passes, 2 kernels).
constexpr double kNormForwardPasses = 3;
constexpr double kNormBackwardPasses = 5;
constexpr int kNormKernels = 2;
// max_pool2d keeps the argmax of every window as an int64 index.
constexpr double kPoolIndexBytes = 8;

// Kernels of one pass of a composite layer priced as a whole (the backward launches twice as
// many): attention is 4 projections, 2 batched products, scale, mask, softmax, dropout, residual
// add and LayerNorm; the feed-forward block 2 GEMMs, GELU, dropout, add and LayerNorm; the
// embedding 3 gathers, their sum and LayerNorm.
int CompositeKernels(LayerKind kind) {
  switch (kind) {
    case LayerKind::kTransformerAttention:
      return 12;
    case LayerKind::kTransformerFeedForward:
      return 6;
    case LayerKind::kEmbedding:
      return 5;
    default:
      return 1;
  }
}

// Collects the passes of one layer on `batch` samples.
class PassBuilder {
 public:
  PassBuilder(double batch, Precision precision)
      : batch_(batch), mixed_(precision == Precision::kMixed) {}

  // Bytes per item of a matrix layer's operands and outputs.
  double MatrixItemBytes() const { return mixed_ ? kHalfBytes : kBoundaryBytes; }
  double Batch() const { return batch_; }

  void Forward(KernelPass pass) { passes_.forward.push_back(pass); }
  void Backward(KernelPass pass) { passes_.backward.push_back(pass); }

  static KernelPass Stream(double bytes, int kernels = 1) {
    return {kernels, 0, 0, bytes, MemoryAccess::kStreaming};
  }
  static KernelPass Structured(double bytes, int kernels = 1) {
    return {kernels, 0, 0, bytes, MemoryAccess::kStructured};
  }
  static KernelPass Matrix(double flops, double work, double bytes) {
    return {1, flops, work, bytes, MemoryAccess::kStructured};
  }

  // Under autocast, `items` FP32 items cast to 16 bits forward, and their gradient cast back.
  void CastBothWays(double items) {
    if (!mixed_) return;
    Forward(Stream(kCastBytesPerItem * items));
    Backward(Stream(kCastBytesPerItem * items));
  }

  // One convolution (per-sample input and output items, `weights` parameters, `flops` per
  // sample) with its fused BatchNorm and ReLU. `cast_input`: its input arrives in FP32.
  void Convolution(double in, double out, double weights, double flops, const LayerAttrs& attrs,
                   bool cast_input);

  // A linear layer: casts, one GEMM forward, the input and weight gradient GEMMs backward.
  void Linear(double in, double out, double weights, double flops, bool bias);

  LayerPasses Take() { return std::move(passes_); }

 private:
  double batch_;
  bool mixed_;
  LayerPasses passes_;
};

void PassBuilder::Convolution(double in, double out, double weights, double flops,
                              const LayerAttrs& attrs, bool cast_input) {
  const double a = MatrixItemBytes();
  const double x = batch_ * in, y = batch_ * out;
  if (cast_input) CastBothWays(x);
  CastBothWays(weights);
  // cuDNN's 16-bit kernels are channels-last: a channels-first tensor is transposed in (input)
  // and out (output) forward; backward transposes the output gradient and the saved input in and
  // the input gradient out.
  if (mixed_) {
    Forward(Structured(2 * a * x));
    Forward(Structured(2 * a * y));
    Backward(Structured(2 * a * y));
    Backward(Structured(2 * a * x));
    Backward(Structured(2 * a * x));
  }
  Forward(Matrix(batch_ * flops, y, a * (x + weights + y)));
  Backward(Matrix(batch_ * flops, x, a * (y + weights + x)));  // input gradient
  Backward(Matrix(batch_ * flops, y, a * (y + x + weights)));  // weight gradient
  if (attrs.bias) {
    Forward(Stream(2 * a * y));
    Backward(Stream(a * y));
  }
  if (attrs.batch_norm) {
    Forward(Structured(kNormForwardPasses * a * y, kNormKernels));
    Backward(Structured(kNormBackwardPasses * a * y, kNormKernels));
  }
  if (attrs.relu) {
    Forward(Stream(2 * a * y));
    Backward(Stream(3 * a * y));
  }
}

void PassBuilder::Linear(double in, double out, double weights, double flops, bool bias) {
  const double a = MatrixItemBytes();
  const double x = batch_ * in, y = batch_ * out;
  CastBothWays(x);
  CastBothWays(weights);
  Forward(Matrix(batch_ * flops, y, a * (x + weights + y)));  // the bias is the GEMM's epilogue
  Backward(Matrix(batch_ * flops, x, a * (y + weights + x)));
  Backward(Matrix(batch_ * flops, y, a * (y + x + weights)));
  if (bias) Backward(Stream(a * y));
}

// torchvision's Bottleneck: conv1 1x1, conv2 3x3/stride, conv3 1x1 (BatchNorm in each, ReLU in
// the first two), the downsample conv with BatchNorm, the residual add and the final ReLU.
void BottleneckPasses(const Layer& layer, PassBuilder& p) {
  const double cin = static_cast<double>(layer.input.dims[0]);
  const double hw = static_cast<double>(layer.input.dims[1] * layer.input.dims[2]);
  const double out = static_cast<double>(layer.output.dims[0]);
  const double ohw = static_cast<double>(layer.output.dims[1] * layer.output.dims[2]);
  const double width =
      static_cast<double>(layer.attrs.planes * layer.attrs.base_width / 64);  // as the builder
  const bool downsample = layer.window.stride_h != 1 || cin != out;
  LayerAttrs bn_relu, bn;
  bn_relu.batch_norm = bn_relu.relu = bn.batch_norm = true;
  p.Convolution(cin * hw, width * hw, cin * width + 2 * width, 2 * cin * width * hw, bn_relu, true);
  p.Convolution(width * hw, width * ohw, 9 * width * width + 2 * width, 2 * 9 * width * width * ohw,
                bn_relu, false);
  p.Convolution(width * ohw, out * ohw, width * out + 2 * out, 2 * width * out * ohw, bn, false);
  if (downsample) {
    p.Convolution(cin * hw, out * ohw, cin * out + 2 * out, 2 * cin * out * ohw, bn, true);
  }
  // The add reads the branch and the identity (or the downsample's output) and writes FP32.
  const double a = p.MatrixItemBytes();
  const double y = p.Batch() * out * ohw;
  p.Forward(PassBuilder::Stream((a + (downsample ? a : kBoundaryBytes) + kBoundaryBytes) * y));
  p.Forward(PassBuilder::Stream(2 * kBoundaryBytes * y));
  p.Backward(PassBuilder::Stream(3 * kBoundaryBytes * y));
  if (a != kBoundaryBytes) p.Backward(PassBuilder::Stream(kCastBytesPerItem * y));
  // The input gradient is the sum of the branch's and the identity's.
  p.Backward(PassBuilder::Stream(3 * kBoundaryBytes * p.Batch() * cin * hw));
}

// PyTorch's channels-first pooling kernels give each output its own thread, which reads every
// item of its window; backward gives each input a thread that visits every window covering it
// (kernel area / stride area of them on average).
void PoolPasses(const Layer& layer, PassBuilder& p) {
  const WindowAttrs& w = layer.window;
  const double window = static_cast<double>(w.kernel_h * w.kernel_w);
  const double cover = window / static_cast<double>(w.stride_h * w.stride_w);
  const double index = layer.kind == LayerKind::kMaxPool2d ? kPoolIndexBytes : 0;
  const double x = p.Batch() * static_cast<double>(layer.input.Elements());
  const double y = p.Batch() * static_cast<double>(layer.output.Elements());
  p.Forward(PassBuilder::Structured(y * (window * kBoundaryBytes + kBoundaryBytes + index)));
  p.Backward(PassBuilder::Structured(x * (cover * (kBoundaryBytes + index) + kBoundaryBytes)));
}

// A layer priced as one pass each way (composite blocks, embeddings, losses, unknown layers):
// its FLOPs, and one read of its input, output, internal activations and weights forward; 1.5x
// the activations and 2x the weights backward (reads and writes of the gradients).
void CompositePasses(const Layer& layer, PassBuilder& p) {
  const bool matrix = UsesMatrixUnits(layer.kind);
  const double a = matrix ? p.MatrixItemBytes() : kBoundaryBytes;
  const double b = p.Batch();
  const double activations = b * a *
                             static_cast<double>(layer.input.Elements() + layer.output.Elements() +
                                                 layer.internal_activation_items);
  const double weights = a * static_cast<double>(layer.params);
  const double work = b * static_cast<double>(layer.output.Elements());
  const int kernels = CompositeKernels(layer.kind);
  const MemoryAccess access = matrix ? MemoryAccess::kStructured : MemoryAccess::kStreaming;
  if (matrix) p.CastBothWays(static_cast<double>(layer.params));
  p.Forward({kernels, matrix ? b * layer.forward_flops : 0, work, activations + weights, access});
  p.Backward({2 * kernels, matrix ? b * layer.backward_flops : 0, work,
              1.5 * activations + 2 * weights, access});
}

}  // namespace

bool UsesMatrixUnits(LayerKind kind) {
  switch (kind) {
    case LayerKind::kConv2d:
    case LayerKind::kLinear:
    case LayerKind::kResNetBottleneck:
    case LayerKind::kTransformerAttention:
    case LayerKind::kTransformerFeedForward:
    case LayerKind::kTransformerPooler:
      return true;
    default:
      return false;
  }
}

LayerPasses PassesOf(const Layer& layer, std::int64_t batch, Precision precision) {
  PassBuilder p(static_cast<double>(batch), precision);
  const double b = p.Batch();
  const double in = static_cast<double>(layer.input.Elements());
  const double out = static_cast<double>(layer.output.Elements());
  switch (layer.kind) {
    case LayerKind::kConv2d: {
      const WindowAttrs& w = layer.window;
      const double taps =
          static_cast<double>(layer.in_channels / std::max(w.groups, 1) * w.kernel_h * w.kernel_w);
      p.Convolution(in, out, static_cast<double>(layer.params), 2 * taps * out, layer.attrs, true);
      break;
    }
    case LayerKind::kLinear:  // rows * in_features inputs, each multiplied by out_features
      p.Linear(in, out, static_cast<double>(layer.params),
               2 * in * static_cast<double>(layer.out_channels), layer.attrs.bias);
      break;
    case LayerKind::kResNetBottleneck:
      BottleneckPasses(layer, p);
      break;
    case LayerKind::kTransformerPooler: {  // the first token's row: one GEMM row and tanh
      const double d = static_cast<double>(layer.out_channels);
      p.Linear(d, d, static_cast<double>(layer.params), 2 * d * d, true);
      p.Forward(PassBuilder::Stream(2 * kBoundaryBytes * b * d));
      p.Backward(PassBuilder::Stream(3 * kBoundaryBytes * b * d));
      // The input gradient is the whole {T,D} input, zero but for the first token's row.
      p.Backward(PassBuilder::Stream(kBoundaryBytes * b * in));
      break;
    }
    case LayerKind::kReLU:
    case LayerKind::kGELU:
      p.Forward(PassBuilder::Stream(2 * kBoundaryBytes * b * in));
      p.Backward(PassBuilder::Stream(3 * kBoundaryBytes * b * in));
      break;
    case LayerKind::kDropout:  // plus a one-byte mask per item, written then read
      p.Forward(PassBuilder::Stream((2 * kBoundaryBytes + 1) * b * in));
      p.Backward(PassBuilder::Stream((2 * kBoundaryBytes + 1) * b * in));
      break;
    case LayerKind::kBatchNorm2d:
    case LayerKind::kLayerNorm:
      p.Forward(
          PassBuilder::Structured(kNormForwardPasses * kBoundaryBytes * b * in, kNormKernels));
      p.Backward(
          PassBuilder::Structured(kNormBackwardPasses * kBoundaryBytes * b * in, kNormKernels));
      break;
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
      PoolPasses(layer, p);
      break;
    case LayerKind::kAdaptiveAvgPool2d:
      p.Forward(PassBuilder::Structured(kBoundaryBytes * b * (in + out)));
      p.Backward(PassBuilder::Structured(kBoundaryBytes * b * (in + out)));
      break;
    case LayerKind::kFlatten:  // a view: no kernel
      break;
    case LayerKind::kConcat:  // a copy forward; backward the slices are made contiguous
      p.Forward(PassBuilder::Stream(2 * kBoundaryBytes * b * out));
      p.Backward(PassBuilder::Stream(2 * kBoundaryBytes * b * out));
      break;
    case LayerKind::kAdd:  // backward hands the output gradient to every input unchanged
      p.Forward(PassBuilder::Stream(static_cast<double>(layer.inputs.size() + 1) * kBoundaryBytes *
                                    b * out));
      break;
    default:
      CompositePasses(layer, p);
      break;
  }
  return p.Take();
}

}  // namespace wavepool::planner::internal
