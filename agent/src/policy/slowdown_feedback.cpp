#include "wavepool/agent/slowdown_feedback.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace wavepool::agent {

absl::Status Validate(const FeedbackConfig& c) {
  const std::pair<const char*, double> weights[] = {{"decay_weight", c.decay_weight},
                                                    {"solo_weight", c.solo_weight},
                                                    {"ratio_forgetting", c.ratio_forgetting}};
  for (const auto& [name, value] : weights) {
    if (!(value > 0 && value <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": must be in (0, 1], got ", value));
    }
  }
  if (!(c.default_max_slowdown >= 1) || !std::isfinite(c.default_max_slowdown)) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_max_slowdown: must be >= 1, got ", c.default_max_slowdown));
  }
  if (c.min_solo_samples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_solo_samples: must be >= 1, got ", c.min_solo_samples));
  }
  return absl::OkStatus();
}

SlowdownFeedback::SlowdownFeedback(double max_slowdown, const FeedbackConfig& config)
    : max_slowdown_(max_slowdown >= 1 ? max_slowdown : config.default_max_slowdown),
      config_(config) {}

double SlowdownFeedback::Solo(const Group& g) const {
  if (g.solo_samples >= config_.min_solo_samples) return g.solo;
  // Without enough solo samples (the background was there first), the fastest duration seen is
  // the best lower bound of the solo time.
  return g.fastest;
}

bool SlowdownFeedback::Judge(const Group& g, std::uint64_t duration_ns) const {
  if (g.kind == OpKind::kAllReduce) return true;
  if (g.kind == OpKind::kReceive && duration_ns > config_.long_receive_ns) return false;
  const double solo = Solo(g);
  return solo > 0 && g.average > max_slowdown_ * solo;
}

void SlowdownFeedback::Observe(const OpGroupReport& report, bool background_present,
                               std::vector<SensitivityChange>* changes) {
  Group& g = groups_[report.op_group];
  g.kind = report.kind;
  const double d = static_cast<double>(report.duration_ns);
  if (!background_present) {
    g.solo = g.solo_samples == 0 ? d : g.solo + config_.solo_weight * (d - g.solo);
    ++g.solo_samples;
  }
  g.fastest = g.fastest == 0 ? d : std::min(g.fastest, d);
  const double solo = Solo(g);
  // The artifact's average: it jumps to a duration above the limit at once, and otherwise decays
  // towards what it sees with weight decay_weight.
  if (g.average == 0 || (solo > 0 && d > max_slowdown_ * solo)) {
    g.average = d;
  } else {
    g.average += config_.decay_weight * (d - g.average);
  }
  const bool sensitive = Judge(g, report.duration_ns);
  if (sensitive != g.sensitive) {
    g.sensitive = sensitive;
    sensitive_count_ += sensitive ? 1 : -1;
    changes->push_back({report.op_group, sensitive});
  }
  if (solo > 0) {
    ratio_observed_ = config_.ratio_forgetting * ratio_observed_ + d;
    ratio_solo_ = config_.ratio_forgetting * ratio_solo_ + solo;
  }
}

bool SlowdownFeedback::IsSensitive(std::uint32_t op_group) const {
  auto it = groups_.find(op_group);
  return it != groups_.end() && it->second.sensitive;
}

std::size_t SlowdownFeedback::SensitiveCount() const { return sensitive_count_; }

std::optional<double> SlowdownFeedback::SoloNanos(std::uint32_t op_group) const {
  auto it = groups_.find(op_group);
  if (it == groups_.end() || Solo(it->second) <= 0) return std::nullopt;
  return Solo(it->second);
}

double SlowdownFeedback::SlowdownRatio() const {
  return ratio_solo_ > 0 ? ratio_observed_ / ratio_solo_ : 1.0;
}

double SlowdownFeedback::MedianSoloNanos() const {
  std::vector<double> solos;
  for (const auto& [op_group, g] : groups_) {
    if (Solo(g) > 0) solos.push_back(Solo(g));
  }
  if (solos.empty()) return 0;
  auto middle = solos.begin() + static_cast<std::ptrdiff_t>(solos.size() / 2);
  std::nth_element(solos.begin(), middle, solos.end());
  return *middle;
}

std::uint32_t BackgroundAdvisor::Check(double foreground_slowdown, double max_slowdown,
                                       std::uint32_t background_batch) {
  over_ = foreground_slowdown > max_slowdown ? over_ + 1 : 0;
  if (over_ < patience_) return 0;
  over_ = 0;
  const std::uint32_t base = recommended_ != 0 ? recommended_ : background_batch;
  const std::uint32_t next = std::max<std::uint32_t>(1, base / 2);
  if (next == recommended_ || next >= background_batch) return 0;
  recommended_ = next;
  return next;
}

}  // namespace wavepool::agent
