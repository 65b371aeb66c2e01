// Runs the YAML and JSON codecs' fuzz checks (codec_fuzz_target.h) in the normal test run, for a
// bounded budget (2 s or 100,000 inputs each), on inputs mutated from a fixed seed: manifests of
// every API type as YAML and JSON, and the hostile documents the reader must refuse (a recursive
// alias, an alias bomb, deep nesting). The budget bounds the run; nothing is timed.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/api/api_fixtures.h"
#include "tests/api/codec_fuzz_target.h"
#include "tests/support/text_fuzz.h"
#include "wavepool/api/yaml.h"

namespace wavepool::api::testing {
namespace {

using ::wavepool::testing::RunTextFuzz;
using ::wavepool::testing::TextFuzzReport;

std::string AliasBomb() {
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 6; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    bomb += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) bomb += (i > 0 ? ", " : "") + prev;
    bomb += "]\n";
  }
  return bomb;
}

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds;
  for (const nlohmann::json& value :
       {EveryFieldTrainingJob(), EveryFieldGpuNode(), ValidPlanJson()}) {
    seeds.push_back(JsonToYaml(value));
    seeds.push_back(value.dump());
    seeds.push_back(value.dump(2));
  }
  seeds.push_back(
      JsonToYaml(std::vector<nlohmann::json>{EveryFieldTrainingJob(), ValidPlanJson()}));
  seeds.push_back("a: &a [*a]\n");
  seeds.push_back("spec: &s\n  gpus: 1\n  nested: {back: *s}\n");
  seeds.push_back(AliasBomb());
  seeds.push_back("{s: [{t}],: \"\"},");  // once an endless stream of empty documents
  seeds.push_back(std::string(300, '[') + std::string(300, ']'));
  seeds.push_back(
      "a: !!int 9223372036854775808\nb: !!float .nan\nc: !!str\nd: 0x7FFFFFFFFFFFFFFF\n");
  return seeds;
}

const std::vector<std::string> kDictionary = {"&a ",
                                              "*a",
                                              "&b ",
                                              "*b",
                                              "<<: *a\n",
                                              "[",
                                              "]",
                                              "{",
                                              "}",
                                              ": ",
                                              "- ",
                                              "\n  ",
                                              "---\n",
                                              "!!str ",
                                              "!!int ",
                                              "!!float ",
                                              "!!bool ",
                                              "!!null ",
                                              "!custom ",
                                              "? ",
                                              "'",
                                              "\"",
                                              "|\n  ",
                                              ">\n  ",
                                              "#",
                                              "~",
                                              "9223372036854775807",
                                              "-9223372036854775808",
                                              "18446744073709551616",
                                              "1e999",
                                              ".inf",
                                              "\xC3\xA9",
                                              "\xFF",
                                              "\\u0000",
                                              "null",
                                              "true",
                                              ","};

TEST(CodecFuzz, EverySeedIsHandled) {
  for (const std::string& seed : Seeds()) {
    bool accepted = false;
    EXPECT_EQ(CheckYamlInput(seed, &accepted), "") << seed;
    EXPECT_EQ(CheckJsonInput(seed, &accepted), "") << seed;
  }
  bool accepted = false;
  EXPECT_EQ(CheckYamlInput("a: &a [*a]\n", &accepted), "");
  EXPECT_FALSE(accepted) << "a recursive alias must be refused";
}

TEST(CodecFuzz, MutatedYamlNeverCrashesAndWhatParsesRoundTrips) {
  const TextFuzzReport report = RunTextFuzz(
      Seeds(), kDictionary,
      [](std::string_view input, bool* accepted) { return CheckYamlInput(input, accepted); });
  ASSERT_EQ(report.failure, "") << "input: " << absl::CHexEscape(report.failing_input);
  // The mutations keep some inputs valid and break others: both paths ran.
  EXPECT_GT(report.passed, 0u);
  EXPECT_LT(report.passed, report.inputs);
  RecordProperty("inputs", static_cast<int>(report.inputs));
}

TEST(CodecFuzz, MutatedJsonNeverCrashesTheDecoders) {
  const TextFuzzReport report = RunTextFuzz(
      Seeds(), kDictionary,
      [](std::string_view input, bool* accepted) { return CheckJsonInput(input, accepted); });
  ASSERT_EQ(report.failure, "") << "input: " << absl::CHexEscape(report.failing_input);
  EXPECT_GT(report.passed, 0u);
  EXPECT_LT(report.passed, report.inputs);
  RecordProperty("inputs", static_cast<int>(report.inputs));
}

}  // namespace
}  // namespace wavepool::api::testing
