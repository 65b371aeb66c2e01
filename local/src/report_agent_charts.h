// The charts of report.html that show the node agent's view and decisions (slowdown, pacing,
// decisions) and the plan next to what was measured (plan); report_html.h lists them. Pure
// functions; thread-compatible.
#ifndef WAVEPOOL_LOCAL_SRC_REPORT_AGENT_CHARTS_H_
#define WAVEPOOL_LOCAL_SRC_REPORT_AGENT_CHARTS_H_

#include <string>
#include <vector>

#include "run_report.h"

namespace wavepool::local {

// The rendered figures, in the page's order.
std::vector<std::string> RenderAgentCharts(const RunReport& report);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_REPORT_AGENT_CHARTS_H_
