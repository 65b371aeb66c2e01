// Helpers for the `wavepool` command's tests: reading the tables it prints and writing the input
// files a test hands it.
#ifndef WAVEPOOL_TESTS_CLI_CLI_TEST_SUPPORT_H_
#define WAVEPOOL_TESTS_CLI_CLI_TEST_SUPPORT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::cli::testing {

// One table of a report, by column name. Cells are trimmed; an empty cell is "".
struct Table {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, std::string>> rows;
};

// Finds, in `text`, the table whose header names exactly `columns` (a TextTable: columns two or
// more spaces apart, a rule of '-' under the header) and reads its rows up to the first blank
// line. Cells are cut at the header's column starts, so they may hold single spaces.
// NotFound when no line of `text` is that header.
absl::StatusOr<Table> FindTable(const std::string& text, const std::vector<std::string>& columns);

// Every line of `text` (without the '\n').
std::vector<std::string> Lines(const std::string& text);

// The first line of `text` that starts with `prefix`, or "" when none does.
std::string LineStartingWith(const std::string& text, const std::string& prefix);

// A new, empty directory for the running test under ::testing::TempDir().
std::string MakeTestDir();

// Writes `text` to `dir`/`name` and returns the path; fails the test when it cannot.
std::string WriteFile(const std::string& dir, const std::string& name, const std::string& text);

// The content of a file of the source tree (path relative to WAVEPOOL_SOURCE_DIR), or "".
std::string ReadSourceFile(const std::string& relative_path);

}  // namespace wavepool::cli::testing

#endif  // WAVEPOOL_TESTS_CLI_CLI_TEST_SUPPORT_H_
