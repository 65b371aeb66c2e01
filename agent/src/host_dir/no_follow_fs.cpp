#include "host_dir/no_follow_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/scoped_fd.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent::internal {
namespace {

absl::Status Errno(const std::string& path, const char* syscall, int err) {
  return ErrnoError(err, absl::StrCat(syscall, " ", path));
}

absl::Status NotADirectory(const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(
      path,
      ": is a symbolic link or not a directory; the agent does not follow links in its "
      "directory (remove it)"));
}

// A descriptor of directory `name` in `parent` (AT_FDCWD: a path), never through a link.
absl::Status OpenDirectory(int parent, const std::string& name, const std::string& shown, int* fd) {
  *fd = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*fd >= 0) return absl::OkStatus();
  if (errno == ELOOP || errno == ENOTDIR) return NotADirectory(shown);
  return Errno(shown, "open", errno);
}

std::pair<std::string, std::string> SplitParent(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

absl::Status MakeDirectoryNoFollow(const std::string& directory, mode_t mode) {
  if (mkdir(directory.c_str(), mode) != 0 && errno != EEXIST) {
    return Errno(directory, "mkdir", errno);
  }
  int fd = -1;
  WAVEPOOL_RETURN_IF_ERROR(OpenDirectory(AT_FDCWD, directory, directory, &fd));
  close(fd);
  return absl::OkStatus();
}

absl::Status MakeDirectoriesUnder(const std::string& root, std::string_view relative, mode_t mode) {
  int fd = -1;
  WAVEPOOL_RETURN_IF_ERROR(OpenDirectory(AT_FDCWD, root, root, &fd));
  ScopedFd current(fd);
  std::string shown = root;
  for (absl::string_view part : absl::StrSplit(absl::string_view(relative.data(), relative.size()),
                                               '/', absl::SkipEmpty())) {
    const std::string name(part);
    shown = absl::StrCat(shown, "/", name);
    if (name == "..") return absl::InvalidArgumentError(absl::StrCat(shown, ": \"..\" refused"));
    if (mkdirat(current.get(), name.c_str(), mode) != 0 && errno != EEXIST) {
      return Errno(shown, "mkdir", errno);
    }
    int next = -1;
    WAVEPOOL_RETURN_IF_ERROR(OpenDirectory(current.get(), name, shown, &next));
    current = ScopedFd(next);
  }
  return absl::OkStatus();
}

absl::Status ChmodChownNoFollow(const std::string& path, mode_t mode, gid_t group,
                                std::optional<FileId> expected) {
  const auto [parent, name] = SplitParent(path);
  int fd = -1;
  WAVEPOOL_RETURN_IF_ERROR(OpenDirectory(AT_FDCWD, parent, parent, &fd));
  ScopedFd directory(fd);
  struct stat st;
  if (fstatat(directory.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno(path, "lstat", errno);
  }
  if (S_ISLNK(st.st_mode) ||
      (expected && (st.st_dev != expected->device || st.st_ino != expected->inode))) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": was replaced by ", S_ISLNK(st.st_mode) ? "a symbolic link" : "another file",
        "; not changing its mode or owner"));
  }
  // glibc implements AT_SYMLINK_NOFOLLOW for fchmodat with an O_PATH descriptor and refuses a
  // link (EOPNOTSUPP), so a swap after the check above changes nothing elsewhere either.
  if (fchmodat(directory.get(), name.c_str(), mode, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno(path, "chmod", errno);
  }
  if (group != static_cast<gid_t>(-1) &&
      fchownat(directory.get(), name.c_str(), static_cast<uid_t>(-1), group, AT_SYMLINK_NOFOLLOW) !=
          0) {
    return Errno(path, "chown", errno);
  }
  return absl::OkStatus();
}

}  // namespace wavepool::agent::internal
