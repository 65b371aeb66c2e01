#include "wavepool/api/yaml.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::api {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

nlohmann::json MustParse(const std::string& text) {
  absl::StatusOr<nlohmann::json> json = YamlToJson(text);
  EXPECT_TRUE(json.ok()) << json.status() << "\n" << text;
  return json.ok() ? *json : nlohmann::json();
}

TEST(Yaml, PlainScalarsFollowTheCoreSchema) {
  const nlohmann::json json = MustParse(
      "int: 8\nneg: -3\nhex: 0x1F\noct: 0o17\nlead0: 012\nfloat: 2.0\nexp: 1e3\ndot: .5\n"
      "yes: true\nno: False\nnull1: null\nnull2: ~\nnull3:\nword: hello\non: On\noff: off\n"
      "y: yes\n");
  EXPECT_TRUE(json["int"].is_number_integer());
  EXPECT_EQ(json["int"], 8);
  EXPECT_EQ(json["neg"], -3);
  EXPECT_EQ(json["hex"], 31);
  EXPECT_EQ(json["oct"], 15);
  EXPECT_EQ(json["lead0"], 12);  // YAML 1.2: decimal, not octal.
  EXPECT_TRUE(json["float"].is_number_float());
  EXPECT_EQ(json["float"].dump(), "2.0");
  EXPECT_TRUE(json["exp"].is_number_float());
  EXPECT_DOUBLE_EQ(json["exp"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(json["dot"].get<double>(), 0.5);
  EXPECT_EQ(json["yes"], true);
  EXPECT_EQ(json["no"], false);
  EXPECT_TRUE(json["null1"].is_null());
  EXPECT_TRUE(json["null2"].is_null());
  EXPECT_TRUE(json["null3"].is_null());
  EXPECT_EQ(json["word"], "hello");
  // YAML 1.1's boolean words are strings here, so `tickTock: On` means the enum value.
  EXPECT_EQ(json["on"], "On");
  EXPECT_EQ(json["off"], "off");
  EXPECT_EQ(json["y"], "yes");
}

TEST(Yaml, QuotedAndStrTaggedScalarsStayStrings) {
  const nlohmann::json json =
      MustParse("a: \"1\"\nb: 'true'\nc: \"null\"\nd: !!str 5\ne: \"\"\nf: '2.0'\n");
  EXPECT_EQ(json["a"], "1");
  EXPECT_EQ(json["b"], "true");
  EXPECT_EQ(json["c"], "null");
  EXPECT_EQ(json["d"], "5");
  EXPECT_EQ(json["e"], "");
  EXPECT_EQ(json["f"], "2.0");
}

TEST(Yaml, ExplicitTagsConvertOrFail) {
  const nlohmann::json json =
      MustParse("i: !!int '7'\nf: !!float 1\nb: !!bool true\nn: !!null ''\n");
  EXPECT_TRUE(json["i"].is_number_integer());
  EXPECT_EQ(json["i"], 7);
  EXPECT_TRUE(json["f"].is_number_float());
  EXPECT_EQ(json["b"], true);
  EXPECT_TRUE(json["n"].is_null());
  EXPECT_EQ(MustParse("s: !!str\n")["s"], "");
  EXPECT_THAT(YamlToJson("a: 1\ni: !!int eight\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column 4: !!int \"eight\" is not a valid int")));
  EXPECT_THAT(YamlToJson("a: !custom 3\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 1, column 4: unsupported tag \"!custom\"")));
}

TEST(Yaml, LargeIntegersWidenInsteadOfWrapping) {
  const nlohmann::json json = MustParse(
      "max: 9223372036854775807\nmin: -9223372036854775808\nu: 18446744073709551615\n"
      "huge: 99999999999999999999999\nneghuge: -99999999999999999999999\n");
  EXPECT_EQ(json["max"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(json["min"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_TRUE(json["u"].is_number_unsigned());
  EXPECT_EQ(json["u"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(json["huge"].is_number_float());
  EXPECT_DOUBLE_EQ(json["huge"].get<double>(), 1e23);
  EXPECT_DOUBLE_EQ(json["neghuge"].get<double>(), -1e23);
}

TEST(Yaml, NonFiniteNumbersAreRejectedWithTheirLine) {
  EXPECT_THAT(YamlToJson("a: 1\nb: .nan\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column 4: .nan is not a finite number")));
  EXPECT_THAT(YamlToJson("a:\n  - -.inf\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2")));
  EXPECT_THAT(
      YamlToJson("a: 1e999\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("line 1, column 4: number 1e999 is outside the range of a double")));
  // Quoted, they are plain strings.
  EXPECT_EQ(MustParse("a: '.nan'\n")["a"], ".nan");
}

TEST(Yaml, SyntaxErrorsCarryTheLine) {
  EXPECT_THAT(YamlToJson("spec:\n  gpus: 8\n  model: [vgg16\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 4")));
  EXPECT_THAT(YamlToJson("spec:\n  gpus: 8\n\tsteps: 3\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 3, column 1: ")));
  EXPECT_THAT(YamlToJson("a: 1\nb: c: d\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2, column ")));
}

TEST(Yaml, DuplicateKeysAreErrors) {
  EXPECT_THAT(YamlToJson("spec:\n  gpus: 8\n  steps: 3\n  gpus: 4\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 4, column 3: duplicate key \"gpus\"")));
}

TEST(Yaml, KeysMustBeScalarsAndBecomeStrings) {
  EXPECT_EQ(MustParse("1: a\ntrue: b\n"), nlohmann::json({{"1", "a"}, {"true", "b"}}));
  EXPECT_THAT(YamlToJson("? [1, 2]\n: a\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 1, column 3: a mapping key must be a string")));
}

TEST(Yaml, InvalidUtf8IsRejected) {
  EXPECT_THAT(YamlToJson("a: \"\xC3\x28\"\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid UTF-8")));
  EXPECT_THAT(YamlToJson("a: \xED\xA0\x80\n"),  // A UTF-16 surrogate.
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid UTF-8")));
  EXPECT_EQ(MustParse("a: h\xC3\xA9llo \xE2\x9C\x93\n")["a"], "h\xC3\xA9llo \xE2\x9C\x93");
}

TEST(Yaml, DeepNestingIsRejectedWithoutExhaustingTheStack) {
  const std::string just_too_deep =
      std::string(kMaxYamlDepth + 1, '[') + std::string(kMaxYamlDepth + 1, ']');
  EXPECT_THAT(YamlToJson(just_too_deep),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than")));
  const std::string very_deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(YamlToJson(very_deep),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than")));
  std::string deep_block;
  for (int i = 0; i < 5000; ++i) deep_block += "- ";
  deep_block += "x\n";
  EXPECT_THAT(YamlToJson(deep_block),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than")));
  const std::string ok_depth =
      std::string(kMaxYamlDepth, '[') + "1" + std::string(kMaxYamlDepth, ']');
  EXPECT_TRUE(YamlToJson(ok_depth).ok());
  const std::string one_less =
      std::string(kMaxYamlDepth - 1, '[') + "1" + std::string(kMaxYamlDepth - 1, ']');
  EXPECT_TRUE(YamlToJson("{\"a\": " + one_less + "}").ok());
  EXPECT_THAT(YamlToJson("{\"a\": " + ok_depth + "}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than")));
}

// Text nested far past the limit (past yaml-cpp's own guard of 500 levels too) is refused with
// this project's limit and the place of the first collection beyond it.
TEST(Yaml, NestingPastTheLimitNamesTheLimitTheLineAndTheField) {
  std::string indexes;
  for (int i = 0; i < kMaxYamlDepth; ++i) indexes += "[0]";
  const std::string limit = absl::StrCat("nesting deeper than ", kMaxYamlDepth, " levels");
  const std::string flow = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_THAT(YamlToJson("a: " + flow),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 1, column 259: "), HasSubstr(limit),
                             HasSubstr(absl::StrCat("at a", indexes.substr(3), ": ")))));
  // Text that reads as JSON gets the same answer.
  EXPECT_THAT(YamlToJson(flow),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 1, column 257: "),
                             HasSubstr(absl::StrCat("at ", indexes, ": ")), HasSubstr(limit))));
  std::string block;
  std::string keys;
  for (int i = 0; i < 600; ++i) {
    block += std::string(2 * static_cast<std::size_t>(i), ' ') + "k:\n";
    if (i > 0 && i <= kMaxYamlDepth) keys += keys.empty() ? "k" : ".k";
  }
  block += std::string(1200, ' ') + "x\n";
  EXPECT_THAT(YamlToJson(block),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(absl::StrCat("line ", kMaxYamlDepth + 1, ", column ",
                                                    2 * kMaxYamlDepth + 1, ": at ", keys, ": ")),
                             HasSubstr(limit))));
}

TEST(Yaml, AliasesExpandButAnAliasBombIsRejected) {
  EXPECT_EQ(MustParse("a: &x [1, 2]\nb: *x\n"), nlohmann::json({{"a", {1, 2}}, {"b", {1, 2}}}));
  // Each level doubles ten times: 10^7 leaves from a few lines.
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 7; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    bomb += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) bomb += (i > 0 ? ", " : "") + prev;
    bomb += "]\n";
  }
  EXPECT_THAT(YamlToJson(bomb),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than")));
}

TEST(Yaml, ARecursiveAliasIsRejectedNamingItsLineAndPath) {
  EXPECT_THAT(YamlToJson("a: &a [*a]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 1, column 4"), HasSubstr("at a[0]"),
                             HasSubstr("refers to a, a collection that contains it"))));
  EXPECT_THAT(YamlToJson("spec:\n  m: &m\n    k: [1, {deeper: *m}]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at spec.m.k[1].deeper")));
  EXPECT_THAT(YamlToJson("&root [1, *root]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("refers to the document")));
  EXPECT_THAT(ParseDocuments("ok: 1\n---\nb: &b {c: *b}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 3")));
}

TEST(Yaml, AnAliasChainDeeperThanTheLimitIsRejectedWithoutRecursion) {
  // Each anchor wraps the previous one: the text nests 2 levels, the expansion 20,000.
  std::string chain = "l0: &l0 [x]\n";
  for (int level = 1; level < 20000; ++level) {
    chain += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [*l" +
             std::to_string(level - 1) + "]\n";
  }
  EXPECT_THAT(YamlToJson(chain),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than")));
}

TEST(Yaml, AStrayFlowIndicatorIsAnErrorNotAnEndlessStreamOfDocuments) {
  // The documents' reader would otherwise add empty documents at the ',' until memory ran out.
  EXPECT_THAT(YamlToJson("{s: [{t}],: \"\"},"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 1, column 16"), HasSubstr("cannot read past"))));
  EXPECT_THAT(ParseDocuments("a: 1\n---\n{b: 2},\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 3")));
}

TEST(Yaml, DocumentsAreSplitAndKeepTheirLines) {
  ASSERT_OK_AND_ASSIGN(std::vector<YamlDocument> documents,
                       ParseDocuments("a: 1\n---\n---\n# comment\nb:\n  c: [1, 2]\n"));
  ASSERT_EQ(documents.size(), 3u);
  EXPECT_EQ(documents[0].value, nlohmann::json({{"a", 1}}));
  EXPECT_EQ(documents[0].line, 1);
  EXPECT_TRUE(documents[1].value.is_null());
  EXPECT_EQ(documents[2].line, 5);
  EXPECT_EQ(documents[2].lines.LineOf("b.c"), 6);
  EXPECT_EQ(documents[2].lines.LineOf("b.c[1]"), 6);
  EXPECT_THAT(
      YamlToJson("a: 1\n---\nb: 2\n"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected one YAML document, got 2")));
  EXPECT_TRUE(MustParse("").is_null());
}

TEST(Yaml, SourceLinesFallBackToTheNearestAncestor) {
  ASSERT_OK_AND_ASSIGN(std::vector<YamlDocument> documents,
                       ParseDocuments("metadata:\n  labels:\n    app.kubernetes.io/name: x\n"
                                      "spec:\n  parallelism:\n    strategy: Auto\n"));
  const SourceLines& lines = documents[0].lines;
  EXPECT_EQ(lines.LineOf("spec.parallelism.strategy"), 6);
  EXPECT_EQ(lines.LineOf("spec.parallelism.amplificationLimit"), 5);  // Not written: parent.
  EXPECT_EQ(lines.LineOf("spec.gpus"), 4);
  EXPECT_EQ(lines.LineOf("metadata.labels[app.kubernetes.io/name]"), 2);
  EXPECT_EQ(lines.LineOf("status"), 0);
}

TEST(Yaml, JsonTextIsReadWithJsonRulesAndLines) {
  ASSERT_OK_AND_ASSIGN(std::vector<YamlDocument> documents,
                       ParseDocuments("{\n  \"a\": 1.0,\n  \"b\": [1, \"2\"],\n"
                                      "  \"c\": \"\\u00e9\\/\"\n}\n"));
  ASSERT_EQ(documents.size(), 1u);
  EXPECT_TRUE(documents[0].value["a"].is_number_float());
  EXPECT_EQ(documents[0].value["b"], nlohmann::json({1, "2"}));
  EXPECT_EQ(documents[0].value["c"], "\xC3\xA9/");
  EXPECT_EQ(documents[0].lines.LineOf("b"), 3);
  // Flow-style YAML that is not JSON still reads as YAML.
  EXPECT_EQ(MustParse("{a: 1, b: [x]}"), nlohmann::json({{"a", 1}, {"b", {"x"}}}));
  EXPECT_THAT(YamlToJson("{\"a\": [1, 2}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1")));
}

TEST(Yaml, WrittenStringsReadBackAsTheSameStrings) {
  const std::vector<std::string> strings = {"",
                                            "On",
                                            "off",
                                            "yes",
                                            "Y",
                                            "n",
                                            "null",
                                            "Null",
                                            "~",
                                            "true",
                                            "FALSE",
                                            "12",
                                            "-3",
                                            "1.5",
                                            ".5",
                                            "1e3",
                                            "0x1F",
                                            "0o17",
                                            "1_000",
                                            "1:20",
                                            "2026-05-01",
                                            ".inf",
                                            "-.inf",
                                            ".nan",
                                            "+1",
                                            "-",
                                            "- a",
                                            "a: b",
                                            "a:b",
                                            "#c",
                                            "a #b",
                                            " lead",
                                            "trail ",
                                            "multi\nline\n",
                                            "tab\there",
                                            "quote\"s",
                                            "single's",
                                            "back\\slash",
                                            "h\xC3\xA9llo \xE2\x9C\x93",
                                            "{x}",
                                            "[y]",
                                            "&anchor",
                                            "*alias",
                                            "!tag",
                                            "%p",
                                            "@at",
                                            "`tick",
                                            "|",
                                            ">",
                                            "?",
                                            ":",
                                            ",",
                                            "=",
                                            "<<",
                                            "\x01"
                                            "ctl",
                                            "---",
                                            "...",
                                            "a\r\nb"};
  for (const std::string& text : strings) {
    const nlohmann::json value = {{"value", text}, {text, "key"}};
    const std::string yaml = JsonToYaml(value);
    absl::StatusOr<nlohmann::json> back = YamlToJson(yaml);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
    EXPECT_EQ(*back, value) << "string " << nlohmann::json(text).dump() << " as\n" << yaml;
  }
}

TEST(Yaml, WrittenNumbersKeepTheirType) {
  const nlohmann::json value = {
      {"zero", 0},
      {"neg", -7},
      {"min", std::numeric_limits<std::int64_t>::min()},
      {"max", std::numeric_limits<std::int64_t>::max()},
      {"umax", std::numeric_limits<std::uint64_t>::max()},
      {"two", 2.0},
      {"tenth", 0.1},
      {"tiny", 1e-05},
      {"big", 1e300},
      {"negfloat", -0.5},
      {"bools", {true, false}},
      {"nothing", nullptr},
      {"empty_object", nlohmann::json::object()},
      {"empty_array", nlohmann::json::array()},
      {"nested", {{{"a", {1, {{"b", nlohmann::json::array()}}}}}}},
  };
  const std::string yaml = JsonToYaml(value);
  ASSERT_OK_AND_ASSIGN(nlohmann::json back, YamlToJson(yaml));
  EXPECT_EQ(back, value) << yaml;
  EXPECT_EQ(back.dump(), value.dump()) << "types changed:\n" << yaml;
}

TEST(Yaml, DocumentsAreJoinedBySeparators) {
  const std::string yaml = JsonToYaml(std::vector<nlohmann::json>{{{"a", 1}}, {{"b", 2}}});
  EXPECT_EQ(yaml, "a: 1\n---\nb: 2\n");
  ASSERT_OK_AND_ASSIGN(std::vector<YamlDocument> documents, ParseDocuments(yaml));
  ASSERT_EQ(documents.size(), 2u);
  EXPECT_EQ(documents[1].value, nlohmann::json({{"b", 2}}));
}

}  // namespace
}  // namespace wavepool::api
