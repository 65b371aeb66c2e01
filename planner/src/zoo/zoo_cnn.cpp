// VGG-16 and the ResNets, at the granularity of DeepPool's profile
// (data/profiles/deeppool_a100_layer_profiles.csv; deeppool-burst-parallel §6, Table 3).
#include <array>
#include <string>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/model_builder.h"
#include "zoo/zoo_internal.h"

namespace wavepool::planner::internal {
namespace {

constexpr LayerId kInput = ModelBuilder::kInput;
constexpr int kImageNetClasses = 1000;

// torchvision's ResNet stem: conv 7x7/2 (64) + BN, ReLU (fused or not), max-pool 3x3/2.
ModelBuilder::Conv StemConv(bool relu) {
  ModelBuilder::Conv conv = ModelBuilder::Square(64, 7, /*stride=*/2, /*pad=*/3);
  conv.batch_norm = true;
  conv.relu = relu;
  return conv;
}

LayerId ClassifierHead(ModelBuilder& builder, LayerId x) {
  x = builder.AdaptiveAvgPool2d("avgpool", x, 1, 1);
  x = builder.Flatten("flatten", x);
  return builder.Linear("fc", x, kImageNetClasses);
}

// One torchvision Bottleneck with its real fork/join: conv1 1x1, conv2 3x3/stride, conv3 1x1
// (BN fused into each, ReLU into the first two), the identity or a downsample conv, Add, ReLU.
LayerId ExplicitBottleneck(ModelBuilder& builder, const std::string& prefix, LayerId x,
                           std::int64_t planes, int stride) {
  const std::int64_t out = planes * 4;
  ModelBuilder::Conv conv1 = ModelBuilder::Square(planes, 1);
  ModelBuilder::Conv conv2 = ModelBuilder::Square(planes, 3, stride, 1);
  ModelBuilder::Conv conv3 = ModelBuilder::Square(out, 1);
  conv1.batch_norm = conv2.batch_norm = conv3.batch_norm = true;
  conv1.relu = conv2.relu = true;
  LayerId branch = builder.Conv2d(prefix + ".conv1", x, conv1);
  branch = builder.Conv2d(prefix + ".conv2", branch, conv2);
  branch = builder.Conv2d(prefix + ".conv3", branch, conv3);
  LayerId identity = x;
  if (stride != 1 || builder.OutputShape(x).dims.at(0) != out) {
    ModelBuilder::Conv downsample = ModelBuilder::Square(out, 1, stride);
    downsample.batch_norm = true;
    identity = builder.Conv2d(prefix + ".downsample", x, downsample);
  }
  const LayerId sum = builder.Add(prefix + ".add", {branch, identity});
  return builder.ReLU(prefix + ".relu", sum);
}

constexpr std::array<int, 4> kResNet50Blocks = {3, 4, 6, 3};
constexpr std::array<int, 4> kResNet101Blocks = {3, 4, 23, 3};

}  // namespace

// DeepPool's VGG-16: torchvision's vgg16 with every ReLU a layer of its own; the adaptive
// avg-pool (an identity at 224 px) and the two dropouts are absent from DeepPool's graph, so the
// chain has the profile's 37 layers. Parameters are unchanged: 138,357,544.
absl::StatusOr<ModelGraph> BuildVgg16() {
  ModelBuilder builder("vgg16", TensorShape{{3, 224, 224}});
  constexpr int kPool = 0;
  constexpr std::array<int, 18> kConfig = {64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
                                           kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
  LayerId x = kInput;
  int stage = 1, conv_in_stage = 1;
  for (int channels : kConfig) {
    if (channels == kPool) {
      x = builder.MaxPool2d(absl::StrCat("pool", stage), x, 2, 2);
      ++stage;
      conv_in_stage = 1;
      continue;
    }
    ModelBuilder::Conv conv = ModelBuilder::Square(channels, 3, 1, 1);
    conv.bias = true;
    const std::string suffix = absl::StrCat(stage, "_", conv_in_stage++);
    x = builder.Conv2d("conv" + suffix, x, conv);
    x = builder.ReLU("relu" + suffix, x);
  }
  x = builder.Flatten("flatten", x);
  x = builder.Linear("fc6", x, 4096);
  x = builder.ReLU("relu6", x);
  x = builder.Linear("fc7", x, 4096);
  x = builder.ReLU("relu7", x);
  builder.Linear("fc8", x, kImageNetClasses);
  return std::move(builder).Build();
}

// torchvision resnet50 with its residual forks and joins.
absl::StatusOr<ModelGraph> BuildResNet50() {
  ModelBuilder builder("resnet50", TensorShape{{3, 224, 224}});
  LayerId x = builder.Conv2d("conv1", kInput, StemConv(/*relu=*/true));
  x = builder.MaxPool2d("maxpool", x, 3, 2, 1);
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < kResNet50Blocks[stage]; ++block) {
      const int stride = (stage > 0 && block == 0) ? 2 : 1;
      x = ExplicitBottleneck(builder, absl::StrCat("layer", stage + 1, ".", block), x,
                             std::int64_t{64} << stage, stride);
    }
  }
  ClassifierHead(builder, x);
  return std::move(builder).Build();
}

// DeepPool's WRN-101-2: a chain of 39 layers, each bottleneck block one layer; the stem's ReLU is
// a layer of its own (the profile's ReLU2d row), its BatchNorm is fused into the conv.
absl::StatusOr<ModelGraph> BuildWideResNet101_2() {
  ModelBuilder builder("wide_resnet101_2", TensorShape{{3, 224, 224}});
  LayerId x = builder.Conv2d("conv1", kInput, StemConv(/*relu=*/false));
  x = builder.ReLU("relu", x);
  x = builder.MaxPool2d("maxpool", x, 3, 2, 1);
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < kResNet101Blocks[stage]; ++block) {
      const int stride = (stage > 0 && block == 0) ? 2 : 1;
      x = builder.ResNetBottleneck(absl::StrCat("layer", stage + 1, ".", block), x,
                                   std::int64_t{64} << stage, stride, /*base_width=*/128);
    }
  }
  ClassifierHead(builder, x);
  return std::move(builder).Build();
}

}  // namespace wavepool::planner::internal
