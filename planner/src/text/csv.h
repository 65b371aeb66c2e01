// Splitting CSV text (RFC 4180: quoted fields may hold commas and doubled quotes) for the planner's
// table formats: measured profiles and layer tables.
#ifndef WAVEPOOL_PLANNER_SRC_TEXT_CSV_H_
#define WAVEPOOL_PLANNER_SRC_TEXT_CSV_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::planner::csv {

// Lines of `text` without their "\n" or "\r\n" endings.
std::vector<std::string> SplitLines(std::string_view text);

// Fields of one line. InvalidArgument for an unterminated quote or text after a closing quote.
absl::StatusOr<std::vector<std::string>> SplitRow(std::string_view line);

}  // namespace wavepool::planner::csv

#endif  // WAVEPOOL_PLANNER_SRC_TEXT_CSV_H_
