// Whole-file reads and writes for tests: fixtures, configuration files handed to a binary, and
// the output files a child process writes.
//
// Thread-compatible free functions; none keeps state.
#ifndef WAVEPOOL_TESTS_SUPPORT_FILES_H_
#define WAVEPOOL_TESTS_SUPPORT_FILES_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace wavepool::testing {

// The whole file, bytes as they are. NotFound when it does not exist; Internal naming the path
// and errno when it cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// The whole file, or "" when it does not exist or cannot be read: for a file another process is
// still writing (polled until it holds something) and for the text of a failure message.
std::string ReadFileOrEmpty(const std::string& path);

// Creates or truncates `path` and writes `contents` (mode 0644 before the umask). Internal naming
// the path and errno when it cannot be opened or not everything was written.
absl::Status WriteFile(const std::string& path, std::string_view contents);

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_FILES_H_
