// What a new user meets when a word is wrong: the `wavepool` binary names the word and the
// closest ones it knows (subcommands, flags, models, devices, network presets, layer types).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/subprocess.h"

namespace wavepool::cli {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using ::wavepool::cli::testing::LineStartingWith;
using ::wavepool::cli::testing::MakeTestDir;
using ::wavepool::cli::testing::ProcessResult;
using ::wavepool::cli::testing::RunProcess;
using ::wavepool::cli::testing::WriteFile;

ProcessResult Wavepool(const std::vector<std::string>& args) {
  return RunProcess(WAVEPOOL_BINARY, args);
}

// Exit `status`, nothing on stdout, and stderr's first line as given.
void ExpectFirstLine(const std::vector<std::string>& args, int status, const std::string& line) {
  SCOPED_TRACE(absl::StrCat("wavepool ", absl::StrJoin(args, " ")));
  const ProcessResult result = Wavepool(args);
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, status) << result;
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_EQ(result.err.substr(0, result.err.find('\n')), line) << result;
}

// Exit 2, nothing on stdout, and a first line on stderr that `matcher` accepts.
void ExpectUsageError(const std::vector<std::string>& args,
                      const ::testing::Matcher<std::string>& matcher) {
  SCOPED_TRACE(absl::StrCat("wavepool ", absl::StrJoin(args, " ")));
  const ProcessResult result = Wavepool(args);
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 2) << result;
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_THAT(result.err.substr(0, result.err.find('\n')), matcher) << result;
}

TEST(Usage, AnUnknownSubcommandNamesTheClosest) {
  // The list grows with the subcommands; it starts with these. The unknown subcommand is the
  // first word wrong, before the flags that follow it.
  ExpectUsageError({"plna", "--model", "vgg16"},
                   AllOf(StartsWith("wavepool: unknown subcommand 'plna'; the subcommands are "
                                    "plan, profile, codec, "),
                         HasSubstr(", version"), EndsWith("; did you mean 'plan'?")));
  const ProcessResult result = Wavepool({"plna"});
  EXPECT_THAT(result.err, EndsWith("\nRun `wavepool --help` for more information.\n"));
  ExpectUsageError({"deploy"}, AllOf(StartsWith("wavepool: unknown subcommand 'deploy'; the "
                                                "subcommands are plan, "),
                                     HasSubstr(", version"), Not(HasSubstr("did you mean"))));
}

TEST(Usage, AnUnknownFlagNamesTheClosestFlagsOfItsSubcommand) {
  ExpectFirstLine({"plan", "--model", "vgg16", "--gpu", "8"}, 2,
                  "wavepool plan: unknown flag --gpu; did you mean --gpus?");
  ExpectFirstLine({"plan", "--model", "vgg16", "--gpu=8"}, 2,
                  "wavepool plan: unknown flag --gpu; did you mean --gpus?");
  ExpectFirstLine({"plan", "--model", "vgg16", "--batch", "32"}, 2,
                  "wavepool plan: unknown flag --batch; did you mean --global-batch?");
  ExpectFirstLine({"plan", "--model", "vgg16", "--bogus"}, 2,
                  "wavepool plan: unknown flag --bogus");
  ExpectFirstLine({"codec", "encode", "--input", "x", "--out", "y"}, 2,
                  "wavepool codec encode: unknown flag --input; did you mean --in?");
  const ProcessResult result = Wavepool({"plan", "--gpu", "8"});
  EXPECT_THAT(result.err, EndsWith("\nRun `wavepool plan --help` for more information.\n"));
}

TEST(Usage, AFlagBeforeItsSubcommandSaysWhichSubcommandsTakeIt) {
  // Several subcommands take --gpus; the list grows with them and starts with plan's.
  ExpectUsageError({"--gpus", "8"},
                   AllOf(StartsWith("wavepool: --gpus is a flag of `wavepool plan` and "),
                         HasSubstr("`wavepool run`"),
                         EndsWith(": give the subcommand first (wavepool plan --gpus ...)")));
  ExpectUsageError({"--batch-sizes", "1,2", "--model", "cnn_tiny"},
                   AllOf(StartsWith("wavepool: --batch-sizes is a flag of `wavepool profile`"),
                         EndsWith(": give the subcommand first (wavepool profile --batch-sizes "
                                  "...)")));
  ExpectUsageError(
      {"--in", "w.f32"},  // flags of subcommands of subcommands too
      AllOf(StartsWith("wavepool: --in is a flag of "), HasSubstr("`wavepool codec encode`"),
            HasSubstr("`wavepool codec decode`"), HasSubstr("give the subcommand first")));
}

TEST(Usage, AMissingSubcommandListsThem) {
  ExpectUsageError({}, AllOf(StartsWith("wavepool: give a subcommand: plan, profile, codec, "),
                             HasSubstr(", version")));
  ExpectFirstLine({"codec"}, 2, "wavepool codec: give a subcommand: encode, decode");
}

TEST(Usage, ModelsMatchLikeDevicesAndSuggestTheClosest) {
  const ProcessResult result = Wavepool({"plan", "--model", "VGG-16", "--gpus", "8"});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0) << result;
  EXPECT_THAT(result.out, StartsWith("vgg16 on "));
  ExpectFirstLine({"plan", "--model", "resnet-51"}, 1,
                  "wavepool plan: unknown built-in model 'resnet-51'; known models: vgg16, "
                  "resnet50, wide_resnet101_2, inception_v3, bert_base, mlp_tiny, cnn_tiny, "
                  "branchy_tiny (alias: wrn101_2); did you mean 'resnet50'?");
  ExpectFirstLine({"plan", "--model", "vgg16", "--device", "a10"}, 1,
                  "wavepool plan: unknown device \"a10\"; known devices: v100, a100-40gb, h100, "
                  "h200; did you mean \"a100\"?");
}

TEST(Usage, NetworkPresetsAreSelectedByName) {
  const ProcessResult abci = Wavepool(
      {"plan", "--model", "vgg16", "--gpus", "16", "--device", "v100", "--network", "abci"});
  ASSERT_TRUE(abci.exited) << abci;
  EXPECT_EQ(abci.exit_status, 0) << abci;
  EXPECT_EQ(LineStartingWith(abci.out, "network:"),
            "network: abci: 4 GPUs per node at 9 us and 50 GB/s each; 2 NICs per node at 41 us "
            "and 12.5 GB/s each");
  ExpectFirstLine({"plan", "--model", "vgg16", "--network", "abcd"}, 1,
                  "wavepool plan: --network: unknown network preset \"abcd\"; presets: default, "
                  "abci, v100, a100-40gb, h100, h200; did you mean \"abci\"? (or give a JSON or "
                  "YAML file)");
  const ProcessResult help = Wavepool({"plan", "--help"});
  EXPECT_THAT(help.out, HasSubstr("a preset (default, abci, v100, a100-40gb, h100, h200"));
}

TEST(Usage, ALayerTableTypoNamesTheLineTheColumnAndTheClosestType) {
  const std::string path = WriteFile(MakeTestDir(), "typo.csv",
                                     "name,type,inputs,input_shape,weight_shape,output_shape\n"
                                     "fc1,linear,,16,8x16,8\n"
                                     "act,rleu,fc1,8,,8\n");
  const ProcessResult result = Wavepool({"plan", "--layer-table", path});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_THAT(result.err,
              AllOf(StartsWith(absl::StrCat("wavepool plan: ", path,
                                            ": layer table line 3, column type: unknown layer "
                                            "type 'rleu'; known types: ")),
                    EndsWith("; did you mean 'relu'?\n")));
}

TEST(Usage, SixtyFiveThousandGpusPlanAPlanThatFitsAndSaySo) {
  const ProcessResult result = Wavepool({"plan", "--model", "vgg16", "--gpus", "65536"});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0) << result;
  EXPECT_THAT(result.out, AllOf(HasSubstr("\n  - memory: the search's optimum needs "),
                                HasSubstr("searched again with every layer on at least ")));
  EXPECT_THAT(result.out, Not(HasSubstr("ModelParallelWaves")));
}

}  // namespace
}  // namespace wavepool::cli
