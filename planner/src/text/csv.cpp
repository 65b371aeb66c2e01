#include "text/csv.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavepool::planner::csv {

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    start = end + 1;
  }
  return lines;
}

absl::StatusOr<std::vector<std::string>> SplitRow(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  bool closed = false;  // a quoted field ended; only a comma may follow
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        fields.back() += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted = false;
        closed = true;
      }
    } else if (c == ',') {
      fields.emplace_back();
      closed = false;
    } else if (closed) {
      return absl::InvalidArgumentError(
          absl::StrCat("text after a closing quote in field ", fields.size()));
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else {
      fields.back() += c;
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError(absl::StrCat("unterminated quote in field ", fields.size()));
  }
  return fields;
}

}  // namespace wavepool::planner::csv
