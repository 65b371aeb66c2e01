// Checkpoints of a gang of ranks: a directory of per-rank files (checkpoint_file.h) and a LATEST
// file naming the newest step every rank has written (docs/runtime.md, "Checkpoints").
//
//   <dir>/step-<S>/rank-<R>.ckpt   rank R's state after S optimizer steps
//   <dir>/LATEST                   "S\n": the committed step
//
// Protocol, for a checkpoint at step S:
//   1. every rank: Write(file) with file.step == S and its own rank;
//   2. the runtime barriers (every rank's Write returned OK);
//   3. rank 0: Commit(S, world_size), which atomically replaces LATEST, then Prune();
//   4. no rank writes a later step before rank 0's Commit returned (the next training step's
//      collectives, which need rank 0, order this).
// On start every rank calls Latest(): NotFound means no checkpoint was ever committed and the job
// starts fresh; otherwise it calls Read(Latest(), {its rank, world size, fingerprint}). A crash
// anywhere leaves LATEST naming a complete step: files of a step written but never committed are
// ignored, and the next Prune removes them. Only Latest() returns NotFound; a committed step whose
// file is missing or corrupt is DataLoss (Read never returns NotFound), never a silent start
// from step 0.
//
// Multi-node gangs need the directory on storage every node mounts (each rank writes only its
// own file; rank 0 reads the others' only to check they exist).
//
// A CheckpointDirectory is a plain value naming a directory: copyable, safe for concurrent use by
// the ranks' processes under the protocol above (each rank writes its own files, only rank 0
// commits and prunes). It holds no open files.
#ifndef WAVEPOOL_RUNTIME_CHECKPOINT_H_
#define WAVEPOOL_RUNTIME_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/runtime/checkpoint_file.h"

namespace wavepool::runtime {

// What a reader requires of the file it resumes from.
struct CheckpointExpectations {
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  std::string fingerprint;  // CheckpointFingerprint(model, plan) of the job resuming
};

class CheckpointDirectory {
 public:
  // Uses `path`, creating it and its parents when missing (mode 0755). Errors name the path:
  // InvalidArgument for an empty path; FailedPrecondition when it exists and is not a directory;
  // the errno's code (PermissionDenied, ...) when it cannot be created or is not writable (a probe
  // file cannot be created in it: a read-only mount fails here, not at the first checkpoint).
  static absl::StatusOr<CheckpointDirectory> Open(std::string path);

  const std::string& path() const { return path_; }
  // "<dir>/step-<step>" and "<dir>/step-<step>/rank-<rank>.ckpt".
  std::string StepPath(std::int64_t step) const;
  std::string RankFilePath(std::int64_t step, std::int32_t rank) const;
  std::string LatestPath() const;

  // The committed step. NotFound when there is no LATEST (start fresh); DataLoss naming the file
  // when LATEST is not "<S>\n" with S >= 0, or names a step whose directory is missing; the
  // errno's code for other read errors.
  absl::StatusOr<std::int64_t> Latest() const;

  // Writes RankFilePath(file.step, file.rank) atomically (WriteCheckpointFile), creating the step
  // directory. A full disk is ResourceExhausted naming the path; the temporary file is removed
  // and every committed step stays loadable.
  absl::Status Write(const CheckpointFile& file) const;

  // Makes `step` the committed step: checks that the files of ranks [0, world_size) exist
  // (FailedPrecondition naming the first missing one), then atomically replaces LATEST. On error
  // LATEST still names the previous step.
  // REQUIRES: every rank's Write(step) returned OK (the runtime barriers first); called by rank 0.
  absl::Status Commit(std::int64_t step, std::int32_t world_size) const;

  // Removes every step directory except the committed one (older steps, and newer ones a crash
  // left uncommitted) and temporary files a crash left behind. Entries not named like ours are
  // left alone. An error (naming the entry) only means disk space is not reclaimed.
  // REQUIRES: called by rank 0 after Commit, before any rank writes a later step.
  absl::Status Prune() const;

  // Reads and fully checks rank `expected.rank`'s file of `step` (checkpoint_file.h's codes; a
  // missing file is DataLoss), then that it was written for this step, rank, world size and
  // fingerprint: FailedPrecondition naming the file and what differs, e.g.
  //   "checkpoint /x/step-200/rank-1.ckpt was written for a different model or plan
  //    (fingerprint ab12cd34ef567890.. in the file, 0123456789abcdef.. expected)".
  absl::StatusOr<CheckpointFile> Read(std::int64_t step,
                                      const CheckpointExpectations& expected) const;

 private:
  explicit CheckpointDirectory(std::string path) : path_(std::move(path)) {}

  std::string path_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_CHECKPOINT_H_
