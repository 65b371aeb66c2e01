// A fresh directory for one test, removed with everything in it when the test is done.
//
//   ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool-agent"));
//   ASSERT_OK(WriteFile(dir.File("kubeconfig"), server->Kubeconfig()));
//
// Thread-compatible. A TempDir owns its directory: moving one moves the ownership, and the
// destructor removes the directory (and what is in it) unless the TempDir was moved from.
#ifndef WAVEPOOL_TESTS_SUPPORT_TEMP_DIR_H_
#define WAVEPOOL_TESTS_SUPPORT_TEMP_DIR_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace wavepool::testing {

class TempDir {
 public:
  // A new directory "/tmp/<prefix>-XXXXXX" (mkdtemp), mode 0700. Always under /tmp, never
  // $TMPDIR: tests bind unix sockets inside it, and sun_path holds 107 bytes. Internal naming
  // the pattern and errno when mkdtemp fails.
  // REQUIRES: `prefix` contains no '/'.
  static absl::StatusOr<TempDir> Create(std::string_view prefix);

  // No directory: path() is empty and the destructor removes nothing (a fixture member that
  // SetUp assigns).
  TempDir() = default;
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory's absolute path, without a trailing '/'; empty when there is none.
  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(std::string_view name) const;

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  void Remove();

  std::string path_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_TEMP_DIR_H_
