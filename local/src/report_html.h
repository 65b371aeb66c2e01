// report.html of a local run (docs/local-mode.md, "report.html"): the RunReport that report.json
// holds, drawn as one self-contained page. Everything is inline (SVG charts, CSS, a few lines of
// script) and a Content-Security-Policy forbids fetching anything, so the page opens offline
// and from a CI artifact.
//
// Charts (each a <figure class="chart" data-chart="ID">, ids fixed so tests can find them):
//   loss, throughput            every job's loss and samples/s over time
//   memory-gpu-<i>              per GPU: every worker's allocated memory over the run
//   memory-wave-gpu-<i>         per GPU: a few iterations of it, tick and tock steps shaded
//   slo-<job>                   per foreground job: its iteration time against the SLO's bound,
//                               and the samples/s of the background jobs on its GPUs
//   slowdown                    the agent's measured foreground slowdown against each SLO
//   pacing                      time waiting for launch credits and paused, the background holds
//   decisions                   the agent's credit limits, sensitive op groups, batch advice
//   plan                        the plan's predicted iteration time next to the measured one
// A chart with nothing to draw says why (data-empty) instead of drawing empty axes.
//
// The page checks itself when it loads: the <body> gets data-errors (script errors, console
// errors, resources that failed or were blocked), data-charts and data-charts-rendered (charts
// whose SVG and plot have a non-empty box), data-height (the page's height in pixels) and
// data-ready="yes"; each figure gets data-rendered="yes" or "no".
//
// Pure functions of the report; thread-compatible.
#ifndef WAVEPOOL_LOCAL_SRC_REPORT_HTML_H_
#define WAVEPOOL_LOCAL_SRC_REPORT_HTML_H_

#include <string>

#include "absl/status/status.h"
#include "run_report.h"

namespace wavepool::local {

std::string RenderReportHtml(const RunReport& report);

// Writes RenderReportHtml(report) to `path` through a temporary file and a rename. Internal
// naming the file when writing or renaming fails.
absl::Status WriteReportHtml(const RunReport& report, const std::string& path);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_REPORT_HTML_H_
