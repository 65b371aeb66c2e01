// ParseLayerTable: reads the CSV format of layer_table.h. Each row becomes one ModelBuilder call,
// so a known layer type's shapes, parameters and FLOPs are derived exactly as for built-in
// models, and the row's output shape (and optional params) are checked against them.
#include "wavepool/planner/layer_table.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "layer_table/layer_table_internal.h"
#include "layer_table/layer_table_row.h"
#include "text/csv.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/planner/names.h"

namespace wavepool::planner {
namespace {

using internal::Attrs;
using internal::kLayerTableColumns;
using internal::kRequiredLayerTableColumns;
using internal::Row;
using internal::Trim;

constexpr LayerId kInput = ModelBuilder::kInput;

// What a row's `type` says: a layer kind, or an opaque layer and its type name.
struct RowType {
  LayerKind kind = LayerKind::kOpaque;
  std::string opaque_type;  // kOpaque only
};

// A known kind (any case), "opaque" or "opaque:<name>". Anything else is an error naming the
// closest known types: a typo must not silently become a layer the planner cannot derive.
absl::StatusOr<RowType> ReadType(const Row& row) {
  const std::string type(row.Get("type"));
  const std::string prefix(internal::kOpaquePrefix);
  if (type.empty()) {
    return row.Error("type", absl::StrCat("is empty; give a layer kind or ", prefix, "<name>"));
  }
  const std::string opaque(LayerKindName(LayerKind::kOpaque));
  if (absl::EqualsIgnoreCase(type, opaque)) return RowType{LayerKind::kOpaque, opaque};
  if (absl::StartsWithIgnoreCase(type, prefix)) {
    const std::string name(Trim(std::string_view(type).substr(prefix.size())));
    if (name.empty()) {
      return row.Error("type", absl::StrCat("'", type, "' names no type; write ", prefix,
                                            "<name>, e.g. ", prefix, "my_head"));
    }
    return RowType{LayerKind::kOpaque, name};
  }
  if (const std::optional<LayerKind> kind = ParseLayerKind(type); kind) return RowType{*kind, ""};
  const std::vector<std::string> known = internal::KnownLayerTypes();
  return row.Error("type", absl::StrCat("unknown layer type '", type, "'; known types: ",
                                        absl::StrJoin(known, ", "), ", or ", prefix,
                                        "<name> for a layer the planner should not derive (its "
                                        "row gives its params, FLOPs or measured time)",
                                        DidYouMean(type, known)));
}

absl::Status LineError(int line, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("layer table line ", line, ": ", message));
}

// The comma-separated fields of one line (RFC 4180 quoting), each trimmed.
absl::StatusOr<std::vector<std::string>> ReadFields(int line, std::string_view text) {
  absl::StatusOr<std::vector<std::string>> fields = csv::SplitRow(text);
  if (!fields.ok()) return LineError(line, std::string(fields.status().message()));
  for (std::string& field : *fields) field = std::string(Trim(field));
  return fields;
}

// The parser's state between rows. Errors name the line (and column) of the row at fault.
class TableParser {
 public:
  explicit TableParser(std::string_view model_name) : model_name_(model_name) {}

  absl::StatusOr<ModelGraph> Parse(std::string_view text);

 private:
  absl::Status ReadHeader(int line, std::string_view text);
  absl::Status AddRow(const Row& row);
  absl::StatusOr<std::vector<LayerId>> ReadInputs(const Row& row);
  absl::Status CheckInputShape(const Row& row, const std::vector<LayerId>& ins,
                               const TensorShape& input);
  absl::StatusOr<LayerId> AddKnown(const Row& row, LayerKind kind, const std::vector<LayerId>& ins,
                                   const TensorShape& output,
                                   const std::optional<TensorShape>& weight, const Attrs& attrs);
  absl::StatusOr<LayerId> AddConv(const Row& row, LayerId in,
                                  const std::optional<TensorShape>& weight, const Attrs& attrs);
  absl::StatusOr<LayerId> AddLinear(const Row& row, LayerId in,
                                    const std::optional<TensorShape>& weight, const Attrs& attrs);
  absl::StatusOr<LayerId> AddOpaque(const Row& row, const std::vector<LayerId>& ins,
                                    const TensorShape& output,
                                    const std::optional<TensorShape>& weight,
                                    const std::string& opaque_type);
  absl::Status CheckDerived(const Row& row, LayerId id, const TensorShape& output);
  absl::Status CheckSingleSink() const;

  std::string model_name_;
  std::vector<std::string> columns_;
  int header_line_ = 0;
  std::optional<ModelBuilder> builder_;
  int input_line_ = 0;                  // the first row, which defines the model input
  std::map<std::string, LayerId> ids_;  // layer name -> id
  std::vector<int> lines_;              // id -> line
  std::vector<int> successors_;         // id -> number of successors
};

absl::StatusOr<ModelGraph> TableParser::Parse(std::string_view text) {
  int line = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view content = Trim(text.substr(start, end - start));
    start = end + 1;
    ++line;
    if (content.empty() || content.front() == '#') continue;
    absl::Status status;
    if (columns_.empty()) {
      status = ReadHeader(line, content);
    } else {
      WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::string> fields, ReadFields(line, content));
      if (fields.size() != columns_.size()) {
        return LineError(line, absl::StrCat(fields.size(), " fields, but the header (line ",
                                            header_line_, ") names ", columns_.size(), " columns"));
      }
      status = AddRow(Row(line, &columns_, std::move(fields)));
    }
    WAVEPOOL_RETURN_IF_ERROR(status);
  }
  if (columns_.empty()) {
    return absl::InvalidArgumentError("layer table: no header line (e.g. name,type,inputs,...)");
  }
  if (!builder_) {
    return LineError(header_line_, "the header is not followed by any layer row");
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckSingleSink());
  absl::StatusOr<ModelGraph> graph = std::move(*builder_).Build();
  if (!graph.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("layer table: ", graph.status().message()));
  }
  return graph;
}

absl::Status TableParser::ReadHeader(int line, std::string_view text) {
  header_line_ = line;
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::string> columns, ReadFields(line, text));
  columns_ = std::move(columns);
  for (size_t i = 0; i < columns_.size(); ++i) {
    const std::string& column = columns_[i];
    if (std::find(kLayerTableColumns.begin(), kLayerTableColumns.end(), column) ==
        kLayerTableColumns.end()) {
      return LineError(line, absl::StrCat("unknown column '", column, "'; the columns are ",
                                          internal::JoinNames(kLayerTableColumns)));
    }
    if (std::find(columns_.begin(), columns_.begin() + static_cast<long>(i), column) !=
        columns_.begin() + static_cast<long>(i)) {
      return LineError(line, absl::StrCat("column '", column, "' appears twice"));
    }
  }
  for (std::string_view required : kRequiredLayerTableColumns) {
    if (std::find(columns_.begin(), columns_.end(), required) == columns_.end()) {
      return LineError(
          line, absl::StrCat("missing required column '", std::string(required), "' (required: ",
                             internal::JoinNames(kRequiredLayerTableColumns), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LayerId>> TableParser::ReadInputs(const Row& row) {
  std::vector<LayerId> ins;
  const std::string_view text = row.Get("inputs");
  if (text.empty()) return ins;
  // absl::string_view is not std::string_view in Debian's abseil (docs/architecture.md).
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ';')) {
    const std::string name(Trim(std::string_view(part.data(), part.size())));
    const auto it = ids_.find(name);
    if (it == ids_.end()) {
      return row.Error("inputs", absl::StrCat("unknown input '", name,
                                              "' (an input must be defined on an earlier line)"));
    }
    if (std::find(ins.begin(), ins.end(), it->second) != ins.end()) {
      return row.Error("inputs", absl::StrCat("input '", name, "' is listed twice"));
    }
    ins.push_back(it->second);
  }
  return ins;
}

absl::Status TableParser::CheckInputShape(const Row& row, const std::vector<LayerId>& ins,
                                          const TensorShape& input) {
  if (!builder_) {  // The first row defines the model input.
    builder_.emplace(model_name_, input);
    input_line_ = row.line();
    return absl::OkStatus();
  }
  const TensorShape& reads = builder_->OutputShape(ins.empty() ? kInput : ins[0]);
  if (input == reads) return absl::OkStatus();
  const std::string source =
      ins.empty() ? absl::StrCat("the model input (defined on line ", input_line_, ") is ")
                  : absl::StrCat("its first input '", builder_->layer(ins[0]).name, "' outputs ");
  return row.Error("input_shape",
                   absl::StrCat("is ", input.ToString(), " but ", source, reads.ToString()));
}

absl::Status TableParser::AddRow(const Row& row) {
  const std::string name(row.Get("name"));
  if (name.empty()) return row.Error("name", "is empty");
  if (const auto it = ids_.find(name); it != ids_.end()) {
    return row.Error("name",
                     absl::StrCat("duplicate layer name '", name, "' (first defined on line ",
                                  lines_[static_cast<size_t>(it->second)], ")"));
  }
  const std::string type(row.Get("type"));
  WAVEPOOL_ASSIGN_OR_RETURN(RowType row_type, ReadType(row));
  const LayerKind kind = row_type.kind;
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<LayerId> ins, ReadInputs(row));
  WAVEPOOL_ASSIGN_OR_RETURN(TensorShape input, row.Shape("input_shape"));
  WAVEPOOL_RETURN_IF_ERROR(CheckInputShape(row, ins, input));
  WAVEPOOL_ASSIGN_OR_RETURN(TensorShape output, row.Shape("output_shape"));
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<TensorShape> weight, row.OptionalShape("weight_shape"));
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> time, row.OptionalNumber("time_us_per_sample"));
  WAVEPOOL_ASSIGN_OR_RETURN(Attrs attrs, Attrs::Parse(row, kind, type));

  WAVEPOOL_ASSIGN_OR_RETURN(LayerId id,
                            kind == LayerKind::kOpaque
                                ? AddOpaque(row, ins, output, weight, row_type.opaque_type)
                                : AddKnown(row, kind, ins, output, weight, attrs));
  if (!builder_->status().ok())
    return LineError(row.line(), std::string(builder_->status().message()));
  WAVEPOOL_RETURN_IF_ERROR(CheckDerived(row, id, output));
  if (time) builder_->SetMeasuredTime(id, Microseconds(*time));
  ids_.emplace(name, id);
  lines_.push_back(row.line());
  successors_.push_back(0);
  for (LayerId in : ins) ++successors_[static_cast<size_t>(in)];
  return absl::OkStatus();
}

// A known type's output shape (and params, when the row gives them) must match the derivation.
absl::Status TableParser::CheckDerived(const Row& row, LayerId id, const TensorShape& output) {
  const Layer& layer = builder_->layer(id);
  if (layer.output != output) {
    return row.Error(
        "output_shape",
        absl::StrCat("is ", output.ToString(), " but a ", std::string(row.Get("type")),
                     " with this input and these settings gives ", layer.output.ToString()));
  }
  if (layer.kind == LayerKind::kOpaque) return absl::OkStatus();
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<std::int64_t> params, row.OptionalInteger("params"));
  if (params && *params != layer.params) {
    return row.Error("params", absl::StrCat("is ", *params, " but a ", std::string(row.Get("type")),
                                            " with these shapes and settings has ", layer.params));
  }
  for (std::string_view column : {"forward_flops", "backward_flops"}) {
    if (!row.Get(column).empty()) {
      return row.Error(
          column, absl::StrCat("only opaque layers take FLOPs; a ", std::string(row.Get("type")),
                               "'s follow from its shapes"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LayerId> TableParser::AddOpaque(const Row& row, const std::vector<LayerId>& ins,
                                               const TensorShape& output,
                                               const std::optional<TensorShape>& weight,
                                               const std::string& opaque_type) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<std::int64_t> params, row.OptionalInteger("params"));
  if (params && weight && *params != weight->Elements()) {
    return row.Error("params", absl::StrCat("is ", *params, " but weight_shape ",
                                            weight->ToString(), " holds ", weight->Elements()));
  }
  const std::int64_t count = params.value_or(weight ? weight->Elements() : 0);
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> forward, row.OptionalNumber("forward_flops"));
  WAVEPOOL_ASSIGN_OR_RETURN(std::optional<double> backward, row.OptionalNumber("backward_flops"));
  const double forward_flops = forward.value_or(0);
  // As ModelBuilder costs known layers: the weight gradient doubles the backward pass.
  const double backward_flops = backward.value_or(count > 0 ? 2 * forward_flops : forward_flops);
  return builder_->Opaque(std::string(row.Get("name")), ins, output, count, forward_flops,
                          backward_flops, opaque_type);
}

absl::StatusOr<LayerId> TableParser::AddKnown(const Row& row, LayerKind kind,
                                              const std::vector<LayerId>& ins,
                                              const TensorShape& output,
                                              const std::optional<TensorShape>& weight,
                                              const Attrs& attrs) {
  const std::string name(row.Get("name"));
  const std::string type(row.Get("type"));
  if (weight && kind != LayerKind::kConv2d && kind != LayerKind::kLinear) {
    return row.Error("weight_shape", absl::StrCat("a ", type,
                                                  " takes none; its parameters "
                                                  "follow from its shapes and attrs"));
  }
  if (kind == LayerKind::kConcat) return builder_->Concat(name, ins);
  if (kind == LayerKind::kAdd) return builder_->Add(name, ins);
  if (ins.size() > 1) {
    return row.Error("inputs", absl::StrCat("a ", type, " takes one input, got ", ins.size()));
  }
  const LayerId in = ins.empty() ? kInput : ins[0];
  switch (kind) {
    case LayerKind::kConv2d:
      return AddConv(row, in, weight, attrs);
    case LayerKind::kLinear:
      return AddLinear(row, in, weight, attrs);
    case LayerKind::kReLU:
      return builder_->ReLU(name, in);
    case LayerKind::kGELU:
      return builder_->GELU(name, in);
    case LayerKind::kBatchNorm2d:
      return builder_->BatchNorm2d(name, in);
    case LayerKind::kLayerNorm:
      return builder_->LayerNorm(name, in);
    case LayerKind::kFlatten:
      return builder_->Flatten(name, in);
    case LayerKind::kDropout:
      return builder_->Dropout(name, in);
    case LayerKind::kSoftmaxCrossEntropy:
      return builder_->SoftmaxCrossEntropy(name, in);
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d: {
      WAVEPOOL_ASSIGN_OR_RETURN(int kernel, attrs.Int("kernel", std::nullopt));
      WAVEPOOL_ASSIGN_OR_RETURN(int stride,
                                attrs.Int("stride", kernel));  // PyTorch: stride = kernel
      WAVEPOOL_ASSIGN_OR_RETURN(int pad, attrs.Int("pad", 0));
      return kind == LayerKind::kMaxPool2d ? builder_->MaxPool2d(name, in, kernel, stride, pad)
                                           : builder_->AvgPool2d(name, in, kernel, stride, pad);
    }
    case LayerKind::kAdaptiveAvgPool2d: {
      if (output.dims.size() != 3) {
        return row.Error("output_shape", "an adaptiveavgpool2d writes C x out_h x out_w");
      }
      WAVEPOOL_ASSIGN_OR_RETURN(int out_h, internal::ToInt(row, "output_shape", output.dims[1]));
      WAVEPOOL_ASSIGN_OR_RETURN(int out_w, internal::ToInt(row, "output_shape", output.dims[2]));
      return builder_->AdaptiveAvgPool2d(name, in, out_h, out_w);
    }
    case LayerKind::kResNetBottleneck: {
      absl::StatusOr<std::int64_t> planes = attrs.Integer("planes", std::nullopt);
      absl::StatusOr<int> stride = attrs.Int("stride", 1);
      absl::StatusOr<int> base_width = attrs.Int("base_width", 64);
      for (const absl::Status& status : {planes.status(), stride.status(), base_width.status()}) {
        WAVEPOOL_RETURN_IF_ERROR(status);
      }
      return builder_->ResNetBottleneck(name, in, *planes, *stride, *base_width);
    }
    case LayerKind::kEmbedding: {
      absl::StatusOr<std::int64_t> vocab = attrs.Integer("vocab", std::nullopt);
      absl::StatusOr<std::int64_t> positions = attrs.Integer("positions", std::nullopt);
      absl::StatusOr<std::int64_t> types = attrs.Integer("types", 0);
      for (const absl::Status& status : {vocab.status(), positions.status(), types.status()}) {
        WAVEPOOL_RETURN_IF_ERROR(status);
      }
      if (output.dims.size() != 2) {
        return row.Error("output_shape", "an embedding writes T x hidden");
      }
      return builder_->Embedding(name, in, *vocab, *positions, *types, output.dims[1]);
    }
    case LayerKind::kTransformerAttention: {
      WAVEPOOL_ASSIGN_OR_RETURN(int heads, attrs.Int("heads", std::nullopt));
      return builder_->TransformerAttention(name, in, heads);
    }
    case LayerKind::kTransformerFeedForward: {
      WAVEPOOL_ASSIGN_OR_RETURN(std::int64_t intermediate,
                                attrs.Integer("intermediate", std::nullopt));
      return builder_->TransformerFeedForward(name, in, intermediate);
    }
    case LayerKind::kTransformerPooler:
      return builder_->TransformerPooler(name, in);
    case LayerKind::kConcat:
    case LayerKind::kAdd:
    case LayerKind::kOpaque:
      break;  // handled above and in AddOpaque
  }
  return row.Error("type", absl::StrCat("'", type, "' is not handled"));
}

absl::StatusOr<LayerId> TableParser::AddConv(const Row& row, LayerId in,
                                             const std::optional<TensorShape>& weight,
                                             const Attrs& attrs) {
  const TensorShape& input = builder_->OutputShape(in);
  if (!weight || weight->dims.size() != 4) {
    return row.Error("weight_shape", "a conv2d needs Cout x Cin/groups x kh x kw");
  }
  if (input.dims.size() != 3 || input.dims[0] % weight->dims[1] != 0) {
    return row.Error("weight_shape",
                     absl::StrCat("its 2nd dim (Cin/groups = ", weight->dims[1],
                                  ") must divide the input channels of ", input.ToString()));
  }
  ModelBuilder::Conv conv;
  conv.out_channels = weight->dims[0];
  absl::StatusOr<int> kernel_h = internal::ToInt(row, "weight_shape", weight->dims[2]);
  absl::StatusOr<int> kernel_w = internal::ToInt(row, "weight_shape", weight->dims[3]);
  absl::StatusOr<int> groups =
      internal::ToInt(row, "weight_shape", input.dims[0] / weight->dims[1]);
  absl::StatusOr<int> stride = attrs.Int("stride", 1);
  absl::StatusOr<std::pair<int, int>> pad = attrs.Pair("pad", {0, 0});
  absl::StatusOr<bool> bias = attrs.Bool("bias", true);
  absl::StatusOr<bool> batch_norm = attrs.Bool("batch_norm", false);
  absl::StatusOr<bool> relu = attrs.Bool("relu", false);
  for (const absl::Status& status :
       {kernel_h.status(), kernel_w.status(), groups.status(), stride.status(), pad.status(),
        bias.status(), batch_norm.status(), relu.status()}) {
    WAVEPOOL_RETURN_IF_ERROR(status);
  }
  conv.kernel_h = *kernel_h;
  conv.kernel_w = *kernel_w;
  conv.groups = *groups;
  conv.stride = *stride;
  conv.pad_h = pad->first;
  conv.pad_w = pad->second;
  conv.bias = *bias;
  conv.batch_norm = *batch_norm;
  conv.relu = *relu;
  return builder_->Conv2d(std::string(row.Get("name")), in, conv);
}

absl::StatusOr<LayerId> TableParser::AddLinear(const Row& row, LayerId in,
                                               const std::optional<TensorShape>& weight,
                                               const Attrs& attrs) {
  const TensorShape& input = builder_->OutputShape(in);
  if (!weight || weight->dims.size() != 2 || weight->dims[1] != input.dims.back()) {
    return row.Error("weight_shape",
                     absl::StrCat("a linear layer needs out x in, with in = the input's last dim (",
                                  input.dims.back(), ")"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(bool bias, attrs.Bool("bias", true));
  return builder_->Linear(std::string(row.Get("name")), in, weight->dims[0], bias);
}

absl::Status TableParser::CheckSingleSink() const {
  std::vector<size_t> sinks;
  for (size_t id = 0; id < successors_.size(); ++id) {
    if (successors_[id] == 0) sinks.push_back(id);
  }
  if (sinks.size() <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("layer table lines ", lines_[sinks[0]], " and ", lines_[sinks[1]], ": layers '",
                   builder_->layer(static_cast<LayerId>(sinks[0])).name, "' and '",
                   builder_->layer(static_cast<LayerId>(sinks[1])).name,
                   "' are both unused by later rows; a model has exactly one output layer"));
}

}  // namespace

absl::StatusOr<ModelGraph> ParseLayerTable(std::string_view model_name, std::string_view text) {
  return TableParser(model_name).Parse(text);
}

}  // namespace wavepool::planner
