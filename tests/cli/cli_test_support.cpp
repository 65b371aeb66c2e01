#include "tests/cli/cli_test_support.h"

#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"

namespace wavepool::cli::testing {
namespace {

// Where each column of a header line starts: at 0 and after every run of two or more spaces.
std::vector<size_t> ColumnStarts(const std::string& header) {
  std::vector<size_t> starts{0};
  for (size_t i = 2; i < header.size(); ++i) {
    if (header[i] != ' ' && header[i - 1] == ' ' && header[i - 2] == ' ') starts.push_back(i);
  }
  return starts;
}

std::string Cell(const std::string& line, size_t begin, size_t end) {
  if (begin >= line.size()) return "";
  return std::string(absl::StripAsciiWhitespace(line.substr(begin, end - begin)));
}

}  // namespace

std::vector<std::string> Lines(const std::string& text) { return absl::StrSplit(text, '\n'); }

std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  for (const std::string& line : Lines(text)) {
    if (absl::StartsWith(line, prefix)) return line;
  }
  return "";
}

absl::StatusOr<Table> FindTable(const std::string& text, const std::vector<std::string>& columns) {
  const std::vector<std::string> lines = Lines(text);
  for (size_t h = 0; h + 1 < lines.size(); ++h) {
    const std::vector<std::string> names = absl::StrSplit(
        std::string(absl::StripTrailingAsciiWhitespace(lines[h])), "  ", absl::SkipWhitespace());
    std::vector<std::string> trimmed;
    for (const std::string& name : names) {
      trimmed.emplace_back(absl::StripAsciiWhitespace(name));
    }
    if (trimmed != columns || !absl::StartsWith(lines[h + 1], "--")) continue;
    const std::vector<size_t> starts = ColumnStarts(lines[h]);
    if (starts.size() != columns.size()) break;
    Table table{columns, {}};
    for (size_t r = h + 2; r < lines.size() && !lines[r].empty(); ++r) {
      std::map<std::string, std::string> row;
      for (size_t c = 0; c < starts.size(); ++c) {
        const size_t end = c + 1 < starts.size() ? starts[c + 1] : std::string::npos;
        row[columns[c]] = Cell(lines[r], starts[c], end);
      }
      table.rows.push_back(std::move(row));
    }
    return table;
  }
  return absl::NotFoundError(absl::StrCat("no table with columns ", absl::StrJoin(columns, " | ")));
}

std::string MakeTestDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "wavepool_cli_test" /
                              absl::StrCat(info->test_suite_name(), ".", info->name());
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  std::filesystem::create_directories(dir, error);
  EXPECT_FALSE(error) << "create " << dir << ": " << error.message();
  return dir.string();
}

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  EXPECT_OK(::wavepool::testing::WriteFile(path, text));
  return path;
}

std::string ReadSourceFile(const std::string& relative_path) {
  return ::wavepool::testing::ReadFileOrEmpty(
      (std::filesystem::path(WAVEPOOL_SOURCE_DIR) / relative_path).string());
}

}  // namespace wavepool::cli::testing
