// What a model reads and what it is trained against: SampleSpecOf and LossSum
// (executable_model.h).
#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/runtime/executable_model.h"

namespace wavepool::runtime {
namespace {

namespace F = torch::nn::functional;
using planner::LayerKind;

}  // namespace

absl::StatusOr<SampleSpec> SampleSpecOf(const planner::ModelGraph& graph) {
  SampleSpec spec;
  spec.shape = graph.input_shape().dims;
  // Token ids feed embeddings only: a model whose input layers mix embeddings with others would
  // need both ids and features.
  int readers = 0, embeddings = 0;
  for (const planner::Layer& layer : graph.layers()) {
    if (!layer.inputs.empty()) continue;
    ++readers;
    if (layer.kind != LayerKind::kEmbedding) continue;
    spec.vocabulary =
        embeddings++ == 0 ? layer.in_channels : std::min(spec.vocabulary, layer.in_channels);
  }
  if (embeddings > 0 && embeddings != readers) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", graph.name(), "': ", embeddings, " of the ", readers,
                     " layers that read the model input are embeddings; either all read token "
                     "ids or none does"));
  }
  if (embeddings > 0) spec.kind = SampleSpec::Kind::kTokens;
  const planner::Layer& sink = graph.layer(graph.sink());
  const bool loss = sink.kind == LayerKind::kSoftmaxCrossEntropy;
  const planner::TensorShape& scores = loss ? sink.input : sink.output;
  if (scores.dims.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", graph.name(), "' has no classifier output: its last layer '", sink.name, "' (",
        std::string(planner::LayerKindName(sink.kind)), ") ", loss ? "reads " : "writes ",
        scores.ToString(), " per sample, expected one row of class scores {classes}"));
  }
  spec.classes = scores.dims[0];
  return spec;
}

torch::Tensor LossSum(const planner::Layer& sink, const torch::Tensor& sink_output,
                      const torch::Tensor& labels) {
  if (sink.kind == LayerKind::kSoftmaxCrossEntropy) return sink_output.sum();
  return F::cross_entropy(sink_output, labels.to(sink_output.device(), torch::kLong),
                          F::CrossEntropyFuncOptions().reduction(torch::kSum));
}

}  // namespace wavepool::runtime
