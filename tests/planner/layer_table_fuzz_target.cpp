#include "tests/planner/layer_table_fuzz_target.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/layer_table.h"

namespace wavepool::planner::testing {
namespace {

std::string CheckLayers(const ModelGraph& model) {
  for (const Layer& layer : model.layers()) {
    if (layer.ParamBytes() < 0 || layer.OutputBytesPerSample() < 0 ||
        layer.internal_activation_items < 0) {
      return absl::StrCat("layer ", layer.name, ": a size wrapped around (params ", layer.params,
                          ", output ", layer.output.ToString(), ")");
    }
    if (!std::isfinite(layer.forward_flops) || !std::isfinite(layer.backward_flops)) {
      return absl::StrCat("layer ", layer.name, ": FLOPs are not finite");
    }
  }
  return "";
}

}  // namespace

std::string CheckLayerTableInput(std::string_view text, bool* accepted) {
  try {
    absl::StatusOr<ModelGraph> model = ParseLayerTable("fuzz", text);
    if (!model.ok()) {
      if (model.status().code() == absl::StatusCode::kInvalidArgument) return "";
      return absl::StrCat("refused with an unexpected code: ", model.status().ToString());
    }
    *accepted = true;
    if (std::string failure = CheckLayers(*model); !failure.empty()) return failure;
    const std::string formatted = FormatLayerTable(*model);
    absl::StatusOr<ModelGraph> again = ParseLayerTable("fuzz", formatted);
    if (!again.ok()) {
      return absl::StrCat("the formatted table does not parse: ", again.status().ToString(),
                          "\nformatted:\n", formatted);
    }
    if (!(*again == *model)) {
      return absl::StrCat("the formatted table parses to another graph\nformatted:\n", formatted);
    }
    return "";
  } catch (const std::exception& e) {
    return absl::StrCat("threw: ", e.what());
  }
}

}  // namespace wavepool::planner::testing

// The libFuzzer entry point, for a build with -fsanitize=fuzzer; in the test binary it is unused.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bool accepted = false;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!wavepool::planner::testing::CheckLayerTableInput(text, &accepted).empty()) std::abort();
  return 0;
}
