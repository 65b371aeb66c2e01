// The checkpoint directory protocol (checkpoint.h; docs/runtime.md, "Checkpoints").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "byte_codec.h"
#include "wavepool/base/atomic_file.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/checkpoint.h"

namespace wavepool::runtime {
namespace {

namespace fs = std::filesystem;

// "<operation> <path>: <errno text>" (ErrnoError's mapping).
absl::Status IoError(int error_number, std::string_view operation, std::string_view path) {
  return ErrnoError(error_number, absl::StrCat(checkpoint_internal::View(operation), " ",
                                               checkpoint_internal::View(path)));
}

constexpr absl::string_view kStepPrefix = "step-";
constexpr absl::string_view kLatestName = "LATEST";
constexpr absl::string_view kProbePrefix = ".write-probe.";
// Fingerprints are shown this long in messages: enough to tell two apart.
constexpr std::size_t kFingerprintShown = 16;

// A canonical decimal step ("0", "200"; not "0200", "+2" or "-1"), or -1.
std::int64_t ParseStep(absl::string_view digits) {
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return -1;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return -1;
  }
  std::int64_t step = -1;
  return absl::SimpleAtoi(digits, &step) ? step : -1;
}

// The step of a "step-<S>" entry, or -1 for any other name.
std::int64_t StepOfEntry(absl::string_view name) {
  if (!absl::StartsWith(name, kStepPrefix)) return -1;
  return ParseStep(name.substr(kStepPrefix.size()));
}

// 0 when `path` is a directory; stat's errno, or ENOTDIR when it is something else.
int DirectoryError(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return errno;
  return S_ISDIR(info.st_mode) ? 0 : ENOTDIR;
}

// Creates and removes a file in `path`: the one reliable test of writability (access(2) ignores
// read-only mounts' finer points and NFS servers' squashing).
absl::Status ProbeWritable(const std::string& path) {
  std::string probe = absl::StrCat(path, "/", kProbePrefix, "XXXXXX");
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0) return IoError(errno, "create a file in checkpoint directory", path);
  ::close(fd);
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

std::string ShortFingerprint(absl::string_view fingerprint) {
  if (fingerprint.empty()) return "(empty)";
  if (fingerprint.size() <= kFingerprintShown) return std::string(fingerprint);
  return absl::StrCat(fingerprint.substr(0, kFingerprintShown), "..");
}

// Removes `path` (a file or a whole directory); records the first failure in `status`.
void RemoveEntry(const fs::path& path, absl::Status& status) {
  std::error_code error;
  fs::remove_all(path, error);
  if (error && status.ok()) status = IoError(error.value(), "remove", path.string());
}

}  // namespace

absl::StatusOr<CheckpointDirectory> CheckpointDirectory::Open(std::string path) {
  if (path.empty()) return absl::InvalidArgumentError("checkpoint directory: the path is empty");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint directory ", path, ": exists and is not a directory"));
  }
  if (const int error_number = DirectoryError(path); error_number != 0) {
    if (error_number != ENOENT) return IoError(error_number, "stat checkpoint directory", path);
    std::error_code error;
    fs::create_directories(path, error);
    if (error) return IoError(error.value(), "create checkpoint directory", path);
    WAVEPOOL_RETURN_IF_ERROR(SyncDirectory(DirectoryOf(path)));
  }
  WAVEPOOL_RETURN_IF_ERROR(ProbeWritable(path));
  return CheckpointDirectory(std::move(path));
}

std::string CheckpointDirectory::StepPath(std::int64_t step) const {
  return absl::StrCat(path_, "/", kStepPrefix, step);
}

std::string CheckpointDirectory::RankFilePath(std::int64_t step, std::int32_t rank) const {
  return absl::StrCat(StepPath(step), "/rank-", rank, ".ckpt");
}

std::string CheckpointDirectory::LatestPath() const {
  return absl::StrCat(path_, "/", kLatestName);
}

absl::StatusOr<std::int64_t> CheckpointDirectory::Latest() const {
  const std::string latest_path = LatestPath();
  absl::StatusOr<std::string> contents = ReadWholeFile(latest_path, "LATEST file");
  if (absl::IsNotFound(contents.status())) {
    return absl::NotFoundError(absl::StrCat("checkpoint directory ", path_,
                                            " has no LATEST file: no checkpoint was committed"));
  }
  if (!contents.ok()) return contents.status();
  const std::string& text = *contents;
  const std::int64_t step = absl::EndsWith(text, "\n")
                                ? ParseStep(absl::string_view(text).substr(0, text.size() - 1))
                                : -1;
  if (step < 0) {
    return absl::DataLossError(absl::StrCat("LATEST file ", latest_path,
                                            ": expected a step number and a newline, found ",
                                            checkpoint_internal::QuoteBytes(text)));
  }
  if (const int error_number = DirectoryError(StepPath(step)); error_number != 0) {
    return ErrnoError(absl::StatusCode::kDataLoss, error_number,
                      absl::StrCat("LATEST file ", latest_path, " names step ", step, ", but ",
                                   StepPath(step), " is not a directory"));
  }
  return step;
}

absl::Status CheckpointDirectory::Write(const CheckpointFile& file) const {
  if (file.step < 0 || file.rank < 0) {
    return absl::InvalidArgumentError(absl::StrCat("write checkpoint of step ", file.step,
                                                   ", rank ", file.rank, " in ", path_,
                                                   ": step and rank must be >= 0"));
  }
  const std::string step_path = StepPath(file.step);
  if (::mkdir(step_path.c_str(), 0755) == 0) {
    WAVEPOOL_RETURN_IF_ERROR(SyncDirectory(path_));
  } else if (errno != EEXIST) {
    return IoError(errno, "create checkpoint step directory", step_path);
  }
  return WriteCheckpointFile(RankFilePath(file.step, file.rank), file);
}

absl::Status CheckpointDirectory::Commit(std::int64_t step, std::int32_t world_size) const {
  if (step < 0 || world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("commit checkpoint step ", step, " of ",
                                                   world_size, " ranks in ", path_,
                                                   ": need step >= 0 and world_size >= 1"));
  }
  for (std::int32_t rank = 0; rank < world_size; ++rank) {
    const std::string rank_path = RankFilePath(step, rank);
    struct stat info {};
    if (::stat(rank_path.c_str(), &info) == 0) continue;
    if (errno != ENOENT) return IoError(errno, "stat checkpoint", rank_path);
    return absl::FailedPreconditionError(absl::StrCat("commit checkpoint step ", step, " in ",
                                                      path_, ": rank ", rank, "'s file ", rank_path,
                                                      " does not exist"));
  }
  const std::string text = absl::StrCat(step, "\n");
  return WriteFileAtomically(LatestPath(), std::string_view(text));
}

absl::Status CheckpointDirectory::Prune() const {
  WAVEPOOL_ASSIGN_OR_RETURN(std::int64_t latest, Latest());
  absl::Status status;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(path_, error)) {
    const std::string name = entry.path().filename().string();
    const std::int64_t step = StepOfEntry(name);
    const bool stale_temporary =
        absl::StartsWith(
            name, absl::StrCat(kLatestName, checkpoint_internal::View(kAtomicTemporaryInfix))) ||
        absl::StartsWith(name, kProbePrefix);
    if ((step >= 0 && step != latest) || stale_temporary) RemoveEntry(entry.path(), status);
  }
  if (error) return IoError(error.value(), "list checkpoint directory", path_);
  // A crash while rewriting a committed step (a resumed job checkpointing at once) can leave
  // temporaries in it; its rank files themselves were only ever replaced by rename.
  for (const fs::directory_entry& entry : fs::directory_iterator(StepPath(latest), error)) {
    if (absl::StrContains(entry.path().filename().string(),
                          checkpoint_internal::View(kAtomicTemporaryInfix))) {
      RemoveEntry(entry.path(), status);
    }
  }
  if (error) return IoError(error.value(), "list checkpoint step directory", StepPath(latest));
  if (status.ok()) status = SyncDirectory(path_);
  return status;
}

absl::StatusOr<CheckpointFile> CheckpointDirectory::Read(
    std::int64_t step, const CheckpointExpectations& expected) const {
  const std::string rank_path = RankFilePath(step, expected.rank);
  absl::StatusOr<CheckpointFile> file = ReadCheckpointFile(rank_path);
  if (absl::IsNotFound(file.status())) {
    return absl::DataLossError(absl::StrCat("checkpoint step ", step, " in ", path_,
                                            " has no file for rank ", expected.rank, ": ",
                                            file.status().message()));
  }
  if (!file.ok()) return file.status();
  if (file->step != step) {
    return absl::DataLossError(absl::StrCat("checkpoint ", rank_path, " holds step ", file->step,
                                            ", but its directory is step ", step, "'s"));
  }
  if (file->rank != expected.rank || file->world_size != expected.world_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", rank_path, " was written by rank ", file->rank, " of ", file->world_size,
        ", but rank ", expected.rank, " of ", expected.world_size, " is reading it"));
  }
  if (file->fingerprint != expected.fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", rank_path, " was written for a different model or plan (fingerprint ",
        ShortFingerprint(file->fingerprint), " in the file, ",
        ShortFingerprint(expected.fingerprint), " expected)"));
  }
  return file;
}

}  // namespace wavepool::runtime
