// Hand-built models, a FLOP-proportional compute cost and a round-figure network for the oracle
// tests, so that every prediction can be checked by hand.
#ifndef WAVEPOOL_TESTS_PLANNER_ORACLE_TEST_MODELS_H_
#define WAVEPOOL_TESTS_PLANNER_ORACLE_TEST_MODELS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner::oracle_test {

// Forward and backward take `seconds_per_flop` per FLOP and sample: linear in the batch.
class FlopCostModel : public ComputeCostModel {
 public:
  explicit FlopCostModel(double seconds_per_flop = 1e-9) : seconds_per_flop_(seconds_per_flop) {}
  LayerTime Time(const Layer& layer, std::int64_t per_gpu_batch) const override {
    const double b = static_cast<double>(per_gpu_batch);
    return {Seconds(layer.forward_flops * b * seconds_per_flop_),
            Seconds(layer.backward_flops * b * seconds_per_flop_)};
  }
  std::string Description() const override { return "FLOP-proportional test model"; }

 private:
  double seconds_per_flop_;
};

// 4 GPUs and 2 NICs per node; 10 us and 1 GB/s (1 ns/B) inside a node, 100 us and 100 MB/s
// (10 ns/B) per NIC between nodes; all-reduce always uses the ring (threshold 0).
inline NetworkModel RoundNetwork() {
  NetworkModel network;
  network.name = "round";
  network.gpus_per_node = 4;
  network.nics_per_node = 2;
  network.intra_node = Link{Microseconds(10), 1e-9};
  network.inter_node = Link{Microseconds(100), 1e-8};
  network.ring_threshold_bytes = 0;
  return network;
}

inline Layer MakeLayer(int id, std::string name, LayerKind kind, std::vector<LayerId> inputs,
                       TensorShape input, TensorShape output) {
  Layer layer;
  layer.id = id;
  layer.name = std::move(name);
  layer.kind = kind;
  layer.inputs = std::move(inputs);
  layer.input = std::move(input);
  layer.output = std::move(output);
  return layer;
}

// conv1 (3x3, pad 1, 4 -> 8 channels on 8x8) -> relu1 (in place) -> fc (512 -> 10).
//   conv1: |x| = 256, |y| = 512, |w| = 4*8*9 + 8 = 296, forward 2*4*8*9*64 = 36864 FLOPs,
//          backward 73728.
//   relu1: |x| = |y| = 512, no weights, 512 FLOPs each way, reuses its input's memory.
//   fc:    |x| = 512, |y| = 10, |w| = 512*10 + 10 = 5130, forward 10240, backward 20480.
// Sum |w| = 5426; per sample 47616 + 94720 = 142336 FLOPs (142.336 us at 1 ns/FLOP).
// `kernel` changes conv1's window (5: halo 2 rows) and its weights (4*8*25 + 8).
inline ModelGraph Tiny3(int kernel = 3) {
  std::vector<Layer> layers;
  Layer conv = MakeLayer(0, "conv1", LayerKind::kConv2d, {}, {{4, 8, 8}}, {{8, 8, 8}});
  conv.window.kernel_h = conv.window.kernel_w = kernel;
  conv.window.pad_h = conv.window.pad_w = (kernel - 1) / 2;
  conv.in_channels = 4;
  conv.out_channels = 8;
  conv.params = 4 * 8 * kernel * kernel + 8;
  conv.forward_flops = 36864;
  conv.backward_flops = 73728;
  layers.push_back(conv);
  Layer relu = MakeLayer(1, "relu1", LayerKind::kReLU, {0}, {{8, 8, 8}}, {{8, 8, 8}});
  relu.in_channels = relu.out_channels = 8;
  relu.forward_flops = relu.backward_flops = 512;
  relu.reuses_input_memory = true;
  layers.push_back(relu);
  Layer fc = MakeLayer(2, "fc", LayerKind::kLinear, {1}, {{8, 8, 8}}, {{10}});
  fc.in_channels = 512;
  fc.out_channels = 10;
  fc.params = 5130;
  fc.forward_flops = 10240;
  fc.backward_flops = 20480;
  layers.push_back(fc);
  auto graph = ModelGraph::Create("tiny3", {{4, 8, 8}}, std::move(layers));
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

// n identical 3x3 convolutions, 8 -> 8 channels on 16x16: |y| = 2048, |w| = 584, forward
// 2*8*8*9*256 = 294912 FLOPs, backward 589824.
inline ModelGraph ConvChain(int n) {
  std::vector<Layer> layers;
  for (int i = 0; i < n; ++i) {
    Layer conv = MakeLayer(i, "conv" + std::to_string(i), LayerKind::kConv2d,
                           i == 0 ? std::vector<LayerId>{} : std::vector<LayerId>{i - 1},
                           {{8, 16, 16}}, {{8, 16, 16}});
    conv.window.kernel_h = conv.window.kernel_w = 3;
    conv.window.pad_h = conv.window.pad_w = 1;
    conv.in_channels = conv.out_channels = 8;
    conv.params = 584;
    conv.forward_flops = 294912;
    conv.backward_flops = 589824;
    layers.push_back(conv);
  }
  auto graph = ModelGraph::Create("conv_chain", {{8, 16, 16}}, std::move(layers));
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

}  // namespace wavepool::planner::oracle_test

#endif  // WAVEPOOL_TESTS_PLANNER_ORACLE_TEST_MODELS_H_
