#include "tests/api/codec_fuzz_target.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/training_job.h"
#include "wavepool/api/yaml.h"

namespace wavepool::api::testing {
namespace {

// `value` decoded as a T: refused, or decoded to an object whose JSON decodes again to the same
// JSON. "" when that holds.
template <typename T>
std::string CheckDecoder(const nlohmann::json& value, const char* type) {
  try {
    absl::StatusOr<T> object = T::FromJson(value);
    if (!object.ok()) return "";
    const nlohmann::json encoded = ToJson(*object);
    absl::StatusOr<T> again = T::FromJson(encoded);
    if (!again.ok()) {
      return absl::StrCat(type,
                          ": a decoded object's JSON does not decode: ", again.status().ToString());
    }
    if (ToJson(*again) != encoded) return absl::StrCat(type, ": re-decoding changed the object");
    return "";
  } catch (const std::exception& e) {
    return absl::StrCat(type, "::FromJson threw: ", e.what());
  }
}

std::string CheckDecoders(const nlohmann::json& value) {
  for (std::string failure :
       {CheckDecoder<TrainingJob>(value, "TrainingJob"), CheckDecoder<GpuNode>(value, "GpuNode"),
        CheckDecoder<Plan>(value, "Plan")}) {
    if (!failure.empty()) return failure;
  }
  return "";
}

}  // namespace

std::string CheckYamlInput(std::string_view text, bool* accepted) {
  absl::StatusOr<std::vector<YamlDocument>> documents;
  try {
    documents = ParseDocuments(text);
  } catch (const std::exception& e) {
    return absl::StrCat("ParseDocuments threw: ", e.what());
  }
  if (!documents.ok()) {
    const absl::StatusCode code = documents.status().code();
    if (code == absl::StatusCode::kInvalidArgument ||
        code == absl::StatusCode::kResourceExhausted) {
      return "";
    }
    return absl::StrCat("ParseDocuments refused with an unexpected code: ",
                        documents.status().ToString());
  }
  *accepted = true;
  for (const YamlDocument& document : *documents) {
    try {
      const std::string yaml = JsonToYaml(document.value);
      absl::StatusOr<nlohmann::json> again = YamlToJson(yaml);
      if (!again.ok()) {
        return absl::StrCat("written YAML does not read back: ", again.status().ToString(),
                            "\nwritten:\n", yaml);
      }
      if (*again != document.value) {
        return absl::StrCat("written YAML reads back as another value\nwritten:\n", yaml);
      }
    } catch (const std::exception& e) {
      return absl::StrCat("writing or re-reading YAML threw: ", e.what());
    }
    if (std::string failure = CheckDecoders(document.value); !failure.empty()) return failure;
  }
  return "";
}

std::string CheckJsonInput(std::string_view text, bool* accepted) {
  const nlohmann::json value =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return "";
  *accepted = true;
  return CheckDecoders(value);
}

}  // namespace wavepool::api::testing

// The libFuzzer entry point, for a build with -fsanitize=fuzzer; in the test binary it is unused.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bool accepted = false;
  if (!wavepool::api::testing::CheckYamlInput(text, &accepted).empty()) std::abort();
  if (!wavepool::api::testing::CheckJsonInput(text, &accepted).empty()) std::abort();
  return 0;
}
