// Charts for report.html as inline SVG: line, step and dot series on linear or logarithmic axes
// with ticks, grid lines, axis titles and a legend; shaded x intervals (a pause, a tick step);
// horizontal grouped bar charts. Each chart is a <figure class="chart"> holding one <svg>; what
// it draws sits in a <g class="plot">, or, with nothing to draw, its `empty` text in a
// <g class="empty"> (the page's check in report_html.cpp looks for one of them).
//
// Pure functions building strings; thread-compatible. Every text given here is escaped, so a
// name from a manifest can never become markup.
#ifndef WAVEPOOL_LOCAL_SRC_SVG_CHART_H_
#define WAVEPOOL_LOCAL_SRC_SVG_CHART_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wavepool::local {

// `text` with & < > " ' replaced by character references: safe in element content and in
// quoted attribute values.
std::string EscapeHtml(std::string_view text);

// How tick labels read.
enum class Unit {
  kPlain,    // 0.5, 120, 1.5k, 2M
  kSeconds,  // 250 us, 12 ms, 1.5 s
  kBytes,    // 512 B, 3.2 MiB, 1.5 GiB
  kRatio,    // 1.20x
};

// A number as a label in `unit`, three significant digits.
std::string FormatValue(double value, Unit unit);

struct Axis {
  std::string title;
  Unit unit = Unit::kPlain;
  bool log = false;        // base 10; values <= 0 are not drawn on a log axis
  bool from_zero = false;  // a linear axis that starts at 0 whatever the data
};

enum class Mark {
  kLine,      // a polyline through the points
  kDashed,    // the same, dashed (references: an SLO, a prediction)
  kStep,      // holds each value until the next point (a setting that changes)
  kDots,      // a dot per point
  kLineDots,  // a polyline with a dot per point
};

struct Series {
  std::string name;  // the legend's entry
  // (x, y); x ascending. A non-finite y breaks the line.
  std::vector<std::pair<double, double>> points;
  Mark mark = Mark::kLine;
  int color = 0;       // index into the palette (wraps)
  bool right = false;  // against the right axis
};

// An x interval shaded over the whole height of the plot. Bands with one label share a legend
// entry.
struct Band {
  double from = 0;
  double to = 0;
  int color = 0;
  std::string label;
};

struct LineChart {
  std::string id;  // unique in the page, [a-z0-9-]
  std::string title;
  std::string note;  // a sentence under the title: what the chart shows
  Axis x, y;
  Axis right;  // drawn when a series is on the right
  std::vector<Series> series;
  std::vector<Band> bands;
  std::string empty;  // shown instead of the plot when no series has a drawable point
};

// A <figure> with the chart. Series with more points than the plot is wide are thinned to the
// first, lowest, highest and last point of each pixel column, so that waves and spikes stay.
std::string RenderLineChart(const LineChart& chart);

struct BarGroup {
  std::string label;           // a category (a job)
  std::vector<double> values;  // one per measure; non-finite or (log axis) <= 0: not drawn
};

struct BarChart {
  std::string id;
  std::string title;
  std::string note;
  Axis value;                         // the horizontal axis
  std::vector<std::string> measures;  // the legend: one color each ("predicted", "observed")
  std::vector<BarGroup> groups;
  std::string empty;
};

std::string RenderBarChart(const BarChart& chart);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_SVG_CHART_H_
