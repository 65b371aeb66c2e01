// Runs the layer table fuzz check (layer_table_fuzz_target.h) in the normal test run, for a
// bounded budget (2 s or 100,000 inputs), on inputs mutated from a fixed seed: the zoo's models
// written as tables, a measured table with opaque layers, and rows whose attributes overflow.
// The budget bounds the run; nothing is timed.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/planner/layer_table_fuzz_target.h"
#include "tests/support/text_fuzz.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner::testing {
namespace {

using ::wavepool::testing::RunTextFuzz;
using ::wavepool::testing::TextFuzzReport;

constexpr char kHeader[] =
    "name,type,inputs,input_shape,weight_shape,output_shape,attrs,params,time_us_per_sample\n";

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds;
  for (const std::string& name : BuiltinModelNames()) {
    absl::StatusOr<ModelGraph> model = BuiltinModel(name);
    if (model.ok() && model->size() <= 64) seeds.push_back(FormatLayerTable(*model));
  }
  seeds.push_back(std::string(kHeader) +
                  "conv1,conv2d,,3x224x224,64x3x7x7,64x112x112,stride=2 pad=3 bias=0 batch_norm=1 "
                  "relu=1,9536,\n"
                  "pool1,maxpool2d,conv1,64x112x112,,64x56x56,kernel=3 stride=2 pad=1,,12.5\n"
                  "head,opaque:my_head,pool1,64x56x56,1000x200704,1000,,,41.5\n");
  for (const char* row :
       {"ff,transformer_feedforward,,128x768,,128x768,intermediate=4611686018427387904,,",
        "emb,embedding,,128,,128x768,vocab=9223372036854775000 positions=512,,",
        "b,resnet_bottleneck,,64x56x56,,256x56x56,planes=4611686018427387904,,",
        "c,conv2d,,3x65536x65536,1099511627776x3x1x1,4x4x4,,,",
        "fc,linear,,2147483648,2147483648x2147483648,2147483648,,,",
        "p,adaptiveavgpool2d,,3x4611686018427387903x1,,3x2147483647x2147483647,,,",
        "h,opaque,,16,,4,,4611686018427387904,"}) {
    seeds.push_back(std::string(kHeader) + row + "\n");
  }
  return seeds;
}

const std::vector<std::string> kDictionary = {",",
                                              ";",
                                              "x",
                                              "\n",
                                              "\"",
                                              "=",
                                              " ",
                                              "0",
                                              "-1",
                                              "2147483648",
                                              "4611686018427387904",
                                              "9223372036854775807",
                                              "18446744073709551616",
                                              "1e308",
                                              "nan",
                                              "stride=",
                                              "pad=",
                                              "kernel=",
                                              "planes=",
                                              "heads=",
                                              "intermediate=",
                                              "vocab=",
                                              "positions=",
                                              "base_width=",
                                              "opaque:",
                                              "conv2d",
                                              "linear",
                                              "concat",
                                              "add",
                                              "#"};

TEST(LayerTableFuzz, EverySeedIsHandled) {
  for (const std::string& seed : Seeds()) {
    bool accepted = false;
    EXPECT_EQ(CheckLayerTableInput(seed, &accepted), "") << seed;
  }
}

TEST(LayerTableFuzz, MutatedTablesNeverCrashAndWhatParsesRoundTrips) {
  const TextFuzzReport report = RunTextFuzz(
      Seeds(), kDictionary,
      [](std::string_view input, bool* accepted) { return CheckLayerTableInput(input, accepted); });
  ASSERT_EQ(report.failure, "") << "input: " << absl::CHexEscape(report.failing_input);
  // The mutations keep some inputs valid and break others: both paths ran.
  EXPECT_GT(report.passed, 0u);
  EXPECT_LT(report.passed, report.inputs);
  RecordProperty("inputs", static_cast<int>(report.inputs));
}

}  // namespace
}  // namespace wavepool::planner::testing
