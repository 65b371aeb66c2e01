#include "tests/support/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavepool::testing {

absl::StatusOr<TempDir> TempDir::Create(std::string_view prefix) {
  std::string pattern = absl::StrCat("/tmp/", std::string(prefix), "-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
  }
  return TempDir(std::move(pattern));
}

TempDir::~TempDir() { Remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

std::string TempDir::File(std::string_view name) const {
  return absl::StrCat(path_, "/", std::string(name));
}

void TempDir::Remove() {
  if (path_.empty()) return;
  // Best effort: a file a child process still holds open does not fail the test.
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

}  // namespace wavepool::testing
