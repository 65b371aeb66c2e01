// Atomic whole-file writes: the file is the old one or the whole new one, never a mix; a failed
// write names the path and the step and leaves no temporary file; reads name what they read.
#include "wavepool/base/atomic_file.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::IsOkAndHolds;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFile, WritesThePiecesInOrderWithMode0644) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  const std::string path = dir.File("report.json");
  ASSERT_OK(WriteFileAtomically(path, {"{\"a\":", "1", "}"}));
  EXPECT_THAT(ReadWholeFile(path, "report"), IsOkAndHolds(std::string("{\"a\":1}")));
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0644));
  EXPECT_THAT(Entries(dir.path()), ElementsAre("report.json"));
}

TEST(AtomicFile, ReplacesAnExistingFileWhole) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  const std::string path = dir.File("LATEST");
  ASSERT_OK(WriteFileAtomically(path, std::string_view("a much longer old content\n")));
  ASSERT_OK(WriteFileAtomically(path, std::string_view("7\n")));
  EXPECT_THAT(ReadWholeFile(path, "LATEST file"), IsOkAndHolds(std::string("7\n")));
}

TEST(AtomicFile, AMissingDirectoryNamesThePath) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  const std::string path = dir.File("missing/out.bin");
  EXPECT_THAT(
      WriteFileAtomically(path, std::string_view("x")),
      StatusIs(absl::StatusCode::kNotFound,
               HasSubstr("create a temporary file for " + path + ": No such file or directory")));
}

TEST(AtomicFile, AFailedRenameNamesTheStepAndLeavesNoTemporaryFile) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  const std::string path = dir.File("taken");
  std::filesystem::create_directories(path + "/child");
  EXPECT_THAT(WriteFileAtomically(path, std::string_view("x")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("rename " + path + std::string(kAtomicTemporaryInfix)),
                             HasSubstr(" to " + path + ": "))));
  EXPECT_THAT(Entries(dir.path()), ElementsAre("taken"));
}

TEST(AtomicFile, ReadingADirectoryOrAMissingFileNamesIt) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  EXPECT_THAT(ReadWholeFile(dir.path(), "checkpoint"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("read checkpoint " + dir.path() + ": not a regular file")));
  EXPECT_THAT(ReadWholeFile(dir.File("absent"), "checkpoint"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("read checkpoint " + dir.File("absent") + ": ")));
}

TEST(AtomicFile, DirectoryOfABareNameIsTheWorkingDirectory) {
  EXPECT_EQ(DirectoryOf("LATEST"), ".");
  EXPECT_EQ(DirectoryOf("/ckpt/step-3/rank-0.ckpt"), "/ckpt/step-3");
  EXPECT_OK(SyncDirectory("."));
}

}  // namespace
}  // namespace wavepool
