// The `wavepool` binary as a user runs it: exit statuses, what goes to stdout and stderr, and an
// error message that names the problem for every kind of bad input. Nothing may crash or hang
// (RunProcess kills a child after two minutes), and stdout stays empty on error.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/subprocess.h"
#include "wavepool/cli/plan_command.h"
#include "wavepool/cli/version.h"

namespace wavepool::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::StartsWith;
using ::wavepool::cli::testing::MakeTestDir;
using ::wavepool::cli::testing::ProcessResult;
using ::wavepool::cli::testing::ReadSourceFile;
using ::wavepool::cli::testing::RunProcess;
using ::wavepool::cli::testing::WriteFile;

ProcessResult Wavepool(const std::vector<std::string>& args) {
  return RunProcess(WAVEPOOL_BINARY, args);
}

std::vector<std::string> Plan(std::vector<std::string> args) {
  args.insert(args.begin(), "plan");
  return args;
}

const std::vector<std::string> kReadme = {"plan", "--model",        "vgg16", "--gpus",
                                          "8",    "--global-batch", "32",    "--device",
                                          "a100", "--amp-limit",    "2"};

// A failure: the status, nothing on stdout, and a message on stderr naming every part.
void ExpectFails(const std::vector<std::string>& args, int status,
                 const std::vector<std::string>& parts) {
  SCOPED_TRACE(absl::StrCat("wavepool ", absl::StrJoin(args, " ")));
  const ProcessResult result = Wavepool(args);
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, status) << result;
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_FALSE(result.err.empty());
  for (const std::string& part : parts) EXPECT_THAT(result.err, HasSubstr(part));
}

// Errors RunPlan reports (exit 1) are one line that starts with the subcommand.
void ExpectPlanFails(const std::vector<std::string>& args, const std::vector<std::string>& parts) {
  std::vector<std::string> with_prefix = parts;
  with_prefix.push_back("wavepool plan: ");
  ExpectFails(args, 1, with_prefix);
}

TEST(WavepoolBinary, ReadmeCommandPrintsThePlan) {
  const ProcessResult result = Wavepool(kReadme);
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0) << result;
  EXPECT_THAT(result.err, IsEmpty());
  EXPECT_THAT(result.out,
              AllOf(StartsWith("vgg16 on 8 x a100-40gb (NVIDIA A100-SXM4-40GB), global batch 32"),
                    HasSubstr("\nstrategy: BurstParallel\n"), HasSubstr("\niteration: "),
                    HasSubstr("\nidle for background jobs: "), HasSubstr("\nwhy:\n")));
  // The binary only wires flags to RunPlan: its output is RunPlan's.
  PlanFlags flags;
  flags.model = "vgg16";
  flags.gpus = 8;
  flags.global_batch = 32;
  flags.device = "a100";
  flags.amp_limit = 2;
  std::ostringstream out, err;
  ASSERT_EQ(RunPlan(flags, out, err), 0);
  EXPECT_EQ(result.out, out.str());
}

TEST(WavepoolBinary, JsonGoesToStdoutAlone) {
  std::vector<std::string> args = kReadme;
  args.push_back("--json");
  const ProcessResult result = Wavepool(args);
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0) << result;
  EXPECT_THAT(result.out, StartsWith("{"));
  EXPECT_THAT(result.err, IsEmpty());
}

TEST(WavepoolBinary, VersionPrintsTheProjectVersion) {
  const ProcessResult result = Wavepool({"version"});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_EQ(result.out, absl::StrCat("wavepool ", std::string(Version()), "\n"));
  EXPECT_THAT(std::string(Version()), MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
  EXPECT_THAT(result.err, IsEmpty());
}

TEST(WavepoolBinary, HelpListsTheSubcommands) {
  const ProcessResult result = Wavepool({"--help"});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_THAT(result.out, AllOf(HasSubstr("plan"), HasSubstr("version")));
}

TEST(WavepoolBinary, PlanHelpListsEveryFlagWithItsDefault) {
  const ProcessResult result = Wavepool({"plan", "--help"});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0);
  for (const char* flag : {"--model",
                           "--layer-table",
                           "--profile",
                           "--analytic",
                           "--precision TEXT=mixed",
                           "--device TEXT=a100",
                           "--network",
                           "--gpus INT=1",
                           "--global-batch",
                           "--amp-limit FLOAT=2",
                           "--gpu-counts TEXT=PowersOfTwo",
                           "--strategy TEXT=Auto",
                           "--tick-tock TEXT=Auto",
                           "--cpu-split TEXT=Auto",
                           "--preload TEXT=Auto",
                           "--weight-compression TEXT=Auto",
                           "--optimizer TEXT=SGD",
                           "--dataset-samples INT=1280000",
                           "--steps INT=0",
                           "--learning-rate FLOAT=0.01",
                           "--seed INT=0",
                           "--checkpoint-interval-steps INT=0",
                           "--job",
                           "--compare",
                           "--json",
                           "--layers"}) {
    EXPECT_THAT(result.out, HasSubstr(flag));
  }
}

TEST(WavepoolBinaryUsage, NoSubcommand) { ExpectFails({}, 2, {"subcommand"}); }

TEST(WavepoolBinaryUsage, NonNumberForGpus) {
  ExpectFails(Plan({"--model", "vgg16", "--gpus", "eight"}), 2, {"--gpus", "eight"});
}

TEST(WavepoolBinaryUsage, NonNumberForAmplificationLimit) {
  ExpectFails(Plan({"--model", "vgg16", "--amp-limit", "two"}), 2, {"--amp-limit", "two"});
}

TEST(WavepoolBinaryUsage, UnknownFlag) {
  ExpectFails(Plan({"--model", "vgg16", "--bogus"}), 2, {"--bogus"});
}

TEST(WavepoolBinaryUsage, FlagWithoutItsValue) { ExpectFails(Plan({"--model"}), 2, {"--model"}); }

TEST(WavepoolBinaryErrors, UnknownModelListsTheKnownOnes) {
  ExpectPlanFails(Plan({"--model", "vgg19", "--gpus", "8"}),
                  {"vgg19", "vgg16", "resnet50", "wide_resnet101_2", "inception_v3", "bert_base",
                   "mlp_tiny", "cnn_tiny", "branchy_tiny"});
}

TEST(WavepoolBinaryErrors, UnknownDeviceListsTheKnownOnes) {
  ExpectPlanFails(Plan({"--model", "vgg16", "--device", "x100"}),
                  {"x100", "v100", "a100", "h100", "h200"});
}

TEST(WavepoolBinaryErrors, GlobalBatchSmallerThanTheGpus) {
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpus", "8", "--global-batch", "4"}),
                  {"global batch 4", "8 GPUs"});
}

TEST(WavepoolBinaryErrors, AmplificationLimitBelowOne) {
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpus", "8", "--amp-limit", "0.5"}),
                  {"amplification limit", ">= 1", "0.5"});
}

TEST(WavepoolBinaryErrors, BadEnumValuesListTheValidOnes) {
  ExpectPlanFails(
      Plan({"--model", "vgg16", "--strategy", "Fastest"}),
      {"--strategy", "Auto, DataParallel, BurstParallel, TickTock, ModelParallelWaves", "Fastest"});
  ExpectPlanFails(Plan({"--model", "vgg16", "--tick-tock", "maybe"}),
                  {"--tick-tock", "Auto, On, Off", "maybe"});
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpu-counts", "Odd"}),
                  {"--gpu-counts", "PowersOfTwo, AllIntegers", "Odd"});
}

TEST(WavepoolBinaryErrors, ExactlyOneOfModelAndLayerTable) {
  ExpectPlanFails(Plan({"--gpus", "8"}), {"--model", "--layer-table"});
  const std::string dir = MakeTestDir();
  const std::string table = WriteFile(dir, "one.csv",
                                      "name,type,inputs,input_shape,weight_shape,output_shape\n"
                                      "fc,linear,,16,4x16,4\n");
  ExpectPlanFails(Plan({"--model", "vgg16", "--layer-table", table}), {"--model", "--layer-table"});
}

TEST(WavepoolBinaryErrors, MissingLayerTableFile) {
  const std::string path = MakeTestDir() + "/missing.csv";
  ExpectPlanFails(Plan({"--layer-table", path}), {path, "No such file"});
}

TEST(WavepoolBinaryErrors, MalformedLayerTableNamesTheFileLineAndColumn) {
  const std::string dir = MakeTestDir();
  // A linear 16 -> 4 cannot output 5 values.
  const std::string wrong_shape =
      WriteFile(dir, "wrong_shape.csv",
                "# a one-layer model\nname,type,inputs,input_shape,weight_shape,output_shape\n"
                "fc,linear,,16,4x16,5\n");
  ExpectPlanFails(Plan({"--layer-table", wrong_shape}),
                  {wrong_shape, "line 3", "output_shape", "[4]"});
  const std::string no_shape = WriteFile(dir, "no_shape.csv", "name,type,inputs\nfc,linear,\n");
  ExpectPlanFails(Plan({"--layer-table", no_shape}), {no_shape, "line 1", "input_shape"});
  const std::string bad_dim =
      WriteFile(dir, "bad_dim.csv",
                "name,type,inputs,input_shape,weight_shape,output_shape\nfc,linear,,16,4x16,x0\n");
  ExpectPlanFails(Plan({"--layer-table", bad_dim}), {bad_dim, "line 2", "output_shape"});
  const std::string empty = WriteFile(dir, "empty.csv", "");
  ExpectPlanFails(Plan({"--layer-table", empty}), {empty, "header"});
}

TEST(WavepoolBinaryErrors, MissingProfileFile) {
  const std::string path = MakeTestDir() + "/missing_profile.csv";
  ExpectPlanFails(Plan({"--model", "vgg16", "--profile", path}), {path, "No such file"});
}

// The shipped profile's header and its vgg16 rows only.
std::string Vgg16ProfileCsv() {
  std::string csv;
  for (absl::string_view line :
       absl::StrSplit(ReadSourceFile("data/profiles/deeppool_a100_layer_profiles.csv"), '\n')) {
    if (absl::StartsWith(line, "model,") || absl::StartsWith(line, "vgg16,")) {
      absl::StrAppend(&csv, line, "\n");
    }
  }
  return csv;
}

TEST(WavepoolBinaryErrors, ProfileOfAnotherModel) {
  const std::string csv = Vgg16ProfileCsv();
  ASSERT_GT(std::count(csv.begin(), csv.end(), '\n'), 300);  // 1 header + 332 vgg16 rows
  const std::string path = WriteFile(MakeTestDir(), "vgg16_profile.csv", csv);
  // One model in the file: it is bound to the graph and its first row matches nothing.
  ExpectPlanFails(Plan({"--model", "resnet50", "--gpus", "8", "--profile", path}),
                  {path, "profile of vgg16", "matches no", "resnet50"});
  // Several models: none is resnet50, and the message lists those it has.
  const std::string shipped =
      std::string(WAVEPOOL_SOURCE_DIR) + "/data/profiles/deeppool_a100_layer_profiles.csv";
  ExpectPlanFails(Plan({"--model", "resnet50", "--profile", shipped}),
                  {"no profile of model resnet50", "inception_v3", "vgg16", "wrn101_2"});
}

TEST(WavepoolBinaryErrors, MalformedProfile) {
  const std::string path =
      WriteFile(MakeTestDir(), "bad_profile.csv", "model,per_gpu_batch\nvgg16,abc\n");
  ExpectPlanFails(Plan({"--model", "vgg16", "--profile", path}), {path, "line 1", "header"});
}

TEST(WavepoolBinaryErrors, MalformedNetworkFile) {
  const std::string dir = MakeTestDir();
  const std::string syntax = WriteFile(dir, "syntax.json", "{\"name\": \"x\", ");
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpus", "8", "--network", syntax}), {syntax, "JSON"});
  const std::string negative =
      WriteFile(dir, "negative.json",
                R"({"intraNode": {"alphaSeconds": 9e-6, "bytesPerSecond": -1},)"
                R"( "interNode": {"alphaSeconds": 4e-5, "bytesPerSecond": 1.25e10}})");
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpus", "8", "--network", negative}),
                  {negative, "intraNode.bytesPerSecond", "> 0", "-1"});
  const std::string unknown = WriteFile(dir, "unknown.yaml", "name: x\nbandwidth: 1\n");
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpus", "8", "--network", unknown}),
                  {unknown, "bandwidth", "unknown field"});
  ExpectPlanFails(Plan({"--model", "vgg16", "--network", dir + "/missing.yaml"}),
                  {"missing.yaml", "No such file"});
}

TEST(WavepoolBinaryErrors, ModelThatFitsNoGpu) {
  // One linear layer of 100,000 x 100,000: 1e10 parameters, 40 GB of fp32 weights alone before
  // gradients and optimizer state, more than an A100's 40 GiB even split over every stage.
  const std::string path = WriteFile(MakeTestDir(), "enormous.csv",
                                     "name,type,inputs,input_shape,weight_shape,output_shape\n"
                                     "fc,linear,,100000,100000x100000,100000\n");
  ExpectPlanFails(Plan({"--layer-table", path, "--gpus", "8"}),
                  {"enormous", "does not fit", "40.0 GiB", "a100-40gb"});
}

TEST(WavepoolBinaryErrors, TickTockOnWithABurstParallelPlan) {
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpus", "8", "--global-batch", "32", "--strategy",
                        "BurstParallel", "--tick-tock", "On"}),
                  {"tick-tock", "data-parallel plan", "burst-parallel"});
}

TEST(WavepoolBinaryErrors, TickTockWhoseTwoWavesDoNotFit) {
  // wide_resnet101_2 at 256 samples per V100: one wave alone fits (the data-parallel plan is
  // valid), two need about 48 GiB against the 31 GiB usable.
  ExpectPlanFails(Plan({"--model", "wide_resnet101_2", "--gpus", "8", "--global-batch", "2048",
                        "--device", "v100", "--strategy", "TickTock"}),
                  {"tick-tock", "two waves of 256 samples", "per GPU", "v100"});
}

TEST(WavepoolBinaryErrors, ConflictingFlags) {
  ExpectPlanFails(Plan({"--model", "vgg16", "--analytic", "--profile", "x.csv"}),
                  {"--analytic", "--profile"});
  ExpectPlanFails(Plan({"--model", "vgg16", "--json", "--layers"}), {"--json", "--layers"});
}

TEST(WavepoolBinaryErrors, NegativeGlobalBatch) {
  ExpectPlanFails(Plan({"--model", "vgg16", "--gpus", "8", "--global-batch", "-8"}),
                  {"--global-batch", "-8"});
}

TEST(WavepoolBinaryErrors, BadTrainingFlagsNameTheFlag) {
  ExpectPlanFails(Plan({"--model", "mlp_tiny", "--steps", "-3"}), {"--steps", "got -3"});
  ExpectPlanFails(Plan({"--model", "mlp_tiny", "--learning-rate", "0"}),
                  {"--learning-rate", "must be a finite number > 0"});
}

TEST(WavepoolBinaryErrors, MalformedJobName) {
  ExpectPlanFails(Plan({"--model", "vgg16", "--job", "no namespace"}),
                  {"job: must be namespace/name", "no namespace"});
}

}  // namespace
}  // namespace wavepool::cli
