// How `wavepool plan`'s reports print times and sizes.
#ifndef WAVEPOOL_CLI_SRC_REPORT_TEXT_H_
#define WAVEPOOL_CLI_SRC_REPORT_TEXT_H_

#include <string>

#include "absl/strings/str_format.h"

namespace wavepool::cli {

inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

// Milliseconds with three decimals, without the unit: "15.549".
inline std::string Ms(double seconds) { return absl::StrFormat("%.3f", seconds * 1e3); }

// "1.9 GiB", or MiB below a GiB, so that small models do not show "0.0 GiB".
inline std::string GiB(double bytes) {
  if (bytes < kGiB) return absl::StrFormat("%.1f MiB", bytes / kMiB);
  return absl::StrFormat("%.1f GiB", bytes / kGiB);
}

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SRC_REPORT_TEXT_H_
