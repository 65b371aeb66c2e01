#include "wavepool/base/errno_error.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace wavepool {
namespace {

// strerror_r comes in two flavours: glibc's (with _GNU_SOURCE, which g++ defines) returns the
// text, which may or may not be in `buffer`; POSIX's returns 0 and fills `buffer`. Unlike
// strerror, both are safe to call from several threads at once.
[[maybe_unused]] const char* StrErrorResult(const char* text, const char* /*buffer*/) {
  return text;
}
[[maybe_unused]] const char* StrErrorResult(int result, const char* buffer) {
  return result == 0 ? buffer : nullptr;
}

std::string ErrnoText(int error_number) {
  char buffer[256] = "";
  const char* text = StrErrorResult(::strerror_r(error_number, buffer, sizeof buffer), buffer);
  if (text == nullptr || *text == '\0') return absl::StrCat("Unknown error ", error_number);
  return text;
}

}  // namespace

absl::StatusCode ErrnoCode(int error_number) {
  switch (error_number) {
    case 0:
      return absl::StatusCode::kUnknown;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::StatusCode::kResourceExhausted;
    default:
      return absl::ErrnoToStatusCode(error_number);
  }
}

absl::Status ErrnoError(int error_number, std::string_view what) {
  return ErrnoError(ErrnoCode(error_number), error_number, what);
}

absl::Status ErrnoError(absl::StatusCode code, int error_number, std::string_view what) {
  return absl::Status(
      code == absl::StatusCode::kOk ? absl::StatusCode::kUnknown : code,
      absl::StrCat(absl::string_view(what.data(), what.size()), ": ", ErrnoText(error_number)));
}

}  // namespace wavepool
