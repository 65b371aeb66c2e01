// The YAML and JSON codecs' fuzz checks, callable from a libFuzzer entry point
// (codec_fuzz_target.cpp) and from the bounded driver in the normal test run
// (codec_fuzz_test.cpp).
#ifndef WAVEPOOL_TESTS_API_CODEC_FUZZ_TARGET_H_
#define WAVEPOOL_TESTS_API_CODEC_FUZZ_TARGET_H_

#include <string>
#include <string_view>

namespace wavepool::api::testing {

// Reads `text` as a manifest (ParseDocuments). Whatever the bytes, it must return, not crash,
// hang or throw, with InvalidArgument or ResourceExhausted when it refuses them; each document it
// accepts must write as YAML that reads back to the same value, and must decode as a TrainingJob,
// GpuNode and Plan (or be refused) without throwing, a decoded object re-encoding to JSON that
// decodes again to the same JSON. Returns "" when all of this holds, else what went wrong; sets
// *accepted when the text parsed.
std::string CheckYamlInput(std::string_view text, bool* accepted);

// The same for `text` read as JSON by nlohmann::json (what the API server's answers go through)
// and handed to the JSON decoders.
std::string CheckJsonInput(std::string_view text, bool* accepted);

}  // namespace wavepool::api::testing

#endif  // WAVEPOOL_TESTS_API_CODEC_FUZZ_TARGET_H_
