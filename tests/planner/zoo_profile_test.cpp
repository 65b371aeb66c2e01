// The zoo's profiled layers line up, in order and geometry, with the rows of DeepPool's profile
// (data/profiles/deeppool_a100_layer_profiles.csv), which profiles are matched against.
#include <cstdlib>
#include <fstream>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

// What a profile row says about its layer; -1 where the row says nothing.
struct Signature {
  LayerKind kind = LayerKind::kOpaque;
  std::vector<std::int64_t> input;
  std::int64_t in_channels = -1, out_channels = -1;
  int kernel_h = -1, kernel_w = -1, stride = -1, pad_h = -1, pad_w = -1;
  std::int64_t base_width = -1;

  bool operator==(const Signature& o) const {
    return kind == o.kind && input == o.input && in_channels == o.in_channels &&
           out_channels == o.out_channels && kernel_h == o.kernel_h && kernel_w == o.kernel_w &&
           stride == o.stride && pad_h == o.pad_h && pad_w == o.pad_w && base_width == o.base_width;
  }
  friend std::ostream& operator<<(std::ostream& os, const Signature& s) {
    return os << LayerKindName(s.kind) << " in " << TensorShape{s.input}.ToString() << " ch "
              << s.in_channels << "->" << s.out_channels << " k " << s.kernel_h << "x" << s.kernel_w
              << " s " << s.stride << " p " << s.pad_h << "x" << s.pad_w << " bw " << s.base_width;
  }
};

// Splits a CSV line, honouring "quoted, fields" with "" escapes.
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::optional<LayerKind> KindOfProfileName(const std::string& name) {
  if (name == "conv2d") return LayerKind::kConv2d;
  if (name == "ReLU2d" || name == "ReLU1d") return LayerKind::kReLU;
  if (name == "maxPool2d") return LayerKind::kMaxPool2d;
  if (name == "avgPool2d") return LayerKind::kAvgPool2d;
  if (name == "adAvgPool2d") return LayerKind::kAdaptiveAvgPool2d;
  if (name == "flatten") return LayerKind::kFlatten;
  if (name == "linear") return LayerKind::kLinear;
  if (name == "ResnetBottleneck") return LayerKind::kResNetBottleneck;
  return std::nullopt;
}

// "[3,224,224]" or "25088" (what follows is ignored after a scalar or the closing bracket).
std::vector<std::int64_t> ParseNumbers(const std::string& text) {
  std::vector<std::int64_t> numbers;
  const bool list = !text.empty() && text[0] == '[';
  const char* p = text.c_str() + (list ? 1 : 0);
  while (true) {
    char* end = nullptr;
    numbers.push_back(std::strtoll(p, &end, 10));
    if (!list || *end != ',') return numbers;
    p = end + 1;
  }
}

// The numbers of `"key":N` or `"key":[N,M]` in a flat JSON object (the profile's params_json);
// empty when the key is absent. (nlohmann::json trips -Wnull-dereference under -Werror here.)
std::vector<std::int64_t> JsonNumbers(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return {};
  return ParseNumbers(json.substr(at + needle.size()));
}

std::int64_t JsonInt(const std::string& json, const std::string& key, std::int64_t fallback) {
  const std::vector<std::int64_t> numbers = JsonNumbers(json, key);
  return numbers.empty() ? fallback : numbers[0];
}

// kernel_size / padding: an int or [h, w].
void ReadPair(const std::string& json, const std::string& key, int& h, int& w) {
  const std::vector<std::int64_t> numbers = JsonNumbers(json, key);
  if (numbers.empty()) return;
  h = static_cast<int>(numbers.front());
  w = static_cast<int>(numbers.back());
}

Signature FromProfileRow(LayerKind kind, const std::string& params, const std::string& input_dim) {
  Signature s;
  s.kind = kind;
  s.input = ParseNumbers(input_dim);
  if (kind == LayerKind::kConv2d) {
    s.in_channels = JsonInt(params, "in_channels", -1);
    s.out_channels = JsonInt(params, "out_channels", -1);
  } else if (kind == LayerKind::kLinear) {
    s.in_channels = JsonInt(params, "in_features", -1);
    s.out_channels = JsonInt(params, "out_features", -1);
  } else if (kind == LayerKind::kResNetBottleneck) {
    s.in_channels = JsonInt(params, "inplanes", -1);
    s.out_channels = JsonInt(params, "planes", -1) * 4;
    s.stride = static_cast<int>(JsonInt(params, "stride", 1));
    s.base_width = JsonInt(params, "base_width", -1);
    return s;
  }
  if (kind == LayerKind::kLinear || kind == LayerKind::kAdaptiveAvgPool2d) return s;
  ReadPair(params, "kernel_size", s.kernel_h, s.kernel_w);
  ReadPair(params, "padding", s.pad_h, s.pad_w);
  s.stride = static_cast<int>(JsonInt(params, "stride", 1));
  return s;
}

// The same view of a graph layer.
Signature FromLayer(const Layer& layer) {
  Signature s;
  s.kind = layer.kind;
  s.input = layer.input.dims;
  const WindowAttrs& w = layer.window;
  switch (layer.kind) {
    case LayerKind::kResNetBottleneck:
      s.in_channels = layer.in_channels;
      s.out_channels = layer.out_channels;
      s.stride = w.stride_h;
      s.base_width = layer.attrs.base_width;
      return s;
    case LayerKind::kLinear:
      s.in_channels = layer.in_channels;
      s.out_channels = layer.out_channels;
      return s;
    case LayerKind::kAdaptiveAvgPool2d:
      return s;
    case LayerKind::kConv2d:
      s.in_channels = layer.in_channels;
      s.out_channels = layer.out_channels;
      break;
    case LayerKind::kReLU:
    case LayerKind::kFlatten:
      s.kernel_h = s.kernel_w = 1;  // the profile writes kernel_size 1 and (ReLU) stride 1
      s.stride = 1;
      if (layer.kind == LayerKind::kReLU) s.pad_h = s.pad_w = 0;
      return s;
    default:
      break;
  }
  s.kernel_h = w.kernel_h;
  s.kernel_w = w.kernel_w;
  s.stride = w.stride_h;
  s.pad_h = w.pad_h;
  s.pad_w = w.pad_w;
  return s;
}

// The profile's rows of `model` at per-GPU batch 1, in layer_idx order.
std::vector<Signature> ProfileRows(const std::string& model, std::set<LayerKind>& kinds) {
  std::ifstream file(std::string(WAVEPOOL_SOURCE_DIR) +
                     "/data/profiles/deeppool_a100_layer_profiles.csv");
  EXPECT_TRUE(file.good()) << "cannot open the profile under " << WAVEPOOL_SOURCE_DIR;
  std::vector<Signature> rows;
  std::string line;
  std::getline(file, line);  // header
  while (std::getline(file, line)) {
    const std::vector<std::string> f = SplitCsv(line);
    if (f.size() != 9 || f[0] != model || f[1] != "1") continue;
    EXPECT_EQ(std::stoul(f[2]), rows.size()) << "rows out of layer_idx order";
    const std::optional<LayerKind> kind = KindOfProfileName(f[3]);
    EXPECT_TRUE(kind.has_value()) << "unknown profile layer type " << f[3];
    if (!kind) continue;
    kinds.insert(*kind);
    rows.push_back(FromProfileRow(*kind, f[4], f[5]));
  }
  return rows;
}

void ExpectZooMatchesProfile(const std::string& zoo_name, const std::string& profile_name,
                             size_t expected_rows) {
  std::set<LayerKind> kinds;
  const std::vector<Signature> rows = ProfileRows(profile_name, kinds);
  ASSERT_EQ(rows.size(), expected_rows);
  ASSERT_OK_AND_ASSIGN(ModelGraph model, BuiltinModel(zoo_name));
  std::vector<Signature> layers;  // the graph's layers of the kinds the profile has
  for (const Layer& layer : model.layers()) {
    if (kinds.count(layer.kind) > 0) layers.push_back(FromLayer(layer));
  }
  ASSERT_EQ(layers.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(layers[i], rows[i]) << zoo_name << ": profile row " << i;
  }
}

TEST(ZooProfile, Vgg16LinesUpWithTheProfile) { ExpectZooMatchesProfile("vgg16", "vgg16", 37); }

TEST(ZooProfile, WideResNet101LinesUpWithTheProfile) {
  ExpectZooMatchesProfile("wide_resnet101_2", "wrn101_2", 39);
}

// The profile lists Inception-v3's 94 convs and 13 pools only; the graph's joins, final pool,
// dropout and classifier sit between or after them.
TEST(ZooProfile, InceptionV3LinesUpWithTheProfile) {
  ExpectZooMatchesProfile("inception_v3", "inception_v3", 107);
}

}  // namespace
}  // namespace wavepool::planner
