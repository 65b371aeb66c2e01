// `wavepool profile` as a user runs it: the profile it writes is what `wavepool plan --profile`
// plans with, and bad flags exit 2 with one line naming the flag.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/subprocess.h"

namespace wavepool::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using ::wavepool::cli::testing::MakeTestDir;
using ::wavepool::cli::testing::ProcessResult;
using ::wavepool::cli::testing::RunProcess;

ProcessResult Wavepool(const std::vector<std::string>& args) {
  return RunProcess(WAVEPOOL_BINARY, args);
}

TEST(WavepoolProfile, WritesAProfileThatPlanUses) {
  const std::string path = MakeTestDir() + "/cnn_tiny.csv";
  const ProcessResult profiled =
      Wavepool({"profile", "--model", "cnn_tiny", "--batch-sizes", "1,2,4", "--out", path,
                "--warmup", "1", "--repeats", "3", "--threads", "1"});
  ASSERT_TRUE(profiled.exited) << profiled;
  ASSERT_EQ(profiled.exit_status, 0) << profiled;
  EXPECT_THAT(profiled.err, IsEmpty());
  EXPECT_THAT(profiled.out, HasSubstr("wrote " + path + ": 24 rows (8 layers x 3 batch sizes)"));
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_THAT(text.str(), StartsWith("model,per_gpu_batch,layer_idx,name,params_json,input_dim,"
                                     "total_ms,fw_us,bw_us\ncnn_tiny,1,0,conv2d,"));

  const ProcessResult planned = Wavepool(
      {"plan", "--model", "cnn_tiny", "--profile", path, "--gpus", "2", "--global-batch", "8"});
  ASSERT_TRUE(planned.exited) << planned;
  ASSERT_EQ(planned.exit_status, 0) << planned;
  EXPECT_THAT(planned.out, HasSubstr("\ncompute cost: measured profile of cnn_tiny (8 layers; "
                                     "others analytical"));
}

// A write that fails part-way (here the file-size limit; a full disk alike) keeps the profile
// --out held before, instead of leaving it truncated.
TEST(WavepoolProfile, AFailedWriteKeepsTheEarlierProfile) {
  const std::string path = MakeTestDir() + "/cnn_tiny.csv";
  const std::string earlier = "an earlier profile\n";
  std::ofstream(path) << earlier;
  // 1 KiB: the profile is about 2 KiB. SIGXFSZ ignored, so that the write fails with EFBIG.
  const ProcessResult profiled =
      RunProcess("/bin/sh", {"-c", "ulimit -f 2; trap '' XFSZ; exec \"$0\" \"$@\"", WAVEPOOL_BINARY,
                             "profile", "--model", "cnn_tiny", "--batch-sizes", "1,2,4", "--out",
                             path, "--warmup", "0", "--repeats", "1", "--threads", "1"});
  ASSERT_TRUE(profiled.exited) << profiled;
  EXPECT_EQ(profiled.exit_status, 1) << profiled;
  EXPECT_THAT(profiled.err, AllOf(StartsWith("wavepool profile: --out: "), HasSubstr(path),
                                  HasSubstr("File too large")));
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), earlier);
}

TEST(WavepoolProfile, BadFlagsExitTwoNamingTheFlag) {
  const std::string out = MakeTestDir() + "/p.csv";
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--model", "vgg19", "--batch-sizes", "1", "--out", out}, "--model: unknown built-in"},
      {{"--model", "cnn_tiny", "--batch-sizes", "0", "--out", out}, "--batch-sizes: \"0\""},
      {{"--model", "cnn_tiny", "--batch-sizes", "2,1", "--out", out},
       "--batch-sizes: must be strictly ascending"},
      {{"--model", "cnn_tiny", "--batch-sizes", "1", "--out", "/nonexistent-dir/p.csv"},
       "--out: cannot write /nonexistent-dir/p.csv"},
      {{"--model", "cnn_tiny", "--batch-sizes", "1", "--out", out, "--repeats", "0"},
       "--repeats: must be in [1, 1000000], got 0"},
      {{"--model", "cnn_tiny", "--batch-sizes", "1", "--out", out, "--threads", "100000"},
       "--threads: must be in [0, 1024]"},
      {{"--model", "cnn_tiny", "--out", out}, "--batch-sizes is required"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin(), "profile");
    SCOPED_TRACE(absl::StrJoin(args, " "));
    const ProcessResult result = Wavepool(args);
    ASSERT_TRUE(result.exited) << result;
    EXPECT_EQ(result.exit_status, 2) << result;
    EXPECT_THAT(result.out, IsEmpty());
    EXPECT_THAT(result.err, HasSubstr(c.message));
  }
}

TEST(WavepoolProfile, HelpListsItsFlags) {
  const ProcessResult result = Wavepool({"profile", "--help"});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 0);
  for (const char* flag : {"--model", "--layer-table", "--batch-sizes", "--out", "--warmup INT=2",
                           "--repeats INT=5", "--threads INT=0"}) {
    EXPECT_THAT(result.out, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace wavepool::cli
