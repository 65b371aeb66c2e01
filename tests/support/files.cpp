#include "tests/support/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace wavepool::testing {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    const std::string message = absl::StrCat("read ", path, ": ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
  }
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::InternalError(absl::StrCat("read ", path, ": I/O error"));
  return contents;
}

std::string ReadFileOrEmpty(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFile(path);
  return contents.ok() ? *std::move(contents) : std::string();
}

absl::Status WriteFile(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat("write ", path, ": ", std::strerror(errno)));
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("write ", path, ": wrote fewer than ", contents.size(), " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::testing
