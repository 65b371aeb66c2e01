// A plain-text table with left-aligned columns, for terminal reports.
#ifndef WAVEPOOL_CLI_SRC_TEXT_TABLE_H_
#define WAVEPOOL_CLI_SRC_TEXT_TABLE_H_

#include <string>
#include <vector>

namespace wavepool::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Every row on its own line, columns two spaces apart, a rule under the header.
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SRC_TEXT_TABLE_H_
