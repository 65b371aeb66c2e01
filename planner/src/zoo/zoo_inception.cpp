// torchvision's Inception3 (aux_logits=False) with its real fork/join structure, each
// BasicConv2d (conv, BatchNorm eps 0.001, ReLU) one layer. Layers are added in torchvision's
// forward order, which is the order of DeepPool's profile rows (94 convs and 13 pools);
// deeppool-burst-parallel §6, Table 3: 11 fork/join blocks.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/model_builder.h"
#include "zoo/zoo_internal.h"

namespace wavepool::planner::internal {
namespace {

// Adds BasicConv2d layers of one Inception block, named "<block>.<branch>".
class BlockBuilder {
 public:
  BlockBuilder(ModelBuilder& builder, std::string block) : b_(builder), block_(std::move(block)) {}

  std::string Name(const std::string& part) const { return absl::StrCat(block_, ".", part); }

  // A square kernel.
  LayerId Conv(const std::string& part, LayerId in, std::int64_t out, int kernel, int stride = 1,
               int pad = 0) {
    return Conv(part, in, out, kernel, kernel, stride, pad, pad);
  }
  LayerId Conv(const std::string& part, LayerId in, std::int64_t out, int kernel_h, int kernel_w,
               int stride, int pad_h, int pad_w) {
    ModelBuilder::Conv conv;
    conv.out_channels = out;
    conv.kernel_h = kernel_h;
    conv.kernel_w = kernel_w;
    conv.stride = stride;
    conv.pad_h = pad_h;
    conv.pad_w = pad_w;
    conv.batch_norm = conv.relu = true;
    return b_.Conv2d(Name(part), in, conv);
  }
  // 1x7 / 7x1 (and 1x3 / 3x1) factorised convolutions, padded to keep the size.
  LayerId Row(const std::string& part, LayerId in, std::int64_t out, int k) {
    return Conv(part, in, out, 1, k, 1, 0, k / 2);
  }
  LayerId Column(const std::string& part, LayerId in, std::int64_t out, int k) {
    return Conv(part, in, out, k, 1, 1, k / 2, 0);
  }
  // F.avg_pool2d(x, 3, stride=1, padding=1) followed by the branch_pool projection.
  LayerId PoolProjection(LayerId in, std::int64_t out) {
    const LayerId pool = b_.AvgPool2d(Name("branch_pool_avg"), in, 3, 1, 1);
    return Conv("branch_pool", pool, out, 1);
  }
  LayerId Concat(const std::string& part, const std::vector<LayerId>& ins) {
    return b_.Concat(Name(part), ins);
  }

 private:
  ModelBuilder& b_;
  std::string block_;
};

LayerId InceptionA(ModelBuilder& builder, const std::string& name, LayerId x,
                   std::int64_t pool_features) {
  BlockBuilder b(builder, name);
  const LayerId b1 = b.Conv("branch1x1", x, 64, 1);
  LayerId b5 = b.Conv("branch5x5_1", x, 48, 1);
  b5 = b.Conv("branch5x5_2", b5, 64, 5, 1, 2);
  LayerId b3 = b.Conv("branch3x3dbl_1", x, 64, 1);
  b3 = b.Conv("branch3x3dbl_2", b3, 96, 3, 1, 1);
  b3 = b.Conv("branch3x3dbl_3", b3, 96, 3, 1, 1);
  const LayerId pool = b.PoolProjection(x, pool_features);
  return b.Concat("concat", {b1, b5, b3, pool});
}

LayerId InceptionB(ModelBuilder& builder, const std::string& name, LayerId x) {
  BlockBuilder b(builder, name);
  const LayerId b3 = b.Conv("branch3x3", x, 384, 3, 2);
  LayerId dbl = b.Conv("branch3x3dbl_1", x, 64, 1);
  dbl = b.Conv("branch3x3dbl_2", dbl, 96, 3, 1, 1);
  dbl = b.Conv("branch3x3dbl_3", dbl, 96, 3, 2);
  const LayerId pool = builder.MaxPool2d(b.Name("branch_pool"), x, 3, 2);
  return b.Concat("concat", {b3, dbl, pool});
}

LayerId InceptionC(ModelBuilder& builder, const std::string& name, LayerId x,
                   std::int64_t channels_7x7) {
  BlockBuilder b(builder, name);
  const std::int64_t c7 = channels_7x7;
  const LayerId b1 = b.Conv("branch1x1", x, 192, 1);
  LayerId b7 = b.Conv("branch7x7_1", x, c7, 1);
  b7 = b.Row("branch7x7_2", b7, c7, 7);
  b7 = b.Column("branch7x7_3", b7, 192, 7);
  LayerId dbl = b.Conv("branch7x7dbl_1", x, c7, 1);
  dbl = b.Column("branch7x7dbl_2", dbl, c7, 7);
  dbl = b.Row("branch7x7dbl_3", dbl, c7, 7);
  dbl = b.Column("branch7x7dbl_4", dbl, c7, 7);
  dbl = b.Row("branch7x7dbl_5", dbl, 192, 7);
  const LayerId pool = b.PoolProjection(x, 192);
  return b.Concat("concat", {b1, b7, dbl, pool});
}

LayerId InceptionD(ModelBuilder& builder, const std::string& name, LayerId x) {
  BlockBuilder b(builder, name);
  LayerId b3 = b.Conv("branch3x3_1", x, 192, 1);
  b3 = b.Conv("branch3x3_2", b3, 320, 3, 2);
  LayerId b7 = b.Conv("branch7x7x3_1", x, 192, 1);
  b7 = b.Row("branch7x7x3_2", b7, 192, 7);
  b7 = b.Column("branch7x7x3_3", b7, 192, 7);
  b7 = b.Conv("branch7x7x3_4", b7, 192, 3, 2);
  const LayerId pool = builder.MaxPool2d(b.Name("branch_pool"), x, 3, 2);
  return b.Concat("concat", {b3, b7, pool});
}

// Two of its four branches end in a nested 2-way fork (1x3 and 3x1) joined by a Concat.
LayerId InceptionE(ModelBuilder& builder, const std::string& name, LayerId x) {
  BlockBuilder b(builder, name);
  const LayerId b1 = b.Conv("branch1x1", x, 320, 1);
  const LayerId b3 = b.Conv("branch3x3_1", x, 384, 1);
  const LayerId b3a = b.Row("branch3x3_2a", b3, 384, 3);
  const LayerId b3b = b.Column("branch3x3_2b", b3, 384, 3);
  const LayerId b3cat = b.Concat("branch3x3_concat", {b3a, b3b});
  LayerId dbl = b.Conv("branch3x3dbl_1", x, 448, 1);
  dbl = b.Conv("branch3x3dbl_2", dbl, 384, 3, 1, 1);
  const LayerId dbl_a = b.Row("branch3x3dbl_3a", dbl, 384, 3);
  const LayerId dbl_b = b.Column("branch3x3dbl_3b", dbl, 384, 3);
  const LayerId dbl_cat = b.Concat("branch3x3dbl_concat", {dbl_a, dbl_b});
  const LayerId pool = b.PoolProjection(x, 192);
  return b.Concat("concat", {b1, b3cat, dbl_cat, pool});
}

}  // namespace

absl::StatusOr<ModelGraph> BuildInceptionV3() {
  ModelBuilder builder("inception_v3", TensorShape{{3, 299, 299}});
  BlockBuilder stem(builder, "stem");
  LayerId x = stem.Conv("Conv2d_1a_3x3", ModelBuilder::kInput, 32, 3, 2);
  x = stem.Conv("Conv2d_2a_3x3", x, 32, 3);
  x = stem.Conv("Conv2d_2b_3x3", x, 64, 3, 1, 1);
  x = builder.MaxPool2d("stem.maxpool1", x, 3, 2);
  x = stem.Conv("Conv2d_3b_1x1", x, 80, 1);
  x = stem.Conv("Conv2d_4a_3x3", x, 192, 3);
  x = builder.MaxPool2d("stem.maxpool2", x, 3, 2);
  x = InceptionA(builder, "Mixed_5b", x, 32);
  x = InceptionA(builder, "Mixed_5c", x, 64);
  x = InceptionA(builder, "Mixed_5d", x, 64);
  x = InceptionB(builder, "Mixed_6a", x);
  x = InceptionC(builder, "Mixed_6b", x, 128);
  x = InceptionC(builder, "Mixed_6c", x, 160);
  x = InceptionC(builder, "Mixed_6d", x, 160);
  x = InceptionC(builder, "Mixed_6e", x, 192);
  x = InceptionD(builder, "Mixed_7a", x);
  x = InceptionE(builder, "Mixed_7b", x);
  x = InceptionE(builder, "Mixed_7c", x);
  x = builder.AdaptiveAvgPool2d("avgpool", x, 1, 1);
  x = builder.Dropout("dropout", x);
  x = builder.Flatten("flatten", x);
  builder.Linear("fc", x, 1000);
  return std::move(builder).Build();
}

}  // namespace wavepool::planner::internal
