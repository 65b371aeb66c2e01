// A shared GPU's steady state (collocation.h) from the agent's interference model and its
// slowdown feedback loop.
#include "wavepool/simulate/collocation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/base/seconds.h"

namespace wavepool::simulate {
namespace {

// Nominal solo duration of the group the loop is run on: the loop's decisions depend on
// duration ratios only, and 1 ms keeps the integer nanoseconds of the reports exact to 1e-6.
constexpr double kSoloNanos = 1e6;
// Groups run before measuring (the loop's start-up), cycles measured, and the most groups looked
// at for the first collocated one (a loop that never lets the background back, as under an SLO
// of exactly 1).
constexpr int kWarmupGroups = 1000;
constexpr int kMeasuredCycles = 64;
constexpr int kMaxGroups = 200000;

absl::Status Bad(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

}  // namespace

absl::Status Validate(const CollocationOptions& o) {
  const std::pair<const char*, double> intensities[] = {
      {"foreground_intensity", o.foreground_intensity},
      {"background_intensity", o.background_intensity}};
  for (const auto& [name, value] : intensities) {
    if (!(value > 0 && value <= 1))
      return Bad(name, absl::StrCat("must be in (0, 1], got ", value));
  }
  const agent::InterferenceModel& m = o.interference;
  const std::pair<const char*, double> parameters[] = {
      {"interference.foreground_sharing", m.foreground_sharing},
      {"interference.foreground_blocking", m.foreground_blocking},
      {"interference.background_sharing", m.background_sharing}};
  for (const auto& [name, value] : parameters) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return Bad(name, absl::StrCat("must be >= 0, got ", value));
    }
  }
  if (!(m.priority_factor >= 0 && m.priority_factor <= 1)) {
    return Bad("interference.priority_factor",
               absl::StrCat("must be in [0, 1], got ", m.priority_factor));
  }
  if (absl::Status s = agent::Validate(o.feedback); !s.ok()) {
    return Bad("feedback", std::string(s.message()));
  }
  return absl::OkStatus();
}

CollocationModel::CollocationModel(const CollocationOptions& options) : options_(options) {}

const FeedbackEquilibrium& CollocationModel::Equilibrium(double unprotected, double max_slowdown) {
  auto [it, inserted] = equilibria_.try_emplace({unprotected, max_slowdown});
  if (!inserted) return it->second;
  agent::SlowdownFeedback loop(max_slowdown, options_.feedback);
  std::vector<agent::SensitivityChange> changes;
  const auto solo = static_cast<std::uint64_t>(kSoloNanos);
  const auto slowed = static_cast<std::uint64_t>(std::llround(kSoloNanos * (1 + unprotected)));
  for (int i = 0; i < options_.feedback.min_solo_samples; ++i) {
    loop.Observe({0, agent::OpKind::kCompute, solo}, /*background_present=*/false, &changes);
  }
  // One group beside the background; returns whether it ran collocated.
  auto run = [&]() {
    const bool collocated = !loop.IsSensitive(0);
    loop.Observe({0, agent::OpKind::kCompute, collocated ? slowed : solo}, true, &changes);
    return collocated;
  };
  for (int i = 0; i < kWarmupGroups; ++i) run();
  int looked = 0;
  while (looked < kMaxGroups && loop.IsSensitive(0)) {
    run();
    ++looked;
  }
  FeedbackEquilibrium& e = it->second;
  if (looked == kMaxGroups) return e;  // the background never comes back: all solo
  // From a collocated group to the one after the last measured cycle: whole cycles only.
  double groups = 0, collocated = 0, time = 0, collocated_time = 0;
  for (int cycles = 0; cycles < kMeasuredCycles;) {
    const bool beside = run();
    groups += 1;
    time += static_cast<double>(beside ? slowed : solo);
    if (beside) {
      collocated += 1;
      collocated_time += static_cast<double>(slowed);
    }
    if (!loop.IsSensitive(0)) ++cycles;  // the next group starts a cycle
  }
  e.collocated_share = collocated / groups;
  e.collocated_time_share = collocated_time / time;
  e.group_slowdown = time / (groups * static_cast<double>(solo));
  return e;
}

SharedGpu CollocationModel::Share(const JobCost& fg, const JobCost& bg, double max_slowdown) {
  using Nanos = std::chrono::duration<double, std::nano>;
  // Kernel lengths in integer nanoseconds, as the agent's API takes them; at least 1 ns.
  auto nanos = [](double seconds) {
    return std::chrono::nanoseconds(
        std::max<std::int64_t>(1, std::llround(Nanos(Seconds(seconds)).count())));
  };
  SharedGpu shared;
  shared.foreground_group_slowdown =
      agent::ForegroundSlowdown(options_.interference, options_.background_intensity,
                                nanos(fg.layer_seconds), nanos(bg.layer_seconds),
                                /*high_priority=*/true);
  shared.background_group_slowdown =
      agent::BackgroundSlowdown(options_.interference, options_.foreground_intensity);
  shared.equilibrium = Equilibrium(shared.foreground_group_slowdown, max_slowdown);
  return shared;
}

double CollocationModel::BackgroundRate(const SharedGpu& shared, double busy_fraction,
                                        double gang_slowdown) {
  const FeedbackEquilibrium& e = shared.equilibrium;
  const double busy = e.group_slowdown * busy_fraction / gang_slowdown;
  const double beside = e.collocated_time_share / (1 + shared.background_group_slowdown);
  return std::clamp(1 - busy * (1 - beside), 0.0, 1.0);
}

}  // namespace wavepool::simulate
