#include "memory_wave/wave_signal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wavepool::agent::wave {

double MedianInterval(const std::vector<MemoryPoint>& points) {
  std::vector<double> gaps;
  gaps.reserve(points.size() - 1);
  for (std::size_t i = 1; i < points.size(); ++i) {
    gaps.push_back(static_cast<double>((points[i].time - points[i - 1].time).count()) * 1e-9);
  }
  return Quantile(std::move(gaps), 0.5);
}

Grid BinOnGrid(const std::vector<MemoryPoint>& points, MonotonicTime begin, MonotonicTime end,
               double dt, double max_gap) {
  Grid grid;
  grid.dt = dt;
  const double span = static_cast<double>((end - begin).count()) * 1e-9;
  const std::size_t cells = static_cast<std::size_t>(std::floor(span / dt + 0.5)) + 1;
  std::vector<double> sum(cells, 0);
  std::vector<int> count(cells, 0);
  for (const MemoryPoint& p : points) {
    if (p.time < begin || p.time > end) continue;
    const double t = static_cast<double>((p.time - begin).count()) * 1e-9;
    const std::size_t cell =
        std::min(cells - 1, static_cast<std::size_t>(std::floor(t / dt + 0.5)));
    sum[cell] += static_cast<double>(p.bytes);
    ++count[cell];
  }
  grid.value.assign(cells, 0);
  grid.valid.assign(cells, 0);
  long previous = -1;  // the last filled cell
  for (std::size_t i = 0; i < cells; ++i) {
    if (count[i] == 0) continue;
    grid.value[i] = sum[i] / count[i];
    grid.valid[i] = 1;
    const std::size_t gap_cells = previous < 0 ? 0 : i - static_cast<std::size_t>(previous);
    if (gap_cells > 1 && gap_cells * dt <= max_gap) {
      const double left = grid.value[static_cast<std::size_t>(previous)];
      for (std::size_t j = static_cast<std::size_t>(previous) + 1; j < i; ++j) {
        const double w = static_cast<double>(j - static_cast<std::size_t>(previous)) / gap_cells;
        grid.value[j] = left + w * (grid.value[i] - left);
        grid.valid[j] = 1;
      }
    }
    previous = static_cast<long>(i);
  }
  grid.valid_count = static_cast<std::size_t>(std::count(grid.valid.begin(), grid.valid.end(), 1));
  return grid;
}

Line FitLine(const std::vector<double>& t, const std::vector<double>& y) {
  const double n = static_cast<double>(t.size());
  double st = 0, sy = 0, stt = 0, sty = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    st += t[i];
    sy += y[i];
    stt += t[i] * t[i];
    sty += t[i] * y[i];
  }
  const double denominator = n * stt - st * st;
  Line line;
  line.slope = denominator > 0 ? (n * sty - st * sy) / denominator : 0;
  line.intercept = n > 0 ? (sy - line.slope * st) / n : 0;
  return line;
}

Line Detrend(Grid& grid) {
  std::vector<double> t;
  std::vector<double> y;
  for (std::size_t i = 0; i < grid.value.size(); ++i) {
    if (!grid.valid[i]) continue;
    t.push_back(static_cast<double>(i) * grid.dt);
    y.push_back(grid.value[i]);
  }
  const Line line = FitLine(t, y);
  for (std::size_t i = 0; i < grid.value.size(); ++i) {
    if (grid.valid[i]) grid.value[i] -= line.At(static_cast<double>(i) * grid.dt);
  }
  return line;
}

double AverageOver(const std::vector<double>& t, const std::vector<double>& y, double from,
                   double to) {
  // The curve at x: interpolated inside the data, flat outside it.
  auto at = [&](double x) {
    if (x <= t.front()) return y.front();
    if (x >= t.back()) return y.back();
    const std::size_t i =
        static_cast<std::size_t>(std::upper_bound(t.begin(), t.end(), x) - t.begin());
    const double w = (x - t[i - 1]) / (t[i] - t[i - 1]);
    return y[i - 1] + w * (y[i] - y[i - 1]);
  };
  // Trapezoids between `from`, the sample times inside (from, to), and `to`.
  double area = 0;
  double x0 = from;
  double y0 = at(from);
  for (auto it = std::upper_bound(t.begin(), t.end(), from); it != t.end() && *it < to; ++it) {
    const double x1 = *it;
    const double y1 = y[static_cast<std::size_t>(it - t.begin())];
    area += 0.5 * (y0 + y1) * (x1 - x0);
    x0 = x1;
    y0 = y1;
  }
  area += 0.5 * (y0 + at(to)) * (to - x0);
  return area / (to - from);
}

double LaggedCorrelation(const Grid& a, const Grid& b, long lag, std::size_t min_pairs) {
  const long na = static_cast<long>(a.value.size());
  const long nb = static_cast<long>(b.value.size());
  const long first = std::max(0L, -lag);
  const long last = std::min(na, nb - lag);  // exclusive
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  std::size_t n = 0;
  for (long i = first; i < last; ++i) {
    const std::size_t ia = static_cast<std::size_t>(i);
    const std::size_t ib = static_cast<std::size_t>(i + lag);
    if (!a.valid[ia] || !b.valid[ib]) continue;
    const double x = a.value[ia];
    const double y = b.value[ib];
    sx += x;
    sy += y;
    sxx += x * x;
    syy += y * y;
    sxy += x * y;
    ++n;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (n < min_pairs || n < 2) return nan;
  const double count = static_cast<double>(n);
  const double vx = count * sxx - sx * sx;
  const double vy = count * syy - sy * sy;
  if (vx <= 0 || vy <= 0) return nan;
  return (count * sxy - sx * sy) / std::sqrt(vx * vy);
}

double ParabolicPeak(double left, double centre, double right) {
  const double curvature = left - 2 * centre + right;
  if (!(curvature < 0)) return 0;  // not a strict maximum (or NaN neighbours)
  return std::clamp(0.5 * (left - right) / curvature, -0.5, 0.5);
}

double Quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const std::size_t below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(values.size() - 1, below + 1);
  const double w = position - static_cast<double>(below);
  return values[below] * (1 - w) + values[above] * w;
}

}  // namespace wavepool::agent::wave
