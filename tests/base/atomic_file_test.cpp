// Atomic whole-file writes: the file is the old one or the whole new one, never a mix; a failed
// write names the path and the step and leaves no temporary file; reads name what they read, go
// on to the real end of a file and report one that ends before its size as DataLoss.
#include "wavepool/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/base/scoped_fd.h"

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

TEST(AtomicFile, AFileTheCallerOpenedIsReadWholeAndStaysOpen) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  const std::string path = dir.File("w.bin");
  ASSERT_OK(WriteFileAtomically(path, std::string_view("\0\1\2", 3)));
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(ReadWholeFile(fd, path, "weights"), IsOkAndHolds(std::string("\0\1\2", 3)));
  EXPECT_NE(::fcntl(fd.get(), F_GETFD), -1);
  // Without a name the message is "read <path>: ...".
  ScopedFd directory(::open(dir.path().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(directory.valid());
  EXPECT_THAT(ReadWholeFile(directory, dir.path(), ""),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("read " + dir.path() + ": not a regular file")));
}

// A FIFO is refused at once, not waited on until a writer comes (a hostile LATEST file).
TEST(AtomicFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  const std::string path = dir.File("LATEST");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_THAT(ReadWholeFile(path, "LATEST file"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("read LATEST file " + path + ": not a regular file")));
}

TEST(AtomicFile, AFileLargerThanItsBoundIsRefusedUnread) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-atomic"));
  const std::string path = dir.File("m.yaml");
  ASSERT_OK(WriteFileAtomically(path, "0123456789"));
  EXPECT_THAT(ReadWholeFile(path, "manifest", 10), IsOkAndHolds(std::string("0123456789")));
  EXPECT_THAT(ReadWholeFile(path, "manifest", 9),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("read manifest " + path +
                                 ": 10 bytes, more than the 9 such a file may hold")));
}

// /proc reports size 0 for files that have content: the read goes on to the end.
TEST(AtomicFile, AFileLongerThanItsReportedSizeIsReadToTheEnd) {
  ASSERT_OK_AND_ASSIGN(const std::string status, ReadWholeFile("/proc/self/status", "status"));
  EXPECT_THAT(status, HasSubstr("Pid:"));
}

// A file that ends before the size fstat gave is a torn read. sysfs reports 4096 bytes for
// files of a few bytes, which is what a file truncated in place while read looks like.
TEST(AtomicFile, AFileShorterThanItsSizeWhenOpenedIsDataLoss) {
  const std::string path = "/sys/kernel/uevent_seqnum";
  std::error_code error;
  const auto reported = std::filesystem::file_size(path, error);
  if (error || reported != 4096) GTEST_SKIP() << path << " is absent or has its real size";
  EXPECT_THAT(
      ReadWholeFile(path, "sequence number"),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr("read sequence number " + path + ": the file shrank from 4096 to "),
                     HasSubstr(" bytes while read"))));
}

TEST(AtomicFile, DirectoryOfABareNameIsTheWorkingDirectory) {
  EXPECT_EQ(DirectoryOf("LATEST"), ".");
  EXPECT_EQ(DirectoryOf("/ckpt/step-3/rank-0.ckpt"), "/ckpt/step-3");
  EXPECT_OK(SyncDirectory("."));
}

}  // namespace
}  // namespace wavepool
