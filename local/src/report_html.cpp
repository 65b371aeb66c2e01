#include "report_html.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report_charts.h"
#include "svg_chart.h"
#include "wavepool/base/atomic_file.h"

namespace wavepool::local {
namespace {

// Nothing may be fetched: scripts and styles are inline, images data: URLs at most.
constexpr const char* kPolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1000px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 32px; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 10px; text-align: left;
  border-bottom: 1px solid #e4e4e4; vertical-align: top; } th { background: #f4f4f4; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure.chart { margin: 18px 0 28px; } figcaption { margin-bottom: 6px; }
figcaption span { color: #555; } svg { max-width: 100%; height: auto; display: block; }
svg text { font: 12px system-ui, sans-serif; fill: #333; }
.failed { color: #b00020; } #page-errors:empty { display: none; }
)";

// Records every error the page meets (its own scripts, console.error, resources that failed or
// that the policy blocked) before anything else runs.
constexpr const char* kErrorScript = R"(
(function () {
  var errors = window.reportErrors = [];
  function record(text) {
    errors.push(String(text));
    if (document.body) document.body.setAttribute('data-errors', String(errors.length));
  }
  window.addEventListener('error', function (e) {
    record(e.message || ('failed to load ' + ((e.target && (e.target.src || e.target.href)) || 'a resource')));
  }, true);
  window.addEventListener('unhandledrejection', function (e) { record('unhandled rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function (e) { record('blocked ' + e.blockedURI); });
  var consoleError = console.error;
  console.error = function () {
    record(Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
})();
)";

// At the end of <body>: every chart's SVG and plot must have a box (a chart that did not
// render, or drew nothing, has none).
constexpr const char* kCheckScript = R"(
(function () {
  var charts = document.querySelectorAll('figure.chart'), rendered = 0;
  charts.forEach(function (figure) {
    var svg = figure.querySelector('svg');
    var box = svg ? svg.getBoundingClientRect() : null;
    var drawn = svg ? svg.querySelector('g.plot, g.empty') : null;
    var inner = drawn ? drawn.getBBox() : null;
    var ok = !!(box && box.width > 0 && box.height > 0 && inner && (inner.width > 0 || inner.height > 0));
    figure.setAttribute('data-rendered', ok ? 'yes' : 'no');
    if (ok) rendered++;
  });
  var body = document.body;
  body.setAttribute('data-charts', String(charts.length));
  body.setAttribute('data-charts-rendered', String(rendered));
  body.setAttribute('data-errors', String(window.reportErrors.length));
  body.setAttribute('data-height', String(document.documentElement.scrollHeight));
  document.getElementById('page-errors').textContent = window.reportErrors.join('\n');
  body.setAttribute('data-ready', 'yes');
})();
)";

std::string Cell(std::string_view text, bool number = false) {
  return absl::StrCat(number ? "<td class=\"n\">" : "<td>", EscapeHtml(text), "</td>");
}

std::string Row(const std::vector<std::string>& cells) {
  return absl::StrCat("<tr>", absl::StrJoin(cells, ""), "</tr>\n");
}

std::string Header(const std::vector<std::string>& names) {
  std::string out = "<tr>";
  for (const std::string& n : names) absl::StrAppend(&out, "<th>", EscapeHtml(n), "</th>");
  return absl::StrCat(out, "</tr>\n");
}

std::string Summary(const RunReport& r) {
  std::string out = "<table class=\"summary\">\n";
  auto add = [&](const std::string& name, const std::string& value) {
    absl::StrAppend(&out, "<tr><th>", name, "</th>", Cell(value), "</tr>\n");
  };
  add("started", r.started_at);
  add("elapsed", FormatValue(r.elapsed_seconds, Unit::kSeconds));
  add("interrupted", r.interrupted ? "yes (run the same command to resume)" : "no");
  add("GPUs", absl::StrCat(r.gpus, " (", r.devices, ")"));
  add("data", r.data);
  return absl::StrCat(out, "</table>\n");
}

std::string Jobs(const RunReport& r) {
  std::string out = absl::StrCat("<table class=\"jobs\">\n",
                                 Header({"job", "manifest", "role", "model", "strategy", "GPUs",
                                         "steps trained", "state", "reason"}));
  for (const JobReport& j : r.jobs) {
    std::string steps = absl::StrCat(j.steps_trained.size(), " of ", j.steps);
    if (j.resumed_from >= 0) absl::StrAppend(&steps, " (resumed from step ", j.resumed_from, ")");
    absl::StrAppend(
        &out, Row({Cell(j.name), Cell(j.manifest), Cell(j.role), Cell(j.model), Cell(j.strategy),
                   Cell(absl::StrJoin(j.gpus, ", ")), Cell(steps, true),
                   absl::StrCat(j.state == "Succeeded" ? "<td>" : "<td class=\"failed\">",
                                EscapeHtml(j.state), "</td>"),
                   Cell(j.reason)}));
  }
  return absl::StrCat(out, "</table>\n");
}

std::string Ratio(std::optional<double> measured, double predicted) {
  if (!measured.has_value() || predicted <= 0) return "-";
  return absl::StrFormat("%.3gx", *measured / predicted);
}

std::string PlanTable(const RunReport& r) {
  std::string out = absl::StrCat(
      "<table class=\"plan\">\n",
      Header({"job", "device", "iteration: predicted", "measured", "ratio", "samples/s: predicted",
              "measured", "memory per GPU: predicted", "measured peak"}));
  for (const JobReport& j : r.jobs) {
    const std::optional<double> iteration = MedianIterationSeconds(j);
    const std::optional<double> rate = MedianSamplesPerSecond(j);
    const std::optional<std::uint64_t> peak = PeakAllocatedBytes(r, j);
    absl::StrAppend(
        &out,
        Row({Cell(j.name), Cell(j.device),
             Cell(FormatValue(j.predicted_iteration_seconds, Unit::kSeconds), true),
             Cell(iteration ? FormatValue(*iteration, Unit::kSeconds) : "-", true),
             Cell(Ratio(iteration, j.predicted_iteration_seconds), true),
             Cell(FormatValue(j.predicted_samples_per_second, Unit::kPlain), true),
             Cell(rate ? FormatValue(*rate, Unit::kPlain) : "-", true),
             Cell(FormatValue(static_cast<double>(j.predicted_memory_per_gpu_bytes), Unit::kBytes),
                  true),
             Cell(peak ? FormatValue(static_cast<double>(*peak), Unit::kBytes) : "-", true)}));
  }
  return absl::StrCat(out, "</table>\n");
}

std::string Notes(const RunReport& r) {
  if (r.notes.empty()) return "<p>None.</p>\n";
  std::string out = absl::StrCat("<table class=\"notes\">\n", Header({"time", "note"}));
  for (const Note& n : r.notes) {
    absl::StrAppend(&out, Row({Cell(absl::StrFormat("%.1f s", n.time), true), Cell(n.text)}));
  }
  return absl::StrCat(out, "</table>\n");
}

std::string Title(const RunReport& r) {
  std::vector<std::string> names;
  for (const JobReport& j : r.jobs) names.push_back(j.name);
  return absl::StrCat("wavepool run: ", names.empty() ? "no job" : absl::StrJoin(names, ", "));
}

}  // namespace

std::string RenderReportHtml(const RunReport& report) {
  const std::string title = EscapeHtml(Title(report));
  std::string page = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"",
      kPolicy, "\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>", title,
      "</title>\n<style>", kStyle, "</style>\n<script>", kErrorScript,
      "</script>\n</head>\n<body>\n", "<h1>", title,
      "</h1>\n<p>Local mode report (report.json holds the same data).</p>\n",
      "<pre id=\"page-errors\" class=\"failed\"></pre>\n", Summary(report), "<h2>Jobs</h2>\n",
      Jobs(report), "<h2>Charts</h2>\n");
  for (const std::string& chart : RenderReportCharts(report)) absl::StrAppend(&page, chart);
  absl::StrAppend(&page, "<h2>The plan next to what was measured</h2>\n", PlanTable(report),
                  "<h2>Notes</h2>\n", Notes(report), "<script>", kCheckScript,
                  "</script>\n</body></html>\n");
  return page;
}

absl::Status WriteReportHtml(const RunReport& report, const std::string& path) {
  return WriteFileAtomically(path, RenderReportHtml(report));
}

}  // namespace wavepool::local
