// `wavepool codec encode|decode`: the files it writes are the runtime codec's bytes, the report
// gives the round trip's error, and every bad input or output is a one-line error naming the
// file that leaves the output untouched (no partial or temporary file behind).
#include "wavepool/cli/codec_command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/subprocess.h"
#include "tests/support/files.h"
#include "wavepool/runtime/weight_codec.h"

namespace wavepool::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using ::wavepool::cli::testing::MakeTestDir;
using ::wavepool::cli::testing::ProcessResult;
using ::wavepool::cli::testing::RunProcess;
using ::wavepool::cli::testing::WriteFile;
using ::wavepool::testing::ReadFileOrEmpty;

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

Result Codec(CodecMode mode, const std::string& in, const std::string& out) {
  CodecFlags flags;
  flags.mode = mode;
  flags.in = in;
  flags.out = out;
  std::ostringstream out_stream, err_stream;
  Result result;
  result.status = RunCodec(flags, out_stream, err_stream);
  result.out = out_stream.str();
  result.err = err_stream.str();
  return result;
}

// Raw little-endian float32, as `encode` reads them (the test hosts are little-endian).
std::string RawFloats(const std::vector<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::string Bytes(const std::vector<std::uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

std::set<std::string> DirectoryEntries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// Text ending in its only newline.
bool IsOneLine(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

// A one-line error naming the subcommand and every part, nothing on stdout.
void ExpectError(const Result& result, const std::string& mode,
                 const std::vector<std::string>& parts) {
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_THAT(result.err, StartsWith(absl::StrCat("wavepool codec ", mode, ": ")));
  EXPECT_TRUE(IsOneLine(result.err)) << result.err;
  for (const std::string& part : parts) EXPECT_THAT(result.err, HasSubstr(part));
}

// Group 1 (base 0111): 1 + 2^-6 truncates to 1, 1e-6 is below 2^-15 beside it and becomes 0,
// 0.25 is exact. Group 2 (base 0110): -0 stays -0, 3e-6 = 1.5729 * 2^-19 keeps 1.5625 * 2^-19.
const std::vector<float> kValues = {1.015625f, 1e-6f, 0.25f, -0.0f, 3e-6f, 0.0f};

TEST(CodecCommand, EncodeWritesTheCodecsStreamAndReportsTheRoundTripError) {
  const std::string dir = MakeTestDir();
  const std::string in = WriteFile(dir, "weights.f32", RawFloats(kValues));
  const std::string out = dir + "/weights.wpc";
  const Result result = Codec(CodecMode::kEncode, in, out);
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, IsEmpty());
  EXPECT_EQ(result.out,
            "values: 6\n"
            "bytes in: 24\n"
            "bytes out: 24\n"
            "max absolute error: 0.015625 (value 0: 1.015625 -> 1)\n"
            "max relative error: 0.0153846 (value 0) over 3 nonzero values kept; bound 0.03125\n"
            "flushed to zero: 1 nonzero values, largest 1e-06 (below 2^-15 beside a larger value "
            "in their group of 3, or below 2^-31)\n");
  EXPECT_EQ(ReadFileOrEmpty(out), Bytes(*runtime::EncodeWeights(kValues)));
  EXPECT_EQ(DirectoryEntries(dir), (std::set<std::string>{"weights.f32", "weights.wpc"}));
}

TEST(CodecCommand, DecodeWritesTheDecodedFloatsBack) {
  const std::string dir = MakeTestDir();
  const std::string stream = WriteFile(dir, "w.wpc", Bytes(*runtime::EncodeWeights(kValues)));
  const std::string out = dir + "/w.f32";
  const Result result = Codec(CodecMode::kDecode, stream, out);
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "values: 6\nbytes in: 24\nbytes out: 24\n");
  EXPECT_EQ(ReadFileOrEmpty(out), RawFloats({1.0f, 0.0f, 0.25f, -0.0f, 0x1.9p-19f, 0.0f}));
}

TEST(CodecCommand, AnEmptyFileIsZeroValues) {
  const std::string dir = MakeTestDir();
  const std::string in = WriteFile(dir, "empty.f32", "");
  ASSERT_EQ(Codec(CodecMode::kEncode, in, dir + "/e.wpc").status, 0);
  EXPECT_EQ(ReadFileOrEmpty(dir + "/e.wpc").size(), runtime::kWeightCodecHeaderBytes);
  const Result decoded = Codec(CodecMode::kDecode, dir + "/e.wpc", dir + "/e.f32");
  ASSERT_EQ(decoded.status, 0) << decoded.err;
  EXPECT_EQ(decoded.out, "values: 0\nbytes in: 16\nbytes out: 0\n");
  EXPECT_TRUE(std::filesystem::exists(dir + "/e.f32"));
  EXPECT_EQ(std::filesystem::file_size(dir + "/e.f32"), 0u);
}

TEST(CodecCommand, AMissingInputNamesTheFile) {
  const std::string dir = MakeTestDir();
  ExpectError(Codec(CodecMode::kEncode, dir + "/absent.f32", dir + "/out"), "encode",
              {dir + "/absent.f32", "No such file"});
  ExpectError(Codec(CodecMode::kDecode, dir + "/absent.wpc", dir + "/out"), "decode",
              {dir + "/absent.wpc", "No such file"});
  ExpectError(Codec(CodecMode::kEncode, dir, dir + "/out"), "encode", {dir, "not a regular file"});
  // A FIFO nobody writes to is refused at once rather than waited on.
  const std::string fifo = dir + "/weights.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  ExpectError(Codec(CodecMode::kDecode, fifo, dir + "/out"), "decode",
              {fifo, "not a regular file"});
  EXPECT_FALSE(std::filesystem::exists(dir + "/out"));
}

TEST(CodecCommand, AnInputThatIsNotWholeFloatsIsRejected) {
  const std::string dir = MakeTestDir();
  const std::string in = WriteFile(dir, "odd.f32", RawFloats({1.0f}) + "x");
  ExpectError(Codec(CodecMode::kEncode, in, dir + "/out"), "encode",
              {in, "5 bytes is not a whole number of float32 values (a multiple of 4)"});
  EXPECT_FALSE(std::filesystem::exists(dir + "/out"));
}

TEST(CodecCommand, AValueTheCodecCannotHoldNamesTheFileAndIndexAndLeavesTheOutputAlone) {
  const std::string dir = MakeTestDir();
  const std::string in = WriteFile(
      dir, "w.f32", RawFloats({0.5f, 0.25f, std::numeric_limits<float>::quiet_NaN(), 3.0f}));
  const std::string out = WriteFile(dir, "w.wpc", "previous content");
  ExpectError(Codec(CodecMode::kEncode, in, out), "encode", {in, "value 2 is nan"});
  EXPECT_EQ(ReadFileOrEmpty(out), "previous content");
  EXPECT_EQ(DirectoryEntries(dir), (std::set<std::string>{"w.f32", "w.wpc"}));
  const std::string large = WriteFile(dir, "large.f32", RawFloats({0.5f, -3.0f}));
  ExpectError(Codec(CodecMode::kEncode, large, out), "encode",
              {large, "value 1 is -3: magnitudes of 2 or more cannot be encoded"});
}

TEST(CodecCommand, ACorruptStreamNamesTheFileAndTheOffset) {
  const std::string dir = MakeTestDir();
  const std::string full = Bytes(*runtime::EncodeWeights(kValues));
  const std::string out = WriteFile(dir, "out.f32", "previous content");
  const std::string truncated = WriteFile(dir, "t.wpc", full.substr(0, full.size() - 1));
  ExpectError(Codec(CodecMode::kDecode, truncated, out), "decode",
              {truncated, "truncated at offset 23: 6 values need 24 bytes"});
  const std::string raw = WriteFile(dir, "raw.f32", RawFloats(kValues));
  ExpectError(Codec(CodecMode::kDecode, raw, out), "decode",
              {raw, "offset 0: magic is", "not a weight codec stream"});
  const std::string short_file = WriteFile(dir, "s.wpc", "WPWC");
  ExpectError(Codec(CodecMode::kDecode, short_file, out), "decode",
              {short_file, "truncated at offset 4: the header needs 16 bytes"});
  EXPECT_EQ(ReadFileOrEmpty(out), "previous content");
}

TEST(CodecCommand, AnUnwritableOutputNamesItAndLeavesNoTemporaryFile) {
  const std::string dir = MakeTestDir();
  const std::string in = WriteFile(dir, "w.f32", RawFloats(kValues));
  ExpectError(Codec(CodecMode::kEncode, in, dir + "/missing/w.wpc"), "encode",
              {dir + "/missing/w.wpc", "No such file or directory"});
  // A directory in the way: the rename fails and the temporary file is removed.
  std::filesystem::create_directory(dir + "/taken");
  ExpectError(Codec(CodecMode::kEncode, in, dir + "/taken"), "encode",
              {"rename " + dir + "/taken", " to " + dir + "/taken: "});
  EXPECT_EQ(DirectoryEntries(dir), (std::set<std::string>{"w.f32", "taken"}));
  EXPECT_THAT(DirectoryEntries(dir + "/taken"), IsEmpty());
}

TEST(CodecCommand, OutputMayReplaceTheInput) {
  const std::string dir = MakeTestDir();
  const std::string path = WriteFile(dir, "w", RawFloats(kValues));
  ASSERT_EQ(Codec(CodecMode::kEncode, path, path).status, 0);
  ASSERT_EQ(Codec(CodecMode::kDecode, path, path).status, 0);
  EXPECT_EQ(ReadFileOrEmpty(path), RawFloats({1.0f, 0.0f, 0.25f, -0.0f, 0x1.9p-19f, 0.0f}));
}

TEST(CodecCommand, WithoutEncodeOrDecodeItIsAnError) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCodec(CodecFlags{}, out, err), 1);
  EXPECT_THAT(out.str(), IsEmpty());
  EXPECT_EQ(err.str(), "wavepool codec: give a subcommand: encode or decode\n");
}

// --- The binary, as a user runs it ------------------------------------------------------------

ProcessResult Wavepool(const std::vector<std::string>& args) {
  return RunProcess(WAVEPOOL_BINARY, args);
}

TEST(CodecBinary, EncodeAndDecodeThroughTheBinaryMatchRunCodec) {
  const std::string dir = MakeTestDir();
  const std::string in = WriteFile(dir, "w.f32", RawFloats(kValues));
  const ProcessResult encoded = Wavepool({"codec", "encode", "--in", in, "--out", dir + "/w.wpc"});
  ASSERT_TRUE(encoded.exited) << encoded;
  EXPECT_EQ(encoded.exit_status, 0) << encoded;
  EXPECT_THAT(encoded.err, IsEmpty());
  EXPECT_EQ(encoded.out, Codec(CodecMode::kEncode, in, dir + "/again.wpc").out);
  const ProcessResult decoded =
      Wavepool({"codec", "decode", "--in", dir + "/w.wpc", "--out", dir + "/w2.f32"});
  ASSERT_TRUE(decoded.exited) << decoded;
  EXPECT_EQ(decoded.exit_status, 0) << decoded;
  EXPECT_EQ(decoded.out, "values: 6\nbytes in: 24\nbytes out: 24\n");
  EXPECT_EQ(ReadFileOrEmpty(dir + "/w2.f32"),
            RawFloats({1.0f, 0.0f, 0.25f, -0.0f, 0x1.9p-19f, 0.0f}));
}

TEST(CodecBinary, ErrorsExitOneWithOneLineOnStderr) {
  const std::string dir = MakeTestDir();
  const ProcessResult result =
      Wavepool({"codec", "decode", "--in", dir + "/absent", "--out", dir + "/out"});
  ASSERT_TRUE(result.exited) << result;
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_THAT(result.err, StartsWith("wavepool codec decode: open " + dir + "/absent: "));
  EXPECT_TRUE(IsOneLine(result.err)) << result.err;
}

TEST(CodecBinary, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"codec"},
                                             {"codec", "compress", "--in", "a", "--out", "b"},
                                             {"codec", "encode", "--out", "b"},
                                             {"codec", "decode", "--in", "a"}}) {
    const ProcessResult result = Wavepool(args);
    ASSERT_TRUE(result.exited) << result;
    EXPECT_EQ(result.exit_status, 2) << result;
    EXPECT_THAT(result.out, IsEmpty());
  }
}

TEST(CodecBinary, HelpListsEncodeAndDecodeAndTheirFlags) {
  const ProcessResult top = Wavepool({"--help"});
  EXPECT_THAT(top.out, HasSubstr("codec"));
  const ProcessResult codec = Wavepool({"codec", "--help"});
  EXPECT_EQ(codec.exit_status, 0);
  EXPECT_THAT(codec.out, AllOf(HasSubstr("encode"), HasSubstr("decode")));
  const ProcessResult encode = Wavepool({"codec", "encode", "--help"});
  EXPECT_EQ(encode.exit_status, 0);
  EXPECT_THAT(encode.out, AllOf(HasSubstr("--in"), HasSubstr("--out")));
}

}  // namespace
}  // namespace wavepool::cli
