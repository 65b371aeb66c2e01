// Signal helpers of the memory-wave analysis (wavepool/agent/memory_wave.h): a uniform grid with
// missing cells, a linear trend, correlation over valid pairs, parabolic peak refinement.
#ifndef WAVEPOOL_AGENT_SRC_MEMORY_WAVE_WAVE_SIGNAL_H_
#define WAVEPOOL_AGENT_SRC_MEMORY_WAVE_WAVE_SIGNAL_H_

#include <cstddef>
#include <vector>

#include "wavepool/agent/memory_wave.h"

namespace wavepool::agent::wave {

// Values at begin + i * dt; cells without data are not `valid` (their value is 0).
struct Grid {
  double dt = 0;  // seconds
  std::vector<double> value;
  std::vector<char> valid;
  std::size_t valid_count = 0;
};

// y = intercept + slope * t, t in seconds since the grid's or series' origin.
struct Line {
  double intercept = 0;
  double slope = 0;
  double At(double t) const { return intercept + slope * t; }
};

// The median gap between consecutive samples, seconds. REQUIRES: >= 2 samples.
double MedianInterval(const std::vector<MemoryPoint>& points);

// Averages the samples in [begin, end] into cells of `dt` seconds (cell i is centred on
// begin + i * dt). An empty cell between two filled ones is interpolated linearly when those are
// at most `max_gap` seconds apart, and stays invalid otherwise.
Grid BinOnGrid(const std::vector<MemoryPoint>& points, MonotonicTime begin, MonotonicTime end,
               double dt, double max_gap);

// Least-squares line through the valid cells, then subtracted from them.
Line Detrend(Grid& grid);

// Least-squares line through (t, y); slope 0 when t has no spread.
Line FitLine(const std::vector<double>& t, const std::vector<double>& y);

// The time-average over [from, to] of the piecewise-linear curve through (t, y), held flat
// beyond its ends. REQUIRES: t ascending and non-empty, from < to.
double AverageOver(const std::vector<double>& t, const std::vector<double>& y, double from,
                   double to);

// Pearson correlation of a[i] with b[i + lag] over the i where both are valid. NaN when fewer
// than `min_pairs` pairs exist or either side is constant.
double LaggedCorrelation(const Grid& a, const Grid& b, long lag, std::size_t min_pairs);

// Where the parabola through (-1, left), (0, centre), (1, right) peaks, in [-0.5, 0.5].
double ParabolicPeak(double left, double centre, double right);

// The q-quantile (0..1) of `values` by linear interpolation. REQUIRES: non-empty.
double Quantile(std::vector<double> values, double q);

}  // namespace wavepool::agent::wave

#endif  // WAVEPOOL_AGENT_SRC_MEMORY_WAVE_WAVE_SIGNAL_H_
