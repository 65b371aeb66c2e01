// Small CPU-friendly models for tests and local mode.
#include "wavepool/planner/model_builder.h"
#include "zoo/zoo_internal.h"

namespace wavepool::planner::internal {
namespace {

constexpr LayerId kInput = ModelBuilder::kInput;

ModelBuilder::Conv BnReluConv(std::int64_t out, int kernel_h, int kernel_w, int pad_h, int pad_w) {
  ModelBuilder::Conv conv;
  conv.out_channels = out;
  conv.kernel_h = kernel_h;
  conv.kernel_w = kernel_w;
  conv.pad_h = pad_h;
  conv.pad_w = pad_w;
  conv.batch_norm = conv.relu = true;
  return conv;
}

}  // namespace

// A 3-layer perceptron over 64 features: 64 -> 128 -> 128 -> 10.
absl::StatusOr<ModelGraph> BuildMlpTiny() {
  ModelBuilder builder("mlp_tiny", TensorShape{{64}});
  LayerId x = builder.Linear("fc1", kInput, 128);
  x = builder.ReLU("relu1", x);
  x = builder.Linear("fc2", x, 128);
  x = builder.ReLU("relu2", x);
  builder.Linear("fc3", x, 10);
  return std::move(builder).Build();
}

// A LeNet-like chain on 3x32x32: two conv/ReLU/max-pool stages and a classifier.
absl::StatusOr<ModelGraph> BuildCnnTiny() {
  ModelBuilder builder("cnn_tiny", TensorShape{{3, 32, 32}});
  ModelBuilder::Conv conv1 = ModelBuilder::Square(16, 3, 1, 1);
  ModelBuilder::Conv conv2 = ModelBuilder::Square(32, 3, 1, 1);
  conv1.bias = conv2.bias = true;
  LayerId x = builder.Conv2d("conv1", kInput, conv1);
  x = builder.ReLU("relu1", x);
  x = builder.MaxPool2d("pool1", x, 2, 2);
  x = builder.Conv2d("conv2", x, conv2);
  x = builder.ReLU("relu2", x);
  x = builder.MaxPool2d("pool2", x, 2, 2);
  x = builder.Flatten("flatten", x);
  builder.Linear("fc", x, 10);
  return std::move(builder).Build();
}

// Two fork/join blocks on 3x32x32, for the burst search's graph reduction:
//   block1 (Inception-like, joined by a Concat): a 1x1 branch; a 1x1 branch that forks again
//   into 1x3 and 3x1 convs joined by their own Concat (a nested fork); an avg-pool + 1x1 branch.
//   block2 (residual, joined by an Add): two 3x3 convs on one branch, nothing (the identity) on
//   the other.
absl::StatusOr<ModelGraph> BuildBranchyTiny() {
  ModelBuilder builder("branchy_tiny", TensorShape{{3, 32, 32}});
  const LayerId stem = builder.Conv2d("stem", kInput, BnReluConv(16, 3, 3, 1, 1));
  const LayerId b1 = builder.Conv2d("block1.branch1x1", stem, BnReluConv(8, 1, 1, 0, 0));
  const LayerId b2 = builder.Conv2d("block1.branch3x3_1", stem, BnReluConv(8, 1, 1, 0, 0));
  const LayerId b2a = builder.Conv2d("block1.branch3x3_2a", b2, BnReluConv(8, 1, 3, 0, 1));
  const LayerId b2b = builder.Conv2d("block1.branch3x3_2b", b2, BnReluConv(8, 3, 1, 1, 0));
  const LayerId b2cat = builder.Concat("block1.branch3x3_concat", {b2a, b2b});
  const LayerId pool = builder.AvgPool2d("block1.branch_pool_avg", stem, 3, 1, 1);
  const LayerId b3 = builder.Conv2d("block1.branch_pool", pool, BnReluConv(8, 1, 1, 0, 0));
  const LayerId block1 = builder.Concat("block1.concat", {b1, b2cat, b3});  // 32 channels
  const LayerId down = builder.MaxPool2d("pool", block1, 2, 2);             // 32x16x16
  const LayerId c1 = builder.Conv2d("block2.conv1", down, BnReluConv(32, 3, 3, 1, 1));
  ModelBuilder::Conv conv2 = BnReluConv(32, 3, 3, 1, 1);
  conv2.relu = false;
  const LayerId c2 = builder.Conv2d("block2.conv2", c1, conv2);
  const LayerId sum = builder.Add("block2.add", {c2, down});
  LayerId x = builder.ReLU("block2.relu", sum);
  x = builder.AdaptiveAvgPool2d("avgpool", x, 1, 1);
  x = builder.Flatten("flatten", x);
  builder.Linear("fc", x, 10);
  return std::move(builder).Build();
}

}  // namespace wavepool::planner::internal
