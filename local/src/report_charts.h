// The charts of report.html (report_html.h lists them), built from a RunReport, and the figures
// of it the page's tables share with them. Pure functions; thread-compatible.
#ifndef WAVEPOOL_LOCAL_SRC_REPORT_CHARTS_H_
#define WAVEPOOL_LOCAL_SRC_REPORT_CHARTS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run_report.h"

namespace wavepool::local {

// Every chart as a rendered <figure>, in the page's order.
std::vector<std::string> RenderReportCharts(const RunReport& report);

// The median of the job's measured iteration times (seconds); nullopt without steps.
std::optional<double> MedianIterationSeconds(const JobReport& job);
// The median of the job's measured samples/s; nullopt without steps.
std::optional<double> MedianSamplesPerSecond(const JobReport& job);
// The most memory one worker of the job held (allocated bytes); nullopt without samples.
std::optional<std::uint64_t> PeakAllocatedBytes(const RunReport& report, const JobReport& job);

// `name` as a chart id: lowercase letters, digits and single '-'.
std::string ChartId(std::string_view name);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_REPORT_CHARTS_H_
