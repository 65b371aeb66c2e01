#include "wavepool/agent/memory_wave.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory_wave/wave_signal.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

using wave::Grid;

constexpr std::size_t kMinSamples = 16;
constexpr double kMinSamplesPerPeriod = 8;
// A local autocorrelation maximum within this share of the best one is taken as the period
// rather than the best itself, which may sit at a multiple of the period.
constexpr double kHarmonicTolerance = 0.85;
constexpr double kPeriodAgreement = 0.05;  // relative: two waves share a period

// Seconds from `earlier` to `later`.
double SecondsBetween(MonotonicTime later, MonotonicTime earlier) {
  return static_cast<double>((later - earlier).count()) * 1e-9;
}

absl::Status ValidateOptions(const MemoryWaveOptions& o) {
  auto bad = [](const char* field, const char* valid, double got) {
    return absl::InvalidArgumentError(
        absl::StrFormat("memory wave options: %s: must be %s, got %g", field, valid, got));
  };
  if (!(o.min_period.count() > 0)) return bad("min_period", "> 0 s", o.min_period.count());
  if (!(o.max_period > o.min_period)) {
    return bad("max_period", "> min_period", o.max_period.count());
  }
  if (o.min_periods < 2) return bad("min_periods", ">= 2", o.min_periods);
  if (!(o.min_confidence > 0 && o.min_confidence < 1)) {
    return bad("min_confidence", "in (0, 1)", o.min_confidence);
  }
  if (!(o.max_gap.count() >= 0)) return bad("max_gap", ">= 0 s", o.max_gap.count());
  if (o.max_grid_points < 64) {
    return bad("max_grid_points", ">= 64", static_cast<double>(o.max_grid_points));
  }
  return absl::OkStatus();
}

absl::Status ValidateSamples(const std::vector<MemoryPoint>& points) {
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (points[i].time <= points[i - 1].time) {
      // Named as the reported samples name it (protocol.h MemorySample::time_ns).
      return absl::InvalidArgumentError(absl::StrCat(
          "samples[", i, "].time_ns: must increase, got ", ToMonotonicNanos(points[i].time),
          " after ", ToMonotonicNanos(points[i - 1].time)));
    }
  }
  if (points.size() < kMinSamples) {
    return absl::FailedPreconditionError(
        absl::StrCat("memory wave: need at least ", kMinSamples, " samples, got ", points.size()));
  }
  return absl::OkStatus();
}

// One series on its grid, detrended.
struct Series {
  Grid grid;
  double median_interval = 0;  // seconds
  double max_gap = 0;          // seconds
  MonotonicTime first;
  MonotonicTime last;
  double span() const { return SecondsBetween(last, first); }
};

absl::StatusOr<Series> Prepare(const std::vector<MemoryPoint>& points,
                               const MemoryWaveOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateSamples(points));
  Series s;
  s.first = points.front().time;
  s.last = points.back().time;
  s.median_interval = wave::MedianInterval(points);
  s.max_gap = options.max_gap.count() > 0 ? options.max_gap.count() : 5 * s.median_interval;
  const double needed = options.min_periods * options.min_period.count();
  if (s.span() < needed) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "memory wave: samples cover %.3f s, need at least %d periods of min_period %.3f s",
        s.span(), options.min_periods, options.min_period.count()));
  }
  const double dt =
      std::max(s.median_interval, s.span() / static_cast<double>(options.max_grid_points - 1));
  s.grid = wave::BinOnGrid(points, s.first, s.last, dt, s.max_gap);
  wave::Detrend(s.grid);
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  for (std::size_t i = 0; i < s.grid.value.size(); ++i) {
    if (!s.grid.valid[i]) continue;
    low = std::min(low, s.grid.value[i]);
    high = std::max(high, s.grid.value[i]);
  }
  if (!(high - low >= static_cast<double>(options.min_amplitude_bytes))) {
    return absl::FailedPreconditionError(
        absl::StrFormat("memory wave: flat: memory varies by %.0f bytes around its trend, below "
                        "min_amplitude_bytes (%d)",
                        std::max(0.0, high - low), options.min_amplitude_bytes));
  }
  return s;
}

// Autocorrelation at each lag, computed on first use.
class Autocorrelation {
 public:
  explicit Autocorrelation(const Grid& grid)
      : grid_(grid),
        min_pairs_(std::max<std::size_t>(16, grid.value.size() / 4)),
        memo_(grid.value.size(), std::numeric_limits<double>::quiet_NaN()),
        known_(grid.value.size(), 0) {}

  // NaN outside [0, size) or where too few pairs exist.
  double At(long lag) {
    if (lag < 0 || lag >= static_cast<long>(memo_.size())) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    const std::size_t k = static_cast<std::size_t>(lag);
    if (!known_[k]) {
      memo_[k] = wave::LaggedCorrelation(grid_, grid_, lag, min_pairs_);
      known_[k] = 1;
    }
    return memo_[k];
  }
  // The lag of the largest value in [from, to], or -1 when all are NaN.
  long ArgMax(long from, long to) {
    long best = -1;
    for (long k = std::max(0L, from); k <= to; ++k) {
      if (!std::isnan(At(k)) && (best < 0 || At(k) > At(best))) best = k;
    }
    return best;
  }
  // `lag` refined between its neighbours.
  double Refine(long lag) { return lag + wave::ParabolicPeak(At(lag - 1), At(lag), At(lag + 1)); }

 private:
  const Grid& grid_;
  const std::size_t min_pairs_;
  std::vector<double> memo_;
  std::vector<char> known_;
};

bool IsLocalMaximum(Autocorrelation& r, long k) {
  const double left = r.At(k - 1);
  const double right = r.At(k + 1);
  return !std::isnan(r.At(k)) && (std::isnan(left) || r.At(k) >= left) &&
         (std::isnan(right) || r.At(k) > right);
}

struct PeriodEstimate {
  double period = 0;  // seconds
  double confidence = 0;
};

absl::StatusOr<PeriodEstimate> FindPeriod(const Series& s, const MemoryWaveOptions& options) {
  const Grid& g = s.grid;
  const long n = static_cast<long>(g.value.size());
  const long k_min = std::max(2L, static_cast<long>(std::ceil(options.min_period.count() / g.dt)));
  const long k_max = std::min(n / options.min_periods,
                              static_cast<long>(std::floor(options.max_period.count() / g.dt)));
  Autocorrelation r(g);
  long chosen = -1;
  double best = -1;
  for (long k = k_min; k <= k_max; ++k) {
    if (IsLocalMaximum(r, k) && r.At(k) >= options.min_confidence) best = std::max(best, r.At(k));
  }
  for (long k = k_min; k <= k_max && best > 0; ++k) {
    if (IsLocalMaximum(r, k) && r.At(k) >= kHarmonicTolerance * best) {
      chosen = k;
      break;
    }
  }
  if (chosen < 0) {
    const long top = r.ArgMax(k_min, k_max);
    return absl::FailedPreconditionError(absl::StrFormat(
        "memory wave: no periodic pattern between %.3f s and %.3f s (at most 1/%d of the %.3f s "
        "sampled): best autocorrelation %.2f (at %.3f s), need %.2f",
        k_min * g.dt, std::max(k_min, k_max) * g.dt, options.min_periods, s.span(),
        top < 0 ? 0.0 : r.At(top), top < 0 ? 0.0 : top * g.dt, options.min_confidence));
  }
  // The top of the chosen peak, then the most precise multiple still above the threshold.
  chosen = r.ArgMax(std::max(k_min, chosen - chosen / 4), std::min(k_max, chosen + chosen / 4));
  PeriodEstimate estimate{r.Refine(chosen) * g.dt, r.At(chosen)};
  const double lag = r.Refine(chosen);
  for (int m = 2;; ++m) {
    const long centre = std::lround(m * lag);
    const long reach = std::max(1L, std::lround(lag / 4));
    if (centre + reach + 1 >= n - static_cast<long>(g.value.size() / 4)) break;
    const long top = r.ArgMax(centre - reach, centre + reach);
    if (top < 0 || r.At(top) < options.min_confidence) break;
    estimate.period = r.Refine(top) / m * g.dt;
  }
  return estimate;
}

struct Extremes {
  double peak = 0;
  double trough = 0;
  double drift = 0;  // bytes per second
  int periods = 0;
};

// The samples of whole periods counted back from the last one: period j spans
// (-(j+1) P, -j P] seconds before the last sample.
struct PeriodSamples {
  std::vector<std::vector<double>> t;  // per period, seconds before the last sample (<= 0)
  std::vector<std::vector<double>> y;  // bytes
  std::vector<double> all_t;           // every sample in the whole periods, ascending
  std::vector<double> all_y;
};

PeriodSamples SplitIntoPeriods(const std::vector<MemoryPoint>& points, const Series& s,
                               double period, int whole) {
  PeriodSamples split;
  split.t.resize(static_cast<std::size_t>(whole));
  split.y.resize(static_cast<std::size_t>(whole));
  for (const MemoryPoint& p : points) {
    const double before = -SecondsBetween(s.last, p.time);
    const int j = static_cast<int>(std::ceil(-before / period - 1));  // -(j+1)P < before <= -jP
    if (j < 0 || j >= whole) continue;
    split.t[static_cast<std::size_t>(j)].push_back(before);
    split.y[static_cast<std::size_t>(j)].push_back(static_cast<double>(p.bytes));
    split.all_t.push_back(before);
    split.all_y.push_back(static_cast<double>(p.bytes));
  }
  return split;
}

// The trend through the time-averages of the well-covered periods at their centres. A line
// fitted to the samples themselves would tilt with an asymmetric wave (the mean of t * y over a
// period is not zero); a periodic wave's period averages are equal, so only real drift tilts this
// one. The averages integrate the samples' linear interpolation over exactly one period, so a
// window that happens to hold one sample more or less does not move them. Periods with a gap
// have biased averages: prefer those at least 75% covered, else accept half.
wave::Line PeriodMeanTrend(const PeriodSamples& split, double period, double expected) {
  std::vector<double> centres;
  std::vector<double> means;
  for (double coverage : {0.75, 0.5}) {
    centres.clear();
    means.clear();
    for (std::size_t j = 0; j < split.y.size(); ++j) {
      if (split.y[j].size() < coverage * expected) continue;
      const double end = -static_cast<double>(j) * period;
      centres.push_back(end - 0.5 * period);
      means.push_back(wave::AverageOver(split.all_t, split.all_y, end - period, end));
    }
    if (centres.size() >= 2) break;
  }
  return wave::FitLine(centres, means);
}

// Medians over whole periods of each period's maximum and minimum around the trend, reported at
// the trend's value at the last sample.
absl::StatusOr<Extremes> MeasureExtremes(const std::vector<MemoryPoint>& points, const Series& s,
                                         double period, const MemoryWaveOptions& options) {
  const int whole = static_cast<int>(std::floor(s.span() / period));
  if (whole < options.min_periods) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "memory wave: found a %.3f s period but the samples cover only %d whole periods, need %d",
        period, whole, options.min_periods));
  }
  const PeriodSamples split = SplitIntoPeriods(points, s, period, whole);
  const double expected = period / s.median_interval;
  const wave::Line trend = PeriodMeanTrend(split, period, expected);
  std::vector<double> maxima;
  std::vector<double> minima;
  for (std::size_t j = 0; j < split.t.size(); ++j) {
    // A period missing half its samples may have lost its extremes.
    if (split.t[j].size() < 0.5 * expected) continue;
    double high = -std::numeric_limits<double>::infinity();
    double low = -high;
    for (std::size_t i = 0; i < split.t[j].size(); ++i) {
      const double residual = split.y[j][i] - trend.At(split.t[j][i]);
      high = std::max(high, residual);
      low = std::min(low, residual);
    }
    maxima.push_back(high);
    minima.push_back(low);
  }
  if (static_cast<int>(maxima.size()) < options.min_periods) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "memory wave: only %d of %d whole periods have at least half their samples, need %d",
        static_cast<int>(maxima.size()), whole, options.min_periods));
  }
  Extremes e;
  e.peak = wave::Quantile(maxima, 0.5) + trend.At(0);
  e.trough = wave::Quantile(minima, 0.5) + trend.At(0);
  e.drift = trend.slope;
  e.periods = static_cast<int>(maxima.size());
  return e;
}

// Saturating: a worker's allocator reports may sit near 2^64 bytes, past what llround (and a
// plain conversion) can represent.
std::uint64_t ToBytes(double value) {
  constexpr double kTwoTo64 = 18446744073709551616.0;
  if (!(value > 0)) return 0;
  if (value >= kTwoTo64) return std::numeric_limits<std::uint64_t>::max();
  const double rounded = std::round(value);
  return rounded >= kTwoTo64 ? std::numeric_limits<std::uint64_t>::max()
                             : static_cast<std::uint64_t>(rounded);
}

absl::Status Prefixed(const absl::Status& status, const char* prefix) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace

std::int64_t HeadroomBytes(std::uint64_t capacity_bytes, std::uint64_t peak_bytes) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (capacity_bytes >= peak_bytes) {
    return static_cast<std::int64_t>(std::min(capacity_bytes - peak_bytes, kMax));
  }
  const std::uint64_t short_by = peak_bytes - capacity_bytes;
  return short_by > kMax ? std::numeric_limits<std::int64_t>::min()
                         : -static_cast<std::int64_t>(short_by);
}

std::int64_t SaturatedBytes(std::uint64_t bytes) {
  return static_cast<std::int64_t>(
      std::min<std::uint64_t>(bytes, std::numeric_limits<std::int64_t>::max()));
}

std::vector<MemoryPoint> PointsFromAllocatorSamples(const std::vector<MemorySample>& samples,
                                                    AllocatorField field) {
  std::vector<MemoryPoint> points;
  points.reserve(samples.size());
  for (const MemorySample& s : samples) {
    points.push_back({MonotonicTimeFromNanos(s.time_ns),
                      field == AllocatorField::kAllocated ? s.allocated_bytes : s.reserved_bytes});
  }
  return points;
}

std::vector<MemoryPoint> PointsFromGpuSamples(const std::vector<GpuSample>& samples) {
  std::vector<MemoryPoint> points;
  points.reserve(samples.size());
  for (const GpuSample& s : samples) points.push_back({s.time, s.memory_used_bytes});
  return points;
}

absl::StatusOr<MemoryWave> AnalyzeMemoryWave(const std::vector<MemoryPoint>& samples,
                                             const MemoryWaveOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateOptions(options));
  WAVEPOOL_ASSIGN_OR_RETURN(Series series, Prepare(samples, options));
  WAVEPOOL_ASSIGN_OR_RETURN(PeriodEstimate period, FindPeriod(series, options));
  if (period.period / series.median_interval < kMinSamplesPerPeriod) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "memory wave: the %.3f s period holds only %.1f samples, need %.0f: sample faster",
        period.period, period.period / series.median_interval, kMinSamplesPerPeriod));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(Extremes extremes,
                            MeasureExtremes(samples, series, period.period, options));
  MemoryWave wave;
  wave.period = Seconds(period.period);
  wave.confidence = period.confidence;
  wave.peak_bytes = ToBytes(extremes.peak);
  wave.trough_bytes = ToBytes(extremes.trough);
  if (options.capacity_bytes.has_value()) {
    wave.headroom_bytes = HeadroomBytes(*options.capacity_bytes, wave.peak_bytes);
  }
  wave.drift_bytes_per_second = extremes.drift;
  wave.periods = extremes.periods;
  wave.first = series.first;
  wave.last = series.last;
  return wave;
}

absl::StatusOr<PhaseOffset> MeasurePhaseOffset(const std::vector<MemoryPoint>& first,
                                               const std::vector<MemoryPoint>& second,
                                               const MemoryWaveOptions& options) {
  absl::StatusOr<MemoryWave> a = AnalyzeMemoryWave(first, options);
  if (!a.ok()) return Prefixed(a.status(), "first wave: ");
  absl::StatusOr<MemoryWave> b = AnalyzeMemoryWave(second, options);
  if (!b.ok()) return Prefixed(b.status(), "second wave: ");
  const double period = 0.5 * (a->period.count() + b->period.count());
  if (std::abs(a->period.count() - b->period.count()) > kPeriodAgreement * period) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "phase offset: the waves' periods differ (%.3f s and %.3f s); a phase offset needs a "
        "common period",
        a->period.count(), b->period.count()));
  }
  const MonotonicTime begin = std::max(a->first, b->first);
  const MonotonicTime end = std::min(a->last, b->last);
  if (end <= begin || SecondsBetween(end, begin) < options.min_periods * period) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "phase offset: the waves overlap for %.3f s, need %d periods of %.3f s",
        end > begin ? SecondsBetween(end, begin) : 0.0, options.min_periods, period));
  }
  const double interval = std::max(wave::MedianInterval(first), wave::MedianInterval(second));
  const double dt = std::max(
      interval, SecondsBetween(end, begin) / static_cast<double>(options.max_grid_points - 1));
  const double max_gap = options.max_gap.count() > 0 ? options.max_gap.count() : 5 * interval;
  Grid ga = wave::BinOnGrid(first, begin, end, dt, max_gap);
  Grid gb = wave::BinOnGrid(second, begin, end, dt, max_gap);
  wave::Detrend(ga);
  wave::Detrend(gb);
  // second(t) ~ first(t - offset)  <=>  gb[i + k] ~ ga[i] for k = offset / dt.
  const long lags = std::lround(period / dt);
  const std::size_t min_pairs = std::max<std::size_t>(16, ga.value.size() / 4);
  std::vector<double> c(static_cast<std::size_t>(lags) + 3);  // lags -1 .. lags + 1
  for (long k = -1; k <= lags + 1; ++k) {
    c[static_cast<std::size_t>(k + 1)] = wave::LaggedCorrelation(ga, gb, k, min_pairs);
  }
  long best = -1;
  for (long k = 0; k <= lags; ++k) {
    const double value = c[static_cast<std::size_t>(k + 1)];
    if (!std::isnan(value) && (best < 0 || value > c[static_cast<std::size_t>(best + 1)])) best = k;
  }
  const double confidence = best < 0 ? 0.0 : c[static_cast<std::size_t>(best + 1)];
  if (best < 0 || confidence < options.min_confidence) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "phase offset: the waves do not match at any offset: best correlation %.2f, need %.2f",
        confidence, options.min_confidence));
  }
  const std::size_t at = static_cast<std::size_t>(best + 1);
  double offset = (best + wave::ParabolicPeak(c[at - 1], c[at], c[at + 1])) * dt;
  offset = std::fmod(offset, period);
  if (offset < 0) offset += period;
  if (offset >= period) offset = 0;
  return PhaseOffset{Seconds(period), Seconds(offset), offset / period, confidence};
}

}  // namespace wavepool::agent
