// File operations in the agent's host directory, which pods mount and can write: none of them
// follows a symbolic link, so a pod that plants one (mps -> /etc, agent.sock -> /etc/shadow)
// cannot make the agent create, chmod or chown something elsewhere as root. Each component is
// opened relative to a directory descriptor with O_NOFOLLOW, and the last one is changed with
// the *at() calls and AT_SYMLINK_NOFOLLOW. Thread-compatible (no state).
#ifndef WAVEPOOL_AGENT_SRC_HOST_DIR_NO_FOLLOW_FS_H_
#define WAVEPOOL_AGENT_SRC_HOST_DIR_NO_FOLLOW_FS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace wavepool::agent::internal {

// Creates `directory` (its parent must exist) unless it exists, and checks that it is a
// directory and not a symbolic link. FailedPrecondition naming the path for a symbolic link or
// something else than a directory; the errno's code naming the syscall otherwise.
absl::Status MakeDirectoryNoFollow(const std::string& directory, mode_t mode);

// Creates root/relative and every directory between ("mps/0/pipe"), each with `mode`, walking
// from `root` without following a link: FailedPrecondition naming the first component that is a
// symbolic link or not a directory. REQUIRES: relative is not absolute and has no "..".
absl::Status MakeDirectoriesUnder(const std::string& root, std::string_view relative, mode_t mode);

// chmod and, unless group is -1, chown(-1, group) of `path`, never through a symbolic link.
// When `expected` is set, the file must still be that inode (st_dev, st_ino): FailedPrecondition
// if it was replaced or is a link.
struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
};
absl::Status ChmodChownNoFollow(const std::string& path, mode_t mode, gid_t group,
                                std::optional<FileId> expected = std::nullopt);

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_SRC_HOST_DIR_NO_FOLLOW_FS_H_
