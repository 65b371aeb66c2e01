#include "text_table.h"

#include <algorithm>

namespace wavepool::cli {

std::string TextTable::Render() const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t c = 0; c < row.size(); ++c) {
      text += row[c];
      if (c + 1 < row.size()) text += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out += text + "\n";
  };
  for (size_t r = 0; r < rows_.size(); ++r) {
    line(rows_[r]);
    if (r == 0) {
      size_t total = 0;
      for (size_t w : widths) total += w + 2;
      out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
    }
  }
  return out;
}

}  // namespace wavepool::cli
