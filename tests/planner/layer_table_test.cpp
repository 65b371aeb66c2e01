// Layer tables (layer_table.h): worked examples, round trips of every zoo model, and every error.
#include "wavepool/planner/layer_table.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::wavepool::testing::StatusIs;

constexpr char kHeader[] =
    "name,type,inputs,input_shape,weight_shape,output_shape,attrs,params,time_us_per_sample\n";

// The header's example, with a comment, a blank line and a CRLF line end.
constexpr char kExample[] =
    "# a stem and a measured opaque head\n"
    "\n"
    "name,type,inputs,input_shape,weight_shape,output_shape,attrs,params,time_us_per_sample\r\n"
    "conv1,conv2d,,3x224x224,64x3x7x7,64x112x112,stride=2 pad=3 bias=0 batch_norm=1 relu=1,9536,\n"
    "pool1,maxpool2d,conv1,64x112x112,,64x56x56,kernel=3 stride=2 pad=1,,12.5\n"
    "head,opaque:my_head,pool1,64x56x56,1000x200704,1000,,,41.5\n";

TEST(LayerTable, ParsesTheDocumentedExample) {
  ASSERT_OK_AND_ASSIGN(ModelGraph model, ParseLayerTable("example", kExample));
  EXPECT_EQ(model.name(), "example");
  EXPECT_EQ(model.input_shape(), (TensorShape{{3, 224, 224}}));
  ASSERT_EQ(model.size(), 3);
  // conv1: 64*3*49 = 9,408 weights + BN 128; forward 2*147*64*12,544 + 6*802,816 = 240,844,800.
  const Layer& conv = model.layer(0);
  EXPECT_EQ(conv.kind, LayerKind::kConv2d);
  EXPECT_EQ(conv.params, 9536);
  EXPECT_DOUBLE_EQ(conv.forward_flops, 240844800.0);
  EXPECT_EQ(conv.window, (WindowAttrs{7, 7, 2, 2, 3, 3, 1}));
  EXPECT_FALSE(conv.measured_time_per_sample.has_value());
  const Layer& pool = model.layer(1);
  EXPECT_EQ(pool.window, (WindowAttrs{3, 3, 2, 2, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(ToMicros(*pool.measured_time_per_sample), 12.5);
  // An opaque layer keeps its type name; its parameters are the weight_shape product 1000*200,704,
  // and without FLOP columns it costs 0 FLOPs and relies on its measured time.
  const Layer& head = model.layer(2);
  EXPECT_EQ(head.kind, LayerKind::kOpaque);
  EXPECT_EQ(head.opaque_type, "my_head");
  EXPECT_EQ(head.params, 200704000);
  EXPECT_DOUBLE_EQ(head.forward_flops, 0.0);
  EXPECT_DOUBLE_EQ(ToMicros(*head.measured_time_per_sample), 41.5);
}

TEST(LayerTable, ReadsQuotedFields) {
  // Spreadsheets may quote fields on export; a quoted comma still cannot be part of a name.
  const std::string text = std::string(kHeader) +
                           "\"conv1\",conv2d,,3x8x8,4x3x3x3,4x8x8,\"pad=1 bias=0\",,\n"
                           "\"head\",opaque:my_head,conv1,4x8x8,,10,,,3.5\n";
  ASSERT_OK_AND_ASSIGN(ModelGraph model, ParseLayerTable("quoted", text));
  ASSERT_EQ(model.size(), 2);
  EXPECT_FALSE(model.layer(0).attrs.bias);
  EXPECT_EQ(model.layer(1).name, "head");
  EXPECT_THAT(ParseLayerTable("quoted", std::string(kHeader) + "\"a,b\",relu,,4,,4,,,\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a name must be non-empty and hold no ','")));
}

TEST(LayerTable, AppliesDocumentedDefaults) {
  // Columns in another order. conv: no pad, stride 1 (8 -> 6), bias on by default (as
  // torch.nn.Conv2d): 8*3*9 + 8 = 224 params. pool: stride = kernel (6 -> 3). Opaque layers:
  // backward = 2 x forward with parameters, 1 x forward without.
  const char* text =
      "output_shape,name,attrs,inputs,type,input_shape,weight_shape,params,forward_flops\n"
      "8x6x6,conv,,,conv2d,3x8x8,8x3x3x3,,\n"
      "8x3x3,pool,kernel=2,conv,AvgPool2d,8x6x6,,,\n"
      "16,mix,,pool,opaque:custom,8x3x3,,160,1000\n"
      "16,act,,mix,Opaque:custom_act,16,,,50\n";
  ASSERT_OK_AND_ASSIGN(ModelGraph model, ParseLayerTable("defaults", text));
  EXPECT_EQ(model.layer(0).params, 224);
  EXPECT_TRUE(model.layer(0).attrs.bias);
  EXPECT_EQ(model.layer(1).kind, LayerKind::kAvgPool2d);
  EXPECT_EQ(model.layer(1).window.stride_h, 2);
  EXPECT_EQ(model.layer(2).params, 160);
  EXPECT_DOUBLE_EQ(model.layer(2).backward_flops, 2000.0);
  EXPECT_DOUBLE_EQ(model.layer(3).backward_flops, 50.0);
}

TEST(LayerTable, FormatWritesEveryColumn) {
  ASSERT_OK_AND_ASSIGN(ModelGraph cnn, BuiltinModel("cnn_tiny"));
  const std::string text = FormatLayerTable(cnn);
  EXPECT_THAT(text, HasSubstr("# wavepool layer table: model cnn_tiny, input 3x32x32, 8 layers\n"
                              "name,type,inputs,input_shape,weight_shape,output_shape,attrs,"
                              "params,forward_flops,backward_flops,time_us_per_sample\n"
                              "conv1,conv2d,,3x32x32,16x3x3x3,16x32x32,stride=1 pad=1 bias=1 "
                              "batch_norm=0 relu=0,448,,,\n"
                              "relu1,relu,conv1,16x32x32,,16x32x32,,0,,,\n"
                              "pool1,maxpool2d,relu1,16x32x32,,16x16x16,kernel=2 stride=2 pad=0,0"
                              ",,,\n"));
  EXPECT_THAT(text, HasSubstr("fc,linear,flatten,2048,10x2048,10,bias=1,20490,,,\n"));
}

// Reports the first layer that differs, so that a failed round trip says where.
void ExpectSameGraph(const ModelGraph& parsed, const ModelGraph& model) {
  ASSERT_EQ(parsed.size(), model.size()) << model.name();
  for (LayerId id = 0; id < model.size(); ++id) {
    ASSERT_TRUE(parsed.layer(id) == model.layer(id))
        << model.name() << ": layer " << id << " (" << model.layer(id).name << ") differs";
  }
  EXPECT_TRUE(parsed == model) << model.name();
}

TEST(LayerTable, EveryZooModelRoundTrips) {
  for (const std::string& name : BuiltinModelNames()) {
    ASSERT_OK_AND_ASSIGN(ModelGraph model, BuiltinModel(name));
    ASSERT_OK_AND_ASSIGN(ModelGraph parsed, ParseLayerTable(name, FormatLayerTable(model)));
    ExpectSameGraph(parsed, model);
  }
}

TEST(LayerTable, OpaqueLayersAndTimesRoundTrip) {
  ModelBuilder builder("timed", TensorShape{{3, 8, 8}});
  ModelBuilder::Conv conv = ModelBuilder::Square(4, 3, 2, 1);
  conv.pad_w = 0;  // asymmetric padding is written as PHxPW
  const LayerId c = builder.Conv2d("conv", ModelBuilder::kInput, conv);
  const LayerId o = builder.Opaque("odd", {c}, TensorShape{{7}}, 11, 1.0 / 3, 0.1, "odd_op");
  const LayerId e = builder.Embedding("emb", o, 50, 8, 0, 6);
  builder.SetMeasuredTime(c, Microseconds(0.1));
  builder.SetMeasuredTime(o, Seconds(1.0 / 3));
  builder.SetMeasuredTime(e, Seconds(2.5e-7));
  ASSERT_OK_AND_ASSIGN(ModelGraph model, std::move(builder).Build());
  const std::string text = FormatLayerTable(model);
  EXPECT_THAT(text, HasSubstr("stride=2 pad=1x0"));
  EXPECT_THAT(text, HasSubstr(",0.1\n"));  // the shortest text that reads back exactly
  EXPECT_THAT(text, HasSubstr("odd,opaque:odd_op,conv,"));  // an opaque layer keeps its type
  ASSERT_OK_AND_ASSIGN(ModelGraph parsed, ParseLayerTable("timed", text));
  ExpectSameGraph(parsed, model);
}

TEST(LayerTable, AHugeMeasuredTimeRoundTrips) {
  // 1.8446744073709549e+21 us: no decimal of the time in microseconds reads back to the same
  // seconds, but a neighbour of it does.
  const std::string text = std::string(kHeader) + "r,relu,,4,,4,,,1.8446744073709549e+21\n";
  ASSERT_OK_AND_ASSIGN(ModelGraph model, ParseLayerTable("t", text));
  ASSERT_OK_AND_ASSIGN(ModelGraph parsed, ParseLayerTable("t", FormatLayerTable(model)));
  EXPECT_TRUE(parsed == model) << FormatLayerTable(model);
}

TEST(LayerTable, OpaqueLayersAreWrittenAsSuch) {
  const std::string text = std::string(kHeader) +
                           "fc,linear,,16,4x16,4,,,\n"
                           "a,OPAQUE:Head_V2,fc,4,,4,,,1.5\n"  // the prefix in any case
                           "b,opaque,a,4,,2,,,2\n";            // a type name is optional
  ASSERT_OK_AND_ASSIGN(ModelGraph model, ParseLayerTable("m", text));
  EXPECT_EQ(model.layer(1).kind, LayerKind::kOpaque);
  EXPECT_EQ(model.layer(1).opaque_type, "Head_V2");  // its own case kept
  EXPECT_EQ(model.layer(2).kind, LayerKind::kOpaque);
  EXPECT_EQ(model.layer(2).opaque_type, "opaque");  // as ModelBuilder::Opaque's default
  const std::string formatted = FormatLayerTable(model);
  EXPECT_THAT(formatted, HasSubstr("\na,opaque:Head_V2,fc,"));
  EXPECT_THAT(formatted, HasSubstr("\nb,opaque,a,"));
  ASSERT_OK_AND_ASSIGN(ModelGraph parsed, ParseLayerTable("m", formatted));
  EXPECT_TRUE(parsed == model);
}

TEST(LayerTable, AnUnknownTypeIsAnErrorNamingTheClosestKnownTypes) {
  // A typo in a known type once became an opaque layer silently; now it names the row, the
  // column and what was probably meant.
  EXPECT_THAT(ParseLayerTable("m", std::string(kHeader) + "fc,linaer,,16,4x16,4,,,\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("layer table line 2, column type: unknown layer type "
                                       "'linaer'; known types: conv2d, linear, relu"),
                             EndsWith("; did you mean 'linear'?"))));
  EXPECT_THAT(ParseLayerTable("m", std::string(kHeader) + "c,conv2,,3x8x8,4x3x3x3,4x8x8,pad=1,,\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 2, column type: unknown layer type 'conv2'"),
                             EndsWith("; did you mean 'conv2d'?"))));
  EXPECT_THAT(ParseLayerTable("m", std::string(kHeader) + "h,my_head,,16,,4,,,\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column type: unknown layer type 'my_head'; known types: "
                                 "conv2d")));
  EXPECT_THAT(ParseLayerTable("m", std::string(kHeader) + "h,my_head,,16,,4,,,\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("or opaque:<name> for a layer the planner should not "
                                       "derive"),
                             Not(HasSubstr("did you mean")))));
  EXPECT_THAT(ParseLayerTable("m", std::string(kHeader) + "h,opaque: ,,16,,4,,,\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column type: 'opaque:' names no type; write "
                                 "opaque:<name>")));
}

constexpr char kConv[] = "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1,,\n";  // line 2
constexpr char kRelu[] = "relu1,relu,conv1,4x8x8,,4x8x8,,,\n";           // line 3

TEST(LayerTable, AnAttributeWhoseSizesOverflowIsNamedWithItsLineAndLayer) {
  const struct {
    const char* row;
    const char* attribute;
  } cases[] = {
      {"ff,transformer_feedforward,,128x768,,128x768,intermediate=4611686018427387904,,",
       "intermediate 4611686018427387904"},
      {"ff,transformer_feedforward,,128x768,,128x768,intermediate=3002399751580331,,",
       "intermediate 3002399751580331"},  // d x i fits in 64 bits but passes 2^61 items
      {"emb,embedding,,128,,128x768,vocab=9223372036854775000 positions=512,,",
       "vocab 9223372036854775000"},
      {"b,resnet_bottleneck,,64x56x56,,256x56x56,planes=4611686018427387904,,",
       "planes 4611686018427387904"},
      {"b,resnet_bottleneck,,64x56x56,,256x56x56,planes=1099511627776 base_width=1048576,,",
       "planes 1099511627776 with base_width 1048576"},
      {"c,conv2d,,3x65536x65536,1099511627776x3x1x1,4x4x4,,,",
       "out_channels 1099511627776 with a 1x1 kernel"},
      {"fc,linear,,2147483648,2147483648x2147483648,2147483648,,,", "out_features 2147483648"},
      {"a,transformer_attention,,2147483648x2,,2147483648x2,heads=2,,", "heads 2"},
      {"h,opaque,,16,,2305843009213693952,,,", "output shape [2305843009213693952]"},
      {"h,opaque,,16,,4,,4611686018427387904,", "params 4611686018427387904"},
  };
  for (const auto& c : cases) {
    const std::string name = std::string(c.row).substr(0, std::string(c.row).find(','));
    EXPECT_THAT(ParseLayerTable("m", std::string(kHeader) + c.row + "\n"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("layer table line 2"), HasSubstr("layer " + name + " ("),
                               HasSubstr(c.attribute), HasSubstr("exceed"))))
        << c.row;
  }
  EXPECT_THAT(ParseLayerTable("m", std::string(kHeader) +
                                       "x,relu,,4611686018427387904,,4611686018427387904,,,\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("layer table line 2"),
                             HasSubstr("input shape [4611686018427387904]"))));
}

TEST(LayerTable, RejectsBadTablesNamingLineAndColumn) {
  const std::string h = kHeader;
  const std::string conv = kConv;
  const std::string relu = kRelu;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "layer table: no header line"},
      {"# only a comment\n", "layer table: no header line"},
      {"name,type,inputs,input_shape\n",
       "layer table line 1: missing required column 'output_shape'"},
      {"name,type,inputs,input_shape,output_shape,colour\n",
       "layer table line 1: unknown column 'colour'; the columns are name, type"},
      {"name,type,inputs,input_shape,output_shape,name\n", "column 'name' appears twice"},
      {h, "layer table line 1: the header is not followed by any layer row"},
      {h + "conv1,conv2d,,3x8x8\n",
       "layer table line 2: 4 fields, but the header (line 1) names 9 columns"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,\"pad=1,,\n",
       "layer table line 2: unterminated quote in field 7"},
      {h + ",relu,,4,,4,,,\n", "layer table line 2, column name: is empty"},
      {h + "r,,,4,,4,,,\n", "layer table line 2, column type: is empty"},
      {h + conv + "conv1,relu,conv1,4x8x8,,4x8x8,,,\n",
       "layer table line 3, column name: duplicate layer name 'conv1' (first defined on line 2)"},
      {h + conv + "relu1,relu,conv9,4x8x8,,4x8x8,,,\n",
       "layer table line 3, column inputs: unknown input 'conv9'"},
      {h + conv + "cat,concat,conv1;conv1,4x8x8,,8x8x8,,,\n",
       "line 3, column inputs: input 'conv1' is listed twice"},
      {h + conv + relu + "r3,relu,conv1;relu1,4x8x8,,4x8x8,,,\n",
       "line 4, column inputs: a relu takes one input, got 2"},
      {h + "conv1,conv2d,,3x0x8,4x3x3x3,4x8x8,,,\n",
       "line 2, column input_shape: dimension '0' of '3x0x8' is not a positive integer"},
      {h + "conv1,conv2d,,3xx8,4x3x3x3,4x8x8,,,\n", "dimension '' of '3xx8'"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,,,,\n",
       "line 2, column output_shape: is empty; a shape looks like 3x224x224"},
      {h + conv + "relu1,relu,conv1,4x8x9,,4x8x9,,,\n",
       "line 3, column input_shape: is [4,8,9] but its first input 'conv1' outputs [4,8,8]"},
      {h + conv + "other,relu,,3x8x9,,3x8x9,,,\n",
       "line 3, column input_shape: is [3,8,9] but the model input (defined on line 2) is "
       "[3,8,8]"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,,,\n",
       "line 2, column output_shape: is [4,8,8] but a conv2d with this input and these settings "
       "gives [4,6,6]"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1,100,\n",
       "line 2, column params: is 100 but a conv2d with these shapes and settings has 112"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1,abc,\n",
       "line 2, column params: 'abc' is not an integer >= 0"},
      {"name,type,inputs,input_shape,output_shape,forward_flops\nr,relu,,4,4,10\n",
       "line 2, column forward_flops: only opaque layers take FLOPs; a relu's follow from its "
       "shapes"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1,,-3\n",
       "line 2, column time_us_per_sample: '-3' is not a finite number >= 0"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1,,fast\n", "'fast' is not a finite number"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1 dilation=2,,\n",
       "line 2, column attrs: unknown key 'dilation' for a conv2d; valid keys: stride, pad, bias, "
       "batch_norm, relu"},
      {h + conv + "relu1,relu,conv1,4x8x8,,4x8x8,inplace=1,,\n",
       "line 3, column attrs: a relu takes no attrs, got 'inplace'"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad,,\n", "column attrs: 'pad' is not key=value"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1 pad=1,,\n", "key 'pad' is given twice"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1 bias=yes,,\n",
       "column attrs: bias=yes: a boolean is 0, 1, false or true"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1 stride=two,,\n",
       "column attrs: stride=two: the value is not an integer"},
      {h + "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1x2x3,,\n", "pad=1x2x3: expected N or HxW"},
      {h + conv + "pool,maxpool2d,conv1,4x8x8,,4x4x4,stride=2,,\n",
       "line 3, column attrs: a maxpool2d needs kernel=..."},
      {h + conv + "relu1,relu,conv1,4x8x8,4,4x8x8,,,\n",
       "line 3, column weight_shape: a relu takes none"},
      {h + "conv1,conv2d,,3x8x8,,4x8x8,pad=1,,\n",
       "line 2, column weight_shape: a conv2d needs Cout x Cin/groups x kh x kw"},
      {h + "conv1,conv2d,,3x8x8,4x2x3x3,4x8x8,pad=1,,\n",
       "column weight_shape: its 2nd dim (Cin/groups = 2) must divide the input channels of "
       "[3,8,8]"},
      {h + "fc,linear,,16,10x15,10,,,\n",
       "line 2, column weight_shape: a linear layer needs out x in, with in = the input's last "
       "dim (16)"},
      {h + "o,opaque:thing,,16,4x4,16,,17,\n",
       "line 2, column params: is 17 but weight_shape [4,4] holds 16"},
      {h + conv + "p,adaptiveavgpool2d,conv1,4x8x8,,4,,,\n",
       "line 3, column output_shape: an adaptiveavgpool2d writes C x out_h x out_w"},
      {h + "conv1,conv2d,,3x2x2,4x3x3x3,4x1x1,,,\n",
       "layer table line 2: model m, layer conv1 (conv2d): kernel 3x3 is larger than the padded "
       "input 2x2"},
      {h + conv + "half,maxpool2d,conv1,4x8x8,,4x4x4,kernel=2,,\n" +
           "cat,concat,conv1;half,4x8x8,,8x8x8,,,\n",
       "layer table line 4: model m, layer cat (concat): input half [4,4,4] does not match"},
      {h + conv + "a,relu,conv1,4x8x8,,4x8x8,,,\n" + "b,relu,conv1,4x8x8,,4x8x8,,,\n",
       "layer table lines 3 and 4: layers 'a' and 'b' are both unused by later rows; a model has "
       "exactly one output layer"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_THAT(ParseLayerTable("m", text),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << text;
  }
}

}  // namespace
}  // namespace wavepool::planner
