#include "svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/truncate.h"

namespace wavepool::local {
namespace {

// Okabe-Ito: told apart with the common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                    "#cc79a7", "#56b4e9", "#000000", "#8c8c8c"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

constexpr double kWidth = 960;
constexpr double kPlotHeight = 240;
constexpr double kTop = 14;
constexpr double kLeft = 78;
constexpr double kRightWithAxis = 78;
constexpr double kRightWithout = 24;
constexpr double kLegendRow = 18;
constexpr double kCharWidth = 6.6;  // of 12 px sans-serif, for laying out the legend

const char* Color(int index) {
  return kPalette[((index % kPaletteSize) + kPaletteSize) % kPaletteSize];
}

// A linear or base-10 logarithmic map from a domain onto pixels [from, to].
struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double from = 0, to = 1;
  std::vector<double> ticks;

  double Map(double v) const {
    const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
    const double t = ((log ? std::log10(v) : v) - a) / (b - a);
    return from + t * (to - from);
  }
  bool Drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

double NiceStep(double range, int wanted) {
  const double rough = range / wanted;
  const double power = std::pow(10, std::floor(std::log10(rough)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= rough) return m * power;
  }
  return 10 * power;
}

// A domain covering [lo, hi] (finite, drawable values) with round ticks.
Scale MakeScale(double lo, double hi, const Axis& axis, int wanted_ticks) {
  Scale s;
  s.log = axis.log;
  if (axis.log) {
    double a = std::floor(std::log10(lo)), b = std::ceil(std::log10(hi));
    if (b <= a) b = a + 1;
    s.lo = std::pow(10, a);
    s.hi = std::pow(10, b);
    const int every = static_cast<int>(std::ceil((b - a) / 8));
    for (double e = a; e <= b; e += every) s.ticks.push_back(std::pow(10, e));
    return s;
  }
  if (axis.from_zero) lo = std::min(lo, 0.0);
  if (hi - lo <= std::abs(hi) * 1e-9) {
    const double pad = hi == 0 ? 1 : std::abs(hi) * 0.1;
    lo -= pad;
    hi += pad;
    if (axis.from_zero) lo = std::min(lo + pad, 0.0);
  }
  const double step = NiceStep(hi - lo, wanted_ticks);
  s.lo = std::floor(lo / step + 1e-9) * step;
  s.hi = std::ceil(hi / step - 1e-9) * step;
  for (double t = s.lo; t <= s.hi + step * 1e-6; t += step) {
    s.ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return s;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool empty() const { return !(lo <= hi); }
  void Add(double v, bool log) {
    if (!std::isfinite(v) || (log && v <= 0)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
};

// Keeps, per pixel column, the first, lowest, highest and last point (in their order).
std::vector<std::pair<double, double>> Thin(const std::vector<std::pair<double, double>>& points,
                                            const Scale& x) {
  const double columns = x.to - x.from;
  if (points.size() <= static_cast<std::size_t>(2 * columns)) return points;
  std::vector<std::pair<double, double>> kept;
  std::size_t begin = 0;
  while (begin < points.size()) {
    const double column = std::floor(x.Map(points[begin].first));
    std::size_t end = begin + 1, low = begin, high = begin;
    while (end < points.size() && std::floor(x.Map(points[end].first)) == column) {
      if (points[end].second < points[low].second) low = end;
      if (points[end].second > points[high].second) high = end;
      ++end;
    }
    std::vector<std::size_t> picks = {begin, low, high, end - 1};
    std::sort(picks.begin(), picks.end());
    picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
    for (std::size_t i : picks) kept.push_back(points[i]);
    begin = end;
  }
  return kept;
}

std::string SeriesSvg(const Series& series, const Scale& x, const Scale& y) {
  const std::vector<std::pair<double, double>> points = Thin(series.points, x);
  const char* color = Color(series.color);
  std::string path, dots;
  bool open = false;
  for (const auto& [px, py] : points) {
    if (!x.Drawable(px) || !y.Drawable(py)) {
      open = false;
      continue;
    }
    const double sx = x.Map(px), sy = y.Map(py);
    if (!open) {
      absl::StrAppendFormat(&path, "M%.1f %.1f", sx, sy);
    } else if (series.mark == Mark::kStep) {
      absl::StrAppendFormat(&path, "H%.1fV%.1f", sx, sy);
    } else {
      absl::StrAppendFormat(&path, "L%.1f %.1f", sx, sy);
    }
    open = true;
    if (series.mark == Mark::kDots || series.mark == Mark::kLineDots) {
      absl::StrAppendFormat(&dots, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\"/>", sx, sy);
    }
  }
  std::string out =
      absl::StrCat("<g class=\"series\" data-series=\"", EscapeHtml(series.name), "\">");
  if (series.mark != Mark::kDots && !path.empty()) {
    absl::StrAppend(&out, "<path d=\"", path, "\" fill=\"none\" stroke=\"", color,
                    "\" stroke-width=\"1.6\" stroke-linejoin=\"round\"",
                    series.mark == Mark::kDashed ? " stroke-dasharray=\"6 4\"" : "", "/>");
  }
  if (!dots.empty()) absl::StrAppend(&out, "<g fill=\"", color, "\">", dots, "</g>");
  absl::StrAppend(&out, "</g>");
  return out;
}

std::string Text(double x, double y, const std::string& anchor, const std::string& text,
                 const std::string& extra = "") {
  return absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>%s</text>", x, y, anchor,
                         extra, EscapeHtml(text));
}

struct LegendEntry {
  std::string name;
  int color = 0;
  bool box = false;       // a filled box (a band, a bar) rather than a line
  double opacity = 0.25;  // of the box
  bool dashed = false;
};

// Rows of entries under the plot, from `top`; returns the markup and the height it takes.
std::pair<std::string, double> Legend(const std::vector<LegendEntry>& entries, double top) {
  std::string out = "<g class=\"legend\">";
  double x = kLeft, y = top + 12;
  for (const LegendEntry& e : entries) {
    const std::string name = Truncate(e.name, 80);
    const double width = 30 + kCharWidth * static_cast<double>(name.size()) + 18;
    if (x + width > kWidth && x > kLeft) {
      x = kLeft;
      y += kLegendRow;
    }
    if (e.box) {
      absl::StrAppendFormat(&out,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"10\" fill=\"%s\" "
                            "fill-opacity=\"%.2f\"/>",
                            x, y - 9, Color(e.color), e.opacity);
    } else {
      absl::StrAppendFormat(&out,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                            "stroke-width=\"2\"%s/>",
                            x, y - 4, x + 22, y - 4, Color(e.color),
                            e.dashed ? " stroke-dasharray=\"6 4\"" : "");
    }
    absl::StrAppend(&out, Text(x + 28, y, "start", name));
    x += width;
  }
  absl::StrAppend(&out, "</g>");
  return {out, entries.empty() ? 0 : y - top + 8};
}

std::string Figure(const std::string& id, const std::string& title, const std::string& note,
                   const std::string& empty, double height, const std::string& body) {
  return absl::StrCat(
      "<figure class=\"chart\" id=\"chart-", id, "\" data-chart=\"", id, "\"",
      empty.empty() ? "" : absl::StrCat(" data-empty=\"", EscapeHtml(empty), "\""),
      "><figcaption><b>", EscapeHtml(title), "</b>",
      note.empty() ? "" : absl::StrCat(" <span>", EscapeHtml(note), "</span>"), "</figcaption>",
      absl::StrFormat("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                      "width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"%s\">",
                      kWidth, height, kWidth, height, EscapeHtml(title)),
      body, "</svg></figure>\n");
}

std::string EmptyFigure(const std::string& id, const std::string& title, const std::string& note,
                        const std::string& empty) {
  const std::string message = empty.empty() ? "nothing to draw" : empty;
  const std::string body = absl::StrCat(
      "<g class=\"empty\"><rect x=\"1\" y=\"1\" width=\"958\" height=\"58\" "
      "fill=\"#fafafa\" stroke=\"#ccc\"/>",
      Text(kWidth / 2, 35, "middle", message), "</g>");
  return Figure(id, title, note, message, 60, body);
}

std::string YAxis(const Scale& y, const Axis& axis, double x, bool right, double plot_right) {
  std::string out;
  for (double t : y.ticks) {
    const double sy = y.Map(t);
    if (!right) {
      absl::StrAppendFormat(&out,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                            "stroke=\"#e4e4e4\"/>",
                            kLeft, sy, plot_right, sy);
    }
    absl::StrAppend(&out, Text(right ? x + 6 : x - 6, sy + 4, right ? "start" : "end",
                               FormatValue(t, axis.unit)));
  }
  const double title_x = right ? x + 64 : x - 64;
  absl::StrAppend(&out, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                        "stroke=\"#444\"/>",
                                        x, kTop, x, kTop + kPlotHeight));
  absl::StrAppend(&out, Text(title_x, kTop + kPlotHeight / 2, "middle", axis.title,
                             absl::StrFormat(" transform=\"rotate(-90 %.1f %.1f)\"", title_x,
                                             kTop + kPlotHeight / 2)));
  return out;
}

std::string XAxis(const Scale& x, const Axis& axis, double plot_right) {
  const double bottom = kTop + kPlotHeight;
  std::string out;
  for (double t : x.ticks) {
    const double sx = x.Map(t);
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                          "stroke=\"#e4e4e4\"/>",
                          sx, kTop, sx, bottom);
    absl::StrAppend(&out, Text(sx, bottom + 16, "middle", FormatValue(t, axis.unit)));
  }
  absl::StrAppendFormat(&out,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>",
                        kLeft, bottom, plot_right, bottom);
  absl::StrAppend(&out, Text((kLeft + plot_right) / 2, bottom + 34, "middle", axis.title));
  return out;
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatValue(double value, Unit unit) {
  if (!std::isfinite(value)) return "-";
  const double a = std::abs(value);
  switch (unit) {
    case Unit::kSeconds:
      if (a == 0) return "0";
      if (a < 1e-3) return absl::StrFormat("%.3g us", value * 1e6);
      if (a < 1) return absl::StrFormat("%.3g ms", value * 1e3);
      return absl::StrFormat("%.4g s", value);
    case Unit::kBytes: {
      const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
      int u = 0;
      double v = value;
      while (std::abs(v) >= 1024 && u < 4) {
        v /= 1024;
        ++u;
      }
      return absl::StrFormat(u == 0 ? "%.0f %s" : "%.3g %s", v, units[u]);
    }
    case Unit::kRatio:
      return absl::StrFormat("%.2fx", value);
    case Unit::kPlain:
      break;
  }
  if (a >= 1e9) return absl::StrFormat("%.3gG", value / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.3gM", value / 1e6);
  if (a >= 1e4) return absl::StrFormat("%.3gk", value / 1e3);
  return absl::StrFormat("%.4g", value);
}

std::string RenderLineChart(const LineChart& chart) {
  Range xr, left, right;
  bool has_right = false;
  for (const Series& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) ||
          ((s.right ? chart.right : chart.y).log && y <= 0)) {
        continue;
      }
      xr.Add(x, chart.x.log);
      (s.right ? right : left).Add(y, (s.right ? chart.right : chart.y).log);
      has_right = has_right || s.right;
    }
  }
  if (xr.empty()) return EmptyFigure(chart.id, chart.title, chart.note, chart.empty);
  for (const Band& b : chart.bands) {
    xr.Add(b.from, chart.x.log);
    xr.Add(b.to, chart.x.log);
  }
  const double plot_right = kWidth - (has_right ? kRightWithAxis : kRightWithout);
  Scale x = MakeScale(xr.lo, xr.hi, chart.x, 8);
  x.from = kLeft;
  x.to = plot_right;
  // [1, 10] for an axis with no series: valid on a log axis too.
  Scale y = left.empty() ? MakeScale(1, 10, chart.y, 5) : MakeScale(left.lo, left.hi, chart.y, 5);
  y.from = kTop + kPlotHeight;
  y.to = kTop;
  Scale y2 = right.empty() ? y : MakeScale(right.lo, right.hi, chart.right, 5);
  y2.from = y.from;
  y2.to = y.to;

  std::string body = XAxis(x, chart.x, plot_right);
  absl::StrAppend(&body, YAxis(y, chart.y, kLeft, false, plot_right));
  if (has_right) absl::StrAppend(&body, YAxis(y2, chart.right, plot_right, true, plot_right));
  absl::StrAppendFormat(
      &body,
      "<clipPath id=\"clip-%s\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
      "height=\"%.1f\"/></clipPath><g class=\"plot\" clip-path=\"url(#clip-%s)\">",
      chart.id, kLeft - 3, kTop - 3, plot_right - kLeft + 6, kPlotHeight + 6, chart.id);
  std::vector<LegendEntry> legend;
  std::map<std::string, bool> band_labels;
  for (const Band& b : chart.bands) {
    if (!std::isfinite(b.from) || !std::isfinite(b.to) || b.to < b.from) continue;
    const double from = x.Map(b.from), to = x.Map(b.to);
    absl::StrAppendFormat(&body,
                          "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                          "height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.18\"/>",
                          from, kTop, std::max(to - from, 0.8), kPlotHeight, Color(b.color));
    if (band_labels.emplace(b.label, true).second) legend.push_back({b.label, b.color, true});
  }
  for (const Series& s : chart.series) {
    absl::StrAppend(&body, SeriesSvg(s, x, s.right ? y2 : y));
    legend.push_back({s.right ? absl::StrCat(s.name, " (right axis)") : s.name, s.color, false, 0,
                      s.mark == Mark::kDashed});
  }
  absl::StrAppend(&body, "</g>");
  auto [legend_svg, legend_height] = Legend(legend, kTop + kPlotHeight + 44);
  absl::StrAppend(&body, legend_svg);
  return Figure(chart.id, chart.title, chart.note, "", kTop + kPlotHeight + 48 + legend_height,
                body);
}

std::string RenderBarChart(const BarChart& chart) {
  Range range;
  for (const BarGroup& g : chart.groups) {
    for (double v : g.values) range.Add(v, chart.value.log);
  }
  if (range.empty() || chart.measures.empty()) {
    return EmptyFigure(chart.id, chart.title, chart.note, chart.empty);
  }
  constexpr double kLabelWidth = 220, kBar = 14, kGap = 12;
  const double plot_right = kWidth - kRightWithAxis;
  const double group_height = kBar * static_cast<double>(chart.measures.size()) + kGap;
  const double plot_height = group_height * static_cast<double>(chart.groups.size());
  Axis axis = chart.value;
  axis.from_zero = !axis.log;
  // On a log axis bars start a decade under the smallest value, so that every bar shows.
  Scale x = MakeScale(axis.log ? range.lo / 10 : range.lo, range.hi, axis, 6);
  x.from = kLabelWidth;
  x.to = plot_right;
  std::string body;
  const double bottom = kTop + plot_height;
  for (double t : x.ticks) {
    const double sx = x.Map(t);
    absl::StrAppendFormat(&body,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                          "stroke=\"#e4e4e4\"/>",
                          sx, kTop, sx, bottom);
    absl::StrAppend(&body, Text(sx, bottom + 16, "middle", FormatValue(t, axis.unit)));
  }
  absl::StrAppend(&body, Text((kLabelWidth + plot_right) / 2, bottom + 34, "middle", axis.title));
  absl::StrAppend(&body, "<g class=\"plot\">");
  for (std::size_t g = 0; g < chart.groups.size(); ++g) {
    const BarGroup& group = chart.groups[g];
    const double top = kTop + group_height * static_cast<double>(g) + kGap / 2;
    absl::StrAppend(
        &body, Text(kLabelWidth - 8, top + group_height / 2, "end", Truncate(group.label, 32)));
    for (std::size_t m = 0; m < group.values.size() && m < chart.measures.size(); ++m) {
      const double v = group.values[m];
      if (!x.Drawable(v)) continue;
      const double from = x.Map(x.log ? x.lo : 0), to = x.Map(v);
      const double bar_top = top + kBar * static_cast<double>(m);
      absl::StrAppendFormat(&body,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "fill=\"%s\"/>",
                            from, bar_top, std::max(to - from, 1.0), kBar - 2,
                            Color(static_cast<int>(m)));
      absl::StrAppend(&body, Text(to + 4, bar_top + kBar - 4, "start", FormatValue(v, axis.unit),
                                  " font-size=\"10\""));
    }
  }
  absl::StrAppend(&body, "</g>");
  absl::StrAppendFormat(&body,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>",
                        kLabelWidth, bottom, plot_right, bottom);
  std::vector<LegendEntry> legend;
  for (std::size_t m = 0; m < chart.measures.size(); ++m) {
    legend.push_back({chart.measures[m], static_cast<int>(m), true, 1.0});
  }
  auto [legend_svg, legend_height] = Legend(legend, bottom + 44);
  absl::StrAppend(&body, legend_svg);
  return Figure(chart.id, chart.title, chart.note, "", bottom + 48 + legend_height, body);
}

}  // namespace wavepool::local
