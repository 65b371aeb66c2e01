// Hand-built chains and a table-driven cost model for the memory-wave and data-movement tests:
// small enough that every byte and millisecond can be checked by hand.
#ifndef WAVEPOOL_TESTS_PLANNER_MEMORY_TEST_GRAPHS_H_
#define WAVEPOOL_TESTS_PLANNER_MEMORY_TEST_GRAPHS_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner::memory_testing {

// One layer of a test chain. Times in milliseconds: fixed + per_sample * batch^exponent.
struct TestLayer {
  std::string name;
  std::int64_t output_items = 1;  // per sample
  std::int64_t params = 0;
  bool in_place = false;
  std::int64_t internal_items = 0;
  double forward_ms = 0;
  double backward_ms = 0;
  double forward_ms_per_sample = 0;
  double backward_ms_per_sample = 0;
};

// A chain: layer i reads layer i-1 (layer 0 reads the model input of `input_items`).
inline absl::StatusOr<ModelGraph> MakeChain(const std::vector<TestLayer>& spec,
                                            std::int64_t input_items) {
  std::vector<Layer> layers;
  TensorShape previous{{input_items}};
  for (size_t i = 0; i < spec.size(); ++i) {
    Layer layer;
    layer.id = static_cast<LayerId>(i);
    layer.name = spec[i].name;
    layer.kind = spec[i].in_place ? LayerKind::kReLU : LayerKind::kLinear;
    if (i > 0) layer.inputs = {static_cast<LayerId>(i - 1)};
    layer.input = previous;
    layer.output = TensorShape{{spec[i].output_items}};
    layer.params = spec[i].params;
    layer.reuses_input_memory = spec[i].in_place;
    layer.internal_activation_items = spec[i].internal_items;
    previous = layer.output;
    layers.push_back(std::move(layer));
  }
  return ModelGraph::Create("test-chain", TensorShape{{input_items}}, std::move(layers));
}

// Looks a layer's times up in the TestLayer list by id.
class TableCost : public ComputeCostModel {
 public:
  explicit TableCost(std::vector<TestLayer> spec, double batch_exponent = 1.0)
      : spec_(std::move(spec)), batch_exponent_(batch_exponent) {}

  LayerTime Time(const Layer& layer, std::int64_t per_gpu_batch) const override {
    const TestLayer& t = spec_[static_cast<size_t>(layer.id)];
    const double scale = std::pow(static_cast<double>(per_gpu_batch), batch_exponent_);
    return {Seconds((t.forward_ms + t.forward_ms_per_sample * scale) * 1e-3),
            Seconds((t.backward_ms + t.backward_ms_per_sample * scale) * 1e-3)};
  }
  std::string Description() const override { return "test table"; }

 private:
  std::vector<TestLayer> spec_;
  double batch_exponent_;
};

inline Seconds Ms(double ms) { return Seconds(ms * 1e-3); }

// Matches an OK absl::StatusOr whose value matches `matcher`.
MATCHER_P(HoldsValue, matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "whose status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

}  // namespace wavepool::planner::memory_testing

#endif  // WAVEPOOL_TESTS_PLANNER_MEMORY_TEST_GRAPHS_H_
