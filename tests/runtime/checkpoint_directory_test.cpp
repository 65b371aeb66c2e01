// The checkpoint directory protocol (checkpoint.h): commit, prune, crashes between write and
// commit, a full disk, and every way a committed step can be unusable.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/runtime/checkpoint.h"

namespace wavepool::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using ::wavepool::testing::IsOkAndHolds;
using ::wavepool::testing::ReadFile;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

constexpr char kFingerprint[] = "ab12cd34ef56ab78cd90ef12ab34cd56ef78ab90cd12ef34ab56cd78ef90ab12";

CheckpointFile RankFile(std::int64_t step, std::int32_t rank, std::int32_t world_size,
                        std::size_t payload_bytes = 64) {
  CheckpointFile file;
  file.step = step;
  file.data_position = step + 1;
  file.rank = rank;
  file.world_size = world_size;
  file.fingerprint = kFingerprint;
  file.metadata = {{"job", "default/mlp"}};
  file.sections["model"] = std::string(payload_bytes, static_cast<char>('a' + rank));
  return file;
}

CheckpointExpectations Expect(std::int32_t rank, std::int32_t world_size) {
  return CheckpointExpectations{rank, world_size, kFingerprint};
}

// Writes every rank's file of `step`, then commits it.
void WriteStep(const CheckpointDirectory& dir, std::int64_t step, std::int32_t world_size) {
  for (std::int32_t rank = 0; rank < world_size; ++rank) {
    ASSERT_OK(dir.Write(RankFile(step, rank, world_size)));
  }
  ASSERT_OK(dir.Commit(step, world_size));
}

std::set<std::string> Entries(const std::string& path) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(path)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

TEST(CheckpointDirectory, OpenCreatesAMissingDirectoryAndItsParents) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  const std::string path = scratch.File("jobs/team-a/mlp");
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(path + "/"));
  EXPECT_EQ(dir.path(), path);
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_THAT(Entries(path), ::testing::IsEmpty());  // the write probe is gone
  EXPECT_EQ(dir.RankFilePath(200, 3), path + "/step-200/rank-3.ckpt");
  EXPECT_THAT(dir.Latest(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("checkpoint directory " + path +
                                 " has no LATEST file: no checkpoint was committed")));
}

TEST(CheckpointDirectory, OpenRejectsWhatCannotHoldCheckpoints) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK(WriteFile(scratch.File("file"), "x"));
  EXPECT_THAT(CheckpointDirectory::Open(scratch.File("file")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint directory " + (scratch.File("file")) +
                                 ": exists and is not a directory")));
  EXPECT_THAT(CheckpointDirectory::Open(scratch.File("file/sub")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(scratch.File("file/sub")), HasSubstr("Not a directory"))));
  EXPECT_THAT(CheckpointDirectory::Open(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the path is empty")));
}

TEST(CheckpointDirectory, OpenRejectsADirectoryNobodyCanWrite) {
  // Not even root creates files in /proc.
  const absl::StatusOr<CheckpointDirectory> proc = CheckpointDirectory::Open("/proc");
  ASSERT_FALSE(proc.ok());
  EXPECT_THAT(std::string(proc.status().message()),
              HasSubstr("create a file in checkpoint directory /proc: "));
}

TEST(CheckpointDirectory, OpenRejectsADirectoryItCannotWrite) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into a mode-0555 directory";
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  const std::string path = scratch.File("read-only");
  fs::create_directory(path);
  fs::permissions(path, fs::perms(0555));
  EXPECT_THAT(
      CheckpointDirectory::Open(path),
      StatusIs(absl::StatusCode::kPermissionDenied,
               HasSubstr("create a file in checkpoint directory " + path + ": Permission denied")));
  fs::permissions(path, fs::perms(0755));
}

TEST(CheckpointDirectory, CommittedStepsReadBackForEveryRank) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 3);
  ASSERT_OK_AND_ASSIGN(const std::int64_t latest, dir.Latest());
  EXPECT_EQ(latest, 100);
  EXPECT_THAT(ReadFile(scratch.File("LATEST")), IsOkAndHolds("100\n"));
  for (std::int32_t rank = 0; rank < 3; ++rank) {
    ASSERT_OK_AND_ASSIGN(const CheckpointFile file, dir.Read(100, Expect(rank, 3)));
    EXPECT_EQ(file.rank, rank);
    EXPECT_EQ(file.data_position, 101);
    EXPECT_EQ(file.sections.at("model"), RankFile(100, rank, 3).sections.at("model"));
    EXPECT_EQ(file.source, dir.RankFilePath(100, rank));
  }
}

TEST(CheckpointDirectory, RanksAsThreadsWriteOneStepThenRankZeroCommits) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  constexpr int kRanks = 8;
  for (std::int64_t step : {10, 20}) {
    std::vector<std::thread> ranks;
    std::vector<absl::Status> results(kRanks);
    for (int rank = 0; rank < kRanks; ++rank) {
      ranks.emplace_back([&, rank] {
        absl::StatusOr<CheckpointDirectory> dir = CheckpointDirectory::Open(scratch.File("ckpt"));
        results[rank] = dir.ok() ? dir->Write(RankFile(step, rank, kRanks, 4096)) : dir.status();
      });
    }
    for (std::thread& thread : ranks) thread.join();  // the barrier
    for (const absl::Status& result : results) ASSERT_OK(result);
    ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir,
                         CheckpointDirectory::Open(scratch.File("ckpt")));
    ASSERT_OK(dir.Commit(step, kRanks));
    ASSERT_OK(dir.Prune());
  }
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir,
                       CheckpointDirectory::Open(scratch.File("ckpt")));
  EXPECT_THAT(Entries(dir.path()), UnorderedElementsAre("LATEST", "step-20"));
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_OK(dir.Read(20, Expect(rank, kRanks)).status());
}

TEST(CheckpointDirectory, CommitRequiresEveryRanksFile) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 2);
  ASSERT_OK(dir.Write(RankFile(200, 0, 2)));
  EXPECT_THAT(dir.Commit(200, 2),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("rank 1's file " + dir.RankFilePath(200, 1) + " does not exist")));
  ASSERT_OK_AND_ASSIGN(const std::int64_t latest, dir.Latest());
  EXPECT_EQ(latest, 100);
}

TEST(CheckpointDirectory, PruneKeepsOnlyTheCommittedStepAndForeignEntries) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 2);
  ASSERT_OK(dir.Prune());
  EXPECT_THAT(Entries(dir.path()), UnorderedElementsAre("LATEST", "step-100"));
  // A crash left step 300 written but not committed, and temporaries; the user keeps notes.
  ASSERT_OK(dir.Write(RankFile(300, 0, 2)));
  ASSERT_OK(dir.Write(RankFile(300, 1, 2)));
  ASSERT_OK(WriteFile(scratch.File("LATEST.tmp.Ab12Cd"), "3"));
  ASSERT_OK(WriteFile(scratch.File(".write-probe.Zz99Yy"), ""));
  ASSERT_OK(WriteFile(dir.StepPath(100) + "/rank-0.ckpt.tmp.Qw34Er", "partial"));
  ASSERT_OK(WriteFile(scratch.File("notes.txt"), "mine"));
  fs::create_directory(scratch.File("step-old"));
  ASSERT_OK_AND_ASSIGN(std::int64_t latest, dir.Latest());
  EXPECT_EQ(latest, 100);  // the uncommitted step is ignored
  ASSERT_OK(dir.Read(100, Expect(1, 2)).status());

  WriteStep(dir, 200, 2);
  ASSERT_OK(dir.Prune());
  EXPECT_THAT(Entries(dir.path()),
              UnorderedElementsAre("LATEST", "step-200", "notes.txt", "step-old"));
  EXPECT_THAT(Entries(dir.StepPath(200)), UnorderedElementsAre("rank-0.ckpt", "rank-1.ckpt"));
  ASSERT_OK_AND_ASSIGN(latest, dir.Latest());
  EXPECT_EQ(latest, 200);
}

TEST(CheckpointDirectory, RewritingTheCommittedStepKeepsItLoadable) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 1);
  // A job resumed at step 100 and stopped at once checkpoints step 100 again.
  WriteStep(dir, 100, 1);
  ASSERT_OK(dir.Prune());
  EXPECT_OK(dir.Read(100, Expect(0, 1)).status());
}

TEST(CheckpointDirectory, ALatestNamingAMissingStepOrFileIsAnErrorNotAFreshStart) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 2);
  fs::remove(dir.RankFilePath(100, 1));
  EXPECT_THAT(
      dir.Read(100, Expect(1, 2)),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr("checkpoint step 100 in " + dir.path() + " has no file for rank 1"),
                     HasSubstr(dir.RankFilePath(100, 1)))));
  fs::remove_all(dir.StepPath(100));
  EXPECT_THAT(dir.Latest(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("LATEST file " + dir.LatestPath() + " names step 100, but " +
                                 dir.StepPath(100) + " is not a directory")));
  for (const char* text :
       {"", "100", "0100\n", "-1\n", "abc\n", "100\n\n", "99999999999999999999\n"}) {
    ASSERT_OK(WriteFile(dir.LatestPath(), text));
    EXPECT_THAT(dir.Latest(), StatusIs(absl::StatusCode::kDataLoss,
                                       HasSubstr("expected a step number and a newline")))
        << "LATEST holds '" << text << "'";
  }
}

TEST(CheckpointDirectory, ACorruptCommittedFileIsDataLossNamingIt) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 2);
  const std::string path = dir.RankFilePath(100, 1);
  ASSERT_OK_AND_ASSIGN(std::string bytes, ReadFile(path));
  bytes[bytes.size() - 10] ^= 0x40;
  ASSERT_OK(WriteFile(path, bytes));
  EXPECT_THAT(dir.Read(100, Expect(1, 2)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("checkpoint " + path + ": section 'model'"),
                             HasSubstr("checksum mismatch"))));
}

TEST(CheckpointDirectory, ReadChecksFingerprintRankWorldSizeAndStep) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 200, 2);
  const std::string path = dir.RankFilePath(200, 1);
  EXPECT_THAT(dir.Read(200, CheckpointExpectations{1, 2, "cd34ef56ab7890cdef1234"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint " + path +
                                 " was written for a different model or plan (fingerprint "
                                 "ab12cd34ef56ab78.. in the file, cd34ef56ab7890cd.. expected)")));
  EXPECT_THAT(dir.Read(200, Expect(1, 4)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint " + path +
                                 " was written by rank 1 of 2, but rank 1 of 4 is reading it")));
  fs::copy_file(dir.RankFilePath(200, 0), path, fs::copy_options::overwrite_existing);
  EXPECT_THAT(dir.Read(200, Expect(1, 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("was written by rank 0 of 2, but rank 1 of 2 is reading it")));
  ASSERT_OK(dir.Write(RankFile(300, 0, 2)));
  fs::copy_file(dir.RankFilePath(300, 0), dir.RankFilePath(200, 0),
                fs::copy_options::overwrite_existing);
  EXPECT_THAT(dir.Read(200, Expect(0, 2)),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("holds step 300, but its directory is step 200's")));
}

// What `body` returned, run while this process's files cannot grow past `limit_bytes`: the soft
// RLIMIT_FSIZE lowered, with SIGXFSZ ignored so that write(2) fails with EFBIG, as on a full disk;
// both are restored afterwards. In this process rather than in a forked child, which could not
// safely allocate while another thread (LibTorch's pools) may hold malloc's lock; nothing else
// in this process writes a regular file meanwhile.
template <typename Body>
absl::StatusOr<std::string> WithFileSizeLimit(rlim_t limit_bytes, Body body) {
  rlimit saved{};
  if (::getrlimit(RLIMIT_FSIZE, &saved) != 0) {
    return absl::ErrnoToStatus(errno, "getrlimit RLIMIT_FSIZE");
  }
  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  if (::sigaction(SIGXFSZ, &ignore, &previous) != 0) {
    return absl::ErrnoToStatus(errno, "sigaction SIGXFSZ");
  }
  const rlimit lowered{limit_bytes, saved.rlim_max};
  if (::setrlimit(RLIMIT_FSIZE, &lowered) != 0) {
    const int error = errno;
    ::sigaction(SIGXFSZ, &previous, nullptr);
    return absl::ErrnoToStatus(error, "setrlimit RLIMIT_FSIZE");
  }
  std::string text = body();
  const bool restored = ::setrlimit(RLIMIT_FSIZE, &saved) == 0;
  const int error = errno;
  ::sigaction(SIGXFSZ, &previous, nullptr);
  if (!restored) return absl::ErrnoToStatus(error, "setrlimit RLIMIT_FSIZE (restoring)");
  return text;
}

std::string Describe(const absl::Status& status) {
  return std::string(absl::StatusCodeToString(status.code())) + "|" + std::string(status.message());
}

TEST(CheckpointDirectory, AFullDiskFailsTheWriteAndLeavesThePreviousCheckpointLoadable) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 1);
  ASSERT_OK_AND_ASSIGN(const std::string committed_bytes, ReadFile(dir.RankFilePath(100, 0)));
  // Files of 1 MiB under a 256 KiB limit: a new step, and the committed step rewritten in place.
  const CheckpointFile next = RankFile(200, 0, 1, 1 << 20);
  const CheckpointFile rewrite = RankFile(100, 0, 1, 1 << 20);
  ASSERT_OK_AND_ASSIGN(const std::string report, WithFileSizeLimit(256 << 10, [&] {
                         return Describe(dir.Write(next)) + "\n" + Describe(dir.Write(rewrite));
                       }));
  const std::string too_large = std::strerror(EFBIG);
  EXPECT_THAT(report, HasSubstr("RESOURCE_EXHAUSTED|write " + dir.RankFilePath(200, 0) + ".tmp."));
  EXPECT_THAT(report, HasSubstr("for " + dir.RankFilePath(200, 0) + ": " + too_large + "\n"));
  EXPECT_THAT(report, HasSubstr("for " + dir.RankFilePath(100, 0) + ": " + too_large));
  // No temporary file; the committed step is untouched and loads.
  EXPECT_THAT(Entries(dir.StepPath(200)), ::testing::IsEmpty());
  EXPECT_THAT(Entries(dir.StepPath(100)), UnorderedElementsAre("rank-0.ckpt"));
  EXPECT_THAT(ReadFile(dir.RankFilePath(100, 0)), IsOkAndHolds(committed_bytes));
  ASSERT_OK_AND_ASSIGN(const std::int64_t latest, dir.Latest());
  EXPECT_EQ(latest, 100);
  ASSERT_OK_AND_ASSIGN(const CheckpointFile file, dir.Read(100, Expect(0, 1)));
  EXPECT_EQ(file.sections.at("model"), RankFile(100, 0, 1).sections.at("model"));
}

TEST(CheckpointDirectory, AFullDiskDuringCommitKeepsTheOldLatest) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir, CheckpointDirectory::Open(scratch.path()));
  WriteStep(dir, 100, 1);
  ASSERT_OK(dir.Write(RankFile(200, 0, 1)));
  // A zero limit: not even LATEST's four bytes fit.
  ASSERT_OK_AND_ASSIGN(const std::string report,
                       WithFileSizeLimit(0, [&] { return Describe(dir.Commit(200, 1)); }));
  EXPECT_THAT(report, AllOf(HasSubstr("RESOURCE_EXHAUSTED|"), HasSubstr(dir.LatestPath())));
  EXPECT_THAT(Entries(dir.path()), UnorderedElementsAre("LATEST", "step-100", "step-200"));
  ASSERT_OK_AND_ASSIGN(const std::int64_t latest, dir.Latest());
  EXPECT_EQ(latest, 100);
}

}  // namespace
}  // namespace wavepool::runtime
