// Data-parallel tick-tock: two waves on one GPU (wavelet-tick-tock §3.2.1-3.2.2).
#include "wavepool/planner/ticktock.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

// Transitions of the two waves closer than this fraction of the period are simultaneous, so
// that a rise of one wave and a fall of the other at the same instant do not add up.
constexpr double kSimultaneous = 1e-9;

struct Transition {
  double time = 0;
  Bytes bytes = 0;
};

absl::Status ValidateOffset(double offset) {
  if (!(offset >= 0.0 && offset < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset: must be a fraction of the period in [0, 1), got ", offset));
  }
  return absl::OkStatus();
}

// The tock wave's transitions, delayed by `shift` seconds and wrapped into [0, period), sorted.
std::vector<Transition> DelayedTransitions(const MemoryTimeline& wave, double shift) {
  const double period = wave.period().count();
  std::vector<Transition> delayed;
  delayed.reserve(wave.steps().size());
  for (const MemoryStep& step : wave.steps()) {
    double time = step.start.count() + shift;
    if (time >= period) time -= period;
    if (time >= period * (1 - kSimultaneous)) time = 0;
    delayed.push_back({time, step.bytes});
  }
  std::stable_sort(delayed.begin(), delayed.end(),
                   [](const Transition& a, const Transition& b) { return a.time < b.time; });
  return delayed;
}

// wave(t) + wave(t - offset * period) as steps labelled with the tick wave's layer and phase.
std::vector<MemoryStep> OverlaySteps(const MemoryTimeline& wave, double offset) {
  const double period = wave.period().count();
  const double eps = kSimultaneous * period;
  const std::vector<MemoryStep>& tick = wave.steps();
  const std::vector<Transition> tock = DelayedTransitions(wave, offset * period);
  // At time 0 the tock wave is still at the level of its last transition before the wrap.
  MemoryStep tick_now = tick.front();
  Bytes tock_now = tock.back().bytes;
  std::vector<MemoryStep> out;
  size_t i = 0, j = 0;
  while (i < tick.size() || j < tock.size()) {
    const double next_tick = i < tick.size() ? tick[i].start.count() : period;
    const double next_tock = j < tock.size() ? tock[j].time : period;
    const double t = std::min(next_tick, next_tock);
    for (; i < tick.size() && tick[i].start.count() <= t + eps; ++i) tick_now = tick[i];
    for (; j < tock.size() && tock[j].time <= t + eps; ++j) tock_now = tock[j].bytes;
    out.push_back({Seconds(t), tick_now.bytes + tock_now, tick_now.layer, tick_now.phase});
  }
  return out;
}

Bytes PeakOf(const std::vector<MemoryStep>& steps) {
  Bytes peak = 0;
  for (const MemoryStep& step : steps) peak = std::max(peak, step.bytes);
  return peak;
}

// A run of consecutive scanned offsets (circular) that reach the best peak.
struct Run {
  int start = 0;
  int length = 0;
};

// Runs of `best` in the circular `peaks`; one run of every point when all are equal.
std::vector<Run> BestRuns(const std::vector<Bytes>& peaks, Bytes best) {
  const int n = static_cast<int>(peaks.size());
  std::vector<Run> runs;
  for (int k = 0; k < n; ++k) {
    const bool starts_run = peaks[static_cast<size_t>(k)] == best &&
                            peaks[static_cast<size_t>((k + n - 1) % n)] != best;
    if (!starts_run) continue;
    Run run{k, 0};
    while (run.length < n && peaks[static_cast<size_t>((k + run.length) % n)] == best) ++run.length;
    runs.push_back(run);
  }
  if (runs.empty()) runs.push_back({0, n});  // every offset reaches the best peak
  return runs;
}

// Twice the run's centre index, modulo 2n (so that even lengths stay integral).
int DoubledCentre(const Run& run, int n) {
  if (run.length == n) return n;  // the whole circle: centre it on the half period
  return (2 * run.start + run.length - 1) % (2 * n);
}

absl::Status ValidateTickTockRequest(const TickTockRequest& request) {
  if (request.per_wave_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("per_wave_batch: must be >= 1, got ", request.per_wave_batch));
  }
  if (request.device_memory <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_memory: must be > 0 bytes, got ", request.device_memory));
  }
  if (request.reserve < 0 || request.reserve >= request.device_memory) {
    return absl::InvalidArgumentError(absl::StrCat("reserve: must be in [0, device_memory (",
                                                   request.device_memory, ")) bytes, got ",
                                                   request.reserve));
  }
  if (request.offset_scan_points < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset_scan_points: must be >= 2, got ", request.offset_scan_points));
  }
  if (!(request.min_gain >= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_gain: must be >= 1, got ", request.min_gain));
  }
  return absl::OkStatus();
}

TickTockVerdict Decide(const TickTockAnalysis& a, double min_gain) {
  if (a.wave.Peak() > a.usable_memory) return TickTockVerdict::kSingleWaveDoesNotFit;
  if (!a.fits) return TickTockVerdict::kWavesDoNotFit;
  if (a.predicted_gain < min_gain) return TickTockVerdict::kNoGain;
  if (a.double_batch_fits) return TickTockVerdict::kDoubleBatchFits;
  return TickTockVerdict::kRecommended;
}

}  // namespace

std::string_view TickTockVerdictName(TickTockVerdict verdict) {
  switch (verdict) {
    case TickTockVerdict::kRecommended:
      return "recommended";
    case TickTockVerdict::kSingleWaveDoesNotFit:
      return "single wave does not fit";
    case TickTockVerdict::kWavesDoNotFit:
      return "two waves do not fit";
    case TickTockVerdict::kNoGain:
      return "no gain";
    case TickTockVerdict::kDoubleBatchFits:
      return "double batch fits";
  }
  return "unknown";
}

absl::StatusOr<MemoryTimeline> TwoWaveTimeline(const MemoryTimeline& wave, double offset) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateOffset(offset));
  return MemoryTimeline::FromSteps(OverlaySteps(wave, offset), wave.period());
}

absl::StatusOr<Bytes> TwoWavePeak(const MemoryTimeline& wave, double offset) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateOffset(offset));
  return PeakOf(OverlaySteps(wave, offset));
}

absl::StatusOr<OffsetScan> ScanOffsets(const MemoryTimeline& wave, int scan_points) {
  if (scan_points < 2) {
    return absl::InvalidArgumentError(absl::StrCat("scan_points: must be >= 2, got ", scan_points));
  }
  const int n = scan_points;
  std::vector<Bytes> peaks(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    peaks[static_cast<size_t>(k)] = PeakOf(OverlaySteps(wave, static_cast<double>(k) / n));
  }
  OffsetScan scan;
  scan.scan_points = n;
  scan.peak_at_half = PeakOf(OverlaySteps(wave, 0.5));
  scan.best_peak = *std::min_element(peaks.begin(), peaks.end());
  // Widest run first; among equally wide runs the one centred nearest 0.5, then the earliest.
  Run chosen{0, 0};
  int chosen_centre = 0;
  for (const Run& run : BestRuns(peaks, scan.best_peak)) {
    const int centre = DoubledCentre(run, n);
    const bool better =
        run.length > chosen.length ||
        (run.length == chosen.length && std::abs(centre - n) < std::abs(chosen_centre - n));
    if (better) {
      chosen = run;
      chosen_centre = centre;
    }
  }
  scan.best_offset = static_cast<double>(chosen_centre) / (2.0 * n);
  scan.tolerance = static_cast<double>(chosen.length - 1) / (2.0 * n);
  return scan;
}

absl::StatusOr<TickTockAnalysis> AnalyzeTickTock(const ModelGraph& graph,
                                                 const ComputeCostModel& cost,
                                                 const TickTockRequest& request) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateTickTockRequest(request));
  const std::int64_t b = request.per_wave_batch;
  WAVEPOOL_ASSIGN_OR_RETURN(MemoryTimeline wave,
                            BuildMemoryTimeline(graph, cost, b, request.memory));
  WAVEPOOL_ASSIGN_OR_RETURN(OffsetScan scan, ScanOffsets(wave, request.offset_scan_points));
  WAVEPOOL_ASSIGN_OR_RETURN(MemoryTimeline combined, TwoWaveTimeline(wave, scan.best_offset));
  WAVEPOOL_ASSIGN_OR_RETURN(MemoryTimeline doubled,
                            BuildMemoryTimeline(graph, cost, 2 * b, request.memory));

  TickTockAnalysis a(std::move(wave), std::move(combined));
  a.offsets = scan;
  a.usable_memory = request.device_memory - request.reserve;
  a.fits = a.combined.Peak() <= a.usable_memory;
  a.fits_at_half = a.offsets.peak_at_half <= a.usable_memory;
  a.double_batch_peak = doubled.Peak();
  a.double_batch_fits = a.double_batch_peak <= a.usable_memory;
  // Throughput model (ticktock.h): two overlapping waves run like one wave at 2b, with two
  // replica updates, never faster than one wave alone nor slower than the two in turn.
  const Seconds update = request.memory.update_time;
  a.wave_iteration = a.wave.period();
  a.double_batch_iteration = doubled.period();
  a.pair_iteration =
      std::clamp(a.double_batch_iteration + update, a.wave_iteration, 2 * a.wave_iteration);
  a.predicted_gain = 2 * a.wave_iteration / a.pair_iteration;
  a.wave_samples_per_second = static_cast<double>(b) / a.wave_iteration.count();
  a.tick_tock_samples_per_second = 2.0 * static_cast<double>(b) / a.pair_iteration.count();
  a.verdict = Decide(a, request.min_gain);
  return a;
}

}  // namespace wavepool::planner
