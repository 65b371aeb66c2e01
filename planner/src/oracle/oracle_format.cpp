// FormatComparison: the oracle's predictions as a text table for `wavepool plan --compare`.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "wavepool/planner/oracle.h"

namespace wavepool::planner {
namespace {

std::string FormatTime(Seconds time) {
  const double s = time.count();
  if (s < 1e-3) return absl::StrFormat("%.1f us", s * 1e6);
  if (s < 1) return absl::StrFormat("%.2f ms", s * 1e3);
  if (s < 120) return absl::StrFormat("%.2f s", s);
  if (s < 7200) return absl::StrFormat("%.1f min", s / 60);
  return absl::StrFormat("%.2f h", s / 3600);
}

std::string FormatBytes(Bytes bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1 << 30) return absl::StrFormat("%.2f GiB", b / (1 << 30));
  if (b >= 1 << 20) return absl::StrFormat("%.1f MiB", b / (1 << 20));
  if (b >= 1 << 10) return absl::StrFormat("%.1f KiB", b / (1 << 10));
  return absl::StrFormat("%d B", bytes);
}

std::string FormatParts(const std::vector<std::pair<std::string, Seconds>>& parts) {
  std::vector<std::string> items;
  for (const auto& [name, time] : parts) items.push_back(absl::StrCat(name, " ", FormatTime(time)));
  return absl::StrJoin(items, ", ");
}

std::string FormatRow(size_t rank, const Prediction& p) {
  const std::string head = absl::StrFormat("%3d  %-13s", rank, StrategyName(p.strategy));
  if (!p.feasible) return absl::StrCat(head, "infeasible: ", p.infeasible_reason, "\n");
  std::string row = absl::StrFormat(
      "%s%12s %12s %12s %12s %12s  %-4s %s\n", head, FormatTime(p.iteration),
      FormatTime(p.compute_per_iteration), FormatTime(p.communication_per_iteration),
      FormatTime(p.epoch), FormatBytes(p.memory_per_gpu), p.fits_memory ? "yes" : "no", p.layout);
  absl::StrAppend(&row, "       compute: ", FormatParts(p.compute_parts), "\n");
  if (!p.communication_parts.empty()) {
    absl::StrAppend(&row, "       communication: ", FormatParts(p.communication_parts), "\n");
  }
  absl::StrAppend(
      &row, absl::StrFormat("       memory: activations %s, weights %s, gradients %s, optimizer "
                            "state %s (reuse factor %.2f)\n",
                            FormatBytes(p.memory.activations), FormatBytes(p.memory.weights),
                            FormatBytes(p.memory.gradients), FormatBytes(p.memory.optimizer_state),
                            p.memory_reuse_factor));
  return row;
}

}  // namespace

std::string FormatComparison(const std::vector<Prediction>& predictions) {
  std::string table =
      absl::StrFormat("%3s  %-13s%12s %12s %12s %12s %12s  %-4s %s\n", "#", "strategy", "iteration",
                      "compute", "comm", "epoch", "memory/GPU", "fits", "layout");
  for (size_t i = 0; i < predictions.size(); ++i) {
    absl::StrAppend(&table, FormatRow(i + 1, predictions[i]));
  }
  return table;
}

}  // namespace wavepool::planner
