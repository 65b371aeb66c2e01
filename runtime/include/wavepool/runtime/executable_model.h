// LibTorch modules built from the planner's model graph (planner/model.h), one module per layer,
// so that the layers a Plan names are exactly the modules a worker runs. The graph is the one
// source of truth: shapes and parameter counts equal the planner's (tests/runtime prove it for
// every built-in model).
//
// Initial weights are a pure function of (seed, layer name): every rank that builds a layer gets
// the same weights without talking to another, whichever other layers it builds, and a one-process
// reference run builds the same model. The executors still broadcast the initial weights
// (docs/runtime.md), which makes a rank started from a stale binary harmless.
//
// Thread safety: an ExecutableModel is not synchronised; one thread trains it (tick-tock's two
// waves each own one). Ownership: it owns its modules and shares the graph.
#ifndef WAVEPOOL_RUNTIME_EXECUTABLE_MODEL_H_
#define WAVEPOOL_RUNTIME_EXECUTABLE_MODEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"
#include "wavepool/runtime/sample_spec.h"

namespace wavepool::runtime {

// What a layer may need beyond its inputs. Rows of a batch are samples of the step's global
// batch, first_sample onwards, so that anything random about a sample (a dropout mask) is a pure
// function of (seed, layer, step, sample) and does not depend on how the batch is split.
struct ForwardContext {
  torch::Tensor labels;           // {rows} int64: read by loss layers only
  std::int64_t step = 0;          // the global iteration
  std::int64_t first_sample = 0;  // index in the step's global batch of row 0
};

// One planner layer as a LibTorch module.
//
// BatchNorm normalises over the rows it is given (each rank's block of its stage), as PyTorch's
// BatchNorm under DistributedDataParallel does; everything else is independent of the split.
// Dropout (p = 0.5, the graph carries no p) draws each row's mask from (seed, layer, step,
// first_sample + row) and is the identity in eval mode.
class LayerModule : public torch::nn::Module {
 public:
  // `inputs` holds one batch-first tensor per entry of Layer::inputs, in that order; a layer
  // without inputs gets the model input. A loss layer (kSoftmaxCrossEntropy) returns each
  // sample's loss, {rows, 1}.
  virtual torch::Tensor Forward(const std::vector<torch::Tensor>& inputs,
                                const ForwardContext& context) = 0;
};

// The input of `graph` (the tensor a data source produces per sample) and its label range: the
// sink's output features, or the input features of a kSoftmaxCrossEntropy sink. The input is
// token ids (vocabulary: the embedding's in_channels) when the layers reading it are kEmbedding,
// float features of graph.input_shape() otherwise. InvalidArgument naming the model when the
// graph has no classifier output (a sink whose output is not {N}) or mixes embeddings with other
// layers at its input.
absl::StatusOr<SampleSpec> SampleSpecOf(const planner::ModelGraph& graph);

class ExecutableModel {
 public:
  // Builds the modules of `layers` (every layer when empty; any order) of `graph`, in training
  // mode. InvalidArgument naming the layer when one is not executable (a kOpaque layer from a
  // layer table: "layer 'head' of model 'm' has type 'my_head', which the runtime cannot
  // execute"; a hand-made layer whose fields no module fits, such as a loss over {T,N}), or a
  // layer id is out of range or listed twice. Modules are on the CPU, in float32.
  static absl::StatusOr<std::unique_ptr<ExecutableModel>> Build(
      std::shared_ptr<const planner::ModelGraph> graph, const std::vector<planner::LayerId>& layers,
      std::uint64_t seed);

  const planner::ModelGraph& graph() const { return *graph_; }
  const std::shared_ptr<const planner::ModelGraph>& shared_graph() const { return graph_; }
  // Built layers, in graph (topological) order.
  const std::vector<planner::LayerId>& layers() const { return layers_; }
  bool Has(planner::LayerId id) const;

  // REQUIRES: Has(id). The module itself: its Forward skips the checks below.
  LayerModule& layer(planner::LayerId id);
  // Runs layer `id` on `inputs`. Throws c10::Error, as LibTorch's own ops do, naming the layer
  // and the model when `inputs` are not the layer's count or per-sample shapes ({rows, ...the
  // planner's shape}), or a loss layer gets no labels; the caller converts it to a Status at its
  // boundary. REQUIRES: Has(id).
  torch::Tensor Forward(planner::LayerId id, const std::vector<torch::Tensor>& inputs,
                        const ForwardContext& context);

  // Trainable parameters of one built layer / of every built layer (in layer order, each
  // layer's in registration order). The same order on every rank that built the same layers.
  std::vector<torch::Tensor> Parameters(planner::LayerId id) const;
  std::vector<torch::Tensor> Parameters() const;
  // "<layer name>.<parameter or buffer path>" -> tensor, for checkpoints and tests; buffers are
  // BatchNorm's running statistics.
  std::vector<std::pair<std::string, torch::Tensor>> NamedParameters() const;
  std::vector<std::pair<std::string, torch::Tensor>> NamedBuffers() const;
  std::int64_t ParameterCount() const;

  // Training mode (BatchNorm statistics, dropout) for every built layer.
  void Train(bool on);
  // Moves every built layer's parameters and buffers to `device` on the current stream, in
  // place: tensors Parameters() returned before stay the layers' parameters. Throws c10::Error
  // as LibTorch does (out of device memory).
  void To(const torch::Device& device);

  ~ExecutableModel();
  ExecutableModel(const ExecutableModel&) = delete;
  ExecutableModel& operator=(const ExecutableModel&) = delete;

 private:
  ExecutableModel(std::shared_ptr<const planner::ModelGraph> graph,
                  std::vector<planner::LayerId> layers);

  std::shared_ptr<const planner::ModelGraph> graph_;
  std::vector<planner::LayerId> layers_;
  std::vector<std::shared_ptr<LayerModule>> modules_;  // by LayerId; null when not built
};

// The sum over the batch of each sample's loss: `sink_output` is the sink's output for the batch
// (logits {batch, classes}, or per-sample losses {batch, 1} from a kSoftmaxCrossEntropy sink).
// Summed, not averaged, so that ranks holding disjoint blocks of a global batch add up to the
// global sum; the executors divide by the global batch.
torch::Tensor LossSum(const planner::Layer& sink, const torch::Tensor& sink_output,
                      const torch::Tensor& labels);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_EXECUTABLE_MODEL_H_
