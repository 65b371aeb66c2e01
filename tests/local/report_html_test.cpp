// report.html without a browser: every chart drawn from a report with known numbers, the SLO's
// bound and the tick-tock shading where they belong, every string from a manifest escaped,
// nothing fetched, empty data said rather than drawn; the chart primitives and the memory
// series' bounded size.
#include "report_html.h"

#include <cmath>
#include <regex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "run_report.h"
#include "svg_chart.h"
#include "tests/local/synthetic_report.h"

namespace wavepool::local {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The <figure> of chart `id`, or "" when the page has none.
std::string Figure(const std::string& html, const std::string& id) {
  const std::string open = "<figure class=\"chart\" id=\"chart-" + id + "\"";
  const std::size_t start = html.find(open);
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</figure>", start) - start);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportHtml, DrawsEveryChartOfARun) {
  const std::string html = RenderReportHtml(SyntheticReport());
  for (const char* id : {"loss", "throughput", "memory-gpu-0", "memory-wave-gpu-0", "memory-gpu-1",
                         "memory-wave-gpu-1", "slo-team-a-train", "slo-team-b-solo", "slowdown",
                         "pacing", "decisions", "plan"}) {
    const std::string figure = Figure(html, id);
    ASSERT_FALSE(figure.empty()) << id;
    EXPECT_THAT(figure, HasSubstr("<g class=\"plot\"")) << id;
    EXPECT_THAT(figure, Not(HasSubstr("data-empty"))) << id;
    // A series, not only axes: a line, dots or bars in the plot.
    const std::string plot = figure.substr(figure.find("<g class=\"plot\""));
    EXPECT_THAT(plot, ::testing::AnyOf(HasSubstr("<path d=\"M"), HasSubstr("<circle"),
                                       HasSubstr("<rect x=")))
        << id;
  }
  // The background is on GPU 0 only: the foreground alone on GPU 1 has no SLO chart partner.
  EXPECT_THAT(Figure(html, "slo-team-a-train"), HasSubstr("team-a/sweep samples/s (right axis)"));
  EXPECT_THAT(Figure(html, "slo-team-b-solo"), Not(HasSubstr("samples/s (right axis)")));
  EXPECT_THAT(Figure(html, "slo-team-b-solo"), HasSubstr("It has no SLO"));
  EXPECT_THAT(Figure(html, "slo-team-b-solo"), HasSubstr("No background job shared its GPUs."));
  // Legends name every job, axes are titled.
  EXPECT_THAT(Figure(html, "loss"), HasSubstr(">team-a/train</text>"));
  EXPECT_THAT(Figure(html, "loss"), HasSubstr(">team-b/solo</text>"));
  EXPECT_THAT(Figure(html, "loss"), HasSubstr(">seconds since the run started</text>"));
  EXPECT_THAT(Figure(html, "memory-gpu-0"), HasSubstr(">agent: wave peak</text>"));
  // The plan's table: predicted 1 ms, measured the median step.
  EXPECT_THAT(html, HasSubstr("<td class=\"n\">1 ms</td><td class=\"n\">23 ms</td>"));
}

TEST(ReportHtml, DrawsTheSloBoundFromTheForegroundsStepsAlone) {
  const std::string slo = Figure(RenderReportHtml(SyntheticReport()), "slo-team-a-train");
  // Solo: the steps before the background registered (20 ms); the SLO allows 1.2 times that.
  EXPECT_THAT(slo, HasSubstr("SLO bound: 1.20x solo 20 ms"));
  EXPECT_THAT(slo, HasSubstr("the median of the steps with no background beside it"));
  EXPECT_THAT(slo, HasSubstr("stroke-dasharray"));
}

TEST(ReportHtml, ShadesTickAndTockStepsInTheMemoryWaves) {
  const std::string html = RenderReportHtml(SyntheticReport());
  const std::string waves = Figure(html, "memory-wave-gpu-0");
  EXPECT_THAT(waves, HasSubstr(">tick steps of team-a/train</text>"));
  EXPECT_THAT(waves, HasSubstr(">tock steps of team-a/train</text>"));
  // About 12 iterations of the slowest job on the GPU (23 ms): both waves' bands, alternating.
  EXPECT_GE(Count(waves, "class=\"band\""), 10);
  EXPECT_GE(Count(waves, "<circle"), 40);
  // GPU 1 runs no tick-tock job.
  EXPECT_THAT(Figure(html, "memory-wave-gpu-1"), Not(HasSubstr("tick steps")));
}

TEST(ReportHtml, EscapesEveryStringFromTheManifestAndTheRun) {
  const std::string html = RenderReportHtml(HostileReport());
  EXPECT_THAT(html, Not(HasSubstr("<script>window.pwned")));
  EXPECT_THAT(html, Not(HasSubstr("<img id=\"pwned\"")));
  EXPECT_THAT(html, Not(HasSubstr("<b id=\"pwned\"")));
  EXPECT_THAT(html, Not(HasSubstr("<svg onload")));
  EXPECT_THAT(html, Not(HasSubstr("\"><img")));
  EXPECT_THAT(html, HasSubstr("team-a/x&lt;script&gt;window.pwned=1&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("a&amp;b&#39;&quot;&lt;x&gt;.yaml"));
  EXPECT_THAT(html, HasSubstr("&lt;/table&gt;&lt;b id=&quot;pwned&quot;&gt;boom"));
  EXPECT_EQ(Count(html, "<script"), 2);  // the page's own two
  // The job's chart id is made of safe characters only.
  EXPECT_FALSE(Figure(html, "slo-team-a-x-script-window-pwned-1-script").empty());
}

TEST(ReportHtml, FetchesNothing) {
  const std::string html = RenderReportHtml(HostileReport());
  EXPECT_THAT(html, HasSubstr("Content-Security-Policy\" content=\"default-src 'none'"));
  // No element refers to anything (a name's markup is text: its '<' is escaped).
  EXPECT_FALSE(std::regex_search(html, std::regex("<[^<>]*\\s(src|href|srcset)\\s*=")));
  // The only URLs: the SVG namespace and the charts' own clip paths.
  std::string rest = html;
  rest = std::regex_replace(rest, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  rest = std::regex_replace(rest, std::regex("url\\(#clip-[a-z0-9-]+\\)"), "");
  EXPECT_THAT(rest, Not(HasSubstr("http:")));
  EXPECT_THAT(rest, Not(HasSubstr("url(")));
  EXPECT_THAT(rest, Not(HasSubstr("@import")));
  // The note's URL is text (escaped), not an attribute.
  EXPECT_THAT(html, HasSubstr("src=&quot;https://example.com/x.png&quot;"));
}

TEST(ReportHtml, SaysWhyAChartIsEmpty) {
  RunReport r = SyntheticReport();
  for (JobReport& j : r.jobs) j.steps_trained.clear();
  r.agent.clear();
  r.memory.clear();
  r.jobs[1].predicted_iteration_seconds = 0;
  const std::string html = RenderReportHtml(r);
  EXPECT_THAT(Figure(html, "loss"), HasSubstr("data-empty=\"No job trained a step.\""));
  EXPECT_THAT(Figure(html, "memory-gpu-1"),
              HasSubstr("data-empty=\"No worker on GPU 1 reported its memory.\""));
  EXPECT_THAT(Figure(html, "memory-wave-gpu-0"), HasSubstr("data-empty"));
  EXPECT_THAT(Figure(html, "slo-team-a-train"), HasSubstr("data-empty=\"team-a/train trained no"));
  EXPECT_THAT(Figure(html, "slowdown"), HasSubstr("data-empty"));
  EXPECT_THAT(Figure(html, "pacing"), HasSubstr("data-empty"));
  EXPECT_THAT(Figure(html, "decisions"), HasSubstr("data-empty"));
  // Predictions alone still make the plan chart; the missing measurements are not drawn.
  EXPECT_THAT(Figure(html, "plan"), HasSubstr("<g class=\"plot\""));
  for (const char* id : {"loss", "slowdown", "pacing", "decisions"}) {
    EXPECT_THAT(Figure(html, id), HasSubstr("<g class=\"empty\"")) << id;
  }
  EXPECT_THAT(html, Not(HasSubstr("nan")));
  EXPECT_THAT(html, Not(HasSubstr("inf ")));

  RunReport nothing;  // a run that failed before any job started
  const std::string bare = RenderReportHtml(nothing);
  EXPECT_THAT(bare, HasSubstr("wavepool run: no job"));
  EXPECT_THAT(Figure(bare, "plan"), HasSubstr("data-empty"));
}

TEST(ReportHtml, SkipsValuesThatCannotBeDrawn) {
  RunReport r = SyntheticReport();
  r.jobs[0].steps_trained[10].line.loss = NAN;  // a diverged step
  r.jobs[0].steps_trained[11].line.loss = INFINITY;
  const std::string loss = Figure(RenderReportHtml(r), "loss");
  EXPECT_THAT(loss, HasSubstr("<g class=\"plot\""));
  EXPECT_THAT(loss, Not(HasSubstr("nan")));
  EXPECT_THAT(loss, Not(HasSubstr("inf")));
}

TEST(SvgChart, ThinsLongSeriesButKeepsTheirExtremes) {
  LineChart c;
  c.id = "long";
  c.x = {"x", Unit::kPlain, false, false};
  c.y = {"y", Unit::kPlain, false, true};
  Series s;
  s.name = "long";
  for (int i = 0; i < 100000; ++i)
    s.points.push_back({static_cast<double>(i), i == 54321 ? 10.0 : 1.0});
  c.series = {s};
  const std::string svg = RenderLineChart(c);
  // 880 pixel columns, at most four points each.
  EXPECT_LT(Count(svg, "L"), 4 * 900);
  // The spike reaches the top of the domain [0, 10]: y = 14 px.
  EXPECT_THAT(svg, HasSubstr(" 14.0L"));
}

TEST(SvgChart, FormatsValuesInTheirUnits) {
  EXPECT_EQ(FormatValue(0.0123, Unit::kSeconds), "12.3 ms");
  EXPECT_EQ(FormatValue(0.00025, Unit::kSeconds), "250 us");
  EXPECT_EQ(FormatValue(95, Unit::kSeconds), "95 s");
  EXPECT_EQ(FormatValue(3.5 * 1024 * 1024, Unit::kBytes), "3.5 MiB");
  EXPECT_EQ(FormatValue(512, Unit::kBytes), "512 B");
  EXPECT_EQ(FormatValue(1500000, Unit::kPlain), "1.5M");
  EXPECT_EQ(FormatValue(45000, Unit::kPlain), "45k");
  EXPECT_EQ(FormatValue(1.2, Unit::kRatio), "1.20x");
  EXPECT_EQ(FormatValue(NAN, Unit::kPlain), "-");
  EXPECT_EQ(EscapeHtml("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
}

TEST(SvgChart, UsesALogAxisForValuesOrdersOfMagnitudeApart) {
  BarChart c;
  c.id = "bars";
  c.value = {"time", Unit::kSeconds, true, false};
  c.measures = {"predicted", "measured"};
  c.groups = {{"job", {0.0001, 0.05}}, {"missing", {NAN, -1}}};
  const std::string svg = RenderBarChart(c);
  for (const char* tick : {">100 us<", ">1 ms<", ">10 ms<", ">100 ms<"}) {
    EXPECT_THAT(svg, HasSubstr(tick));
  }
  EXPECT_EQ(Count(svg, "<rect x="), 2 + 2);  // two bars and two legend boxes
}

TEST(RunReport, ThinsTheMemoryReadingsOfALongRunEvenly) {
  MemorySeries m;
  for (int i = 0; i < 3 * static_cast<int>(kMaxMemoryReadings); ++i) {
    AddReading(m, {i * 0.005, static_cast<std::uint64_t>(i), 0});
  }
  EXPECT_LT(m.readings.size(), kMaxMemoryReadings);
  EXPECT_GT(m.readings.size(), kMaxMemoryReadings / 2);
  EXPECT_EQ(m.keep_every, 4u);
  for (std::size_t i = 0; i < m.readings.size(); ++i) {
    ASSERT_EQ(m.readings[i].allocated_bytes, 4 * i);  // every 4th, none missing
  }
  const nlohmann::json json = ToJson(SyntheticReport());
  const nlohmann::json& memory = json["memory"][0];
  EXPECT_EQ(memory["job"], "team-a/train");
  EXPECT_EQ(memory["pid"], 100);
  EXPECT_EQ(memory["keptEvery"], 1);
  EXPECT_EQ(memory["time"].size(), memory["allocatedBytes"].size());
  EXPECT_EQ(memory["time"].size(), memory["reservedBytes"].size());
  const nlohmann::json& task = json["agent"].back()["gpus"][0]["tasks"][1];
  EXPECT_EQ(task["role"], "Background");
  EXPECT_DOUBLE_EQ(task["launchWaitSeconds"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(task["launchPausedSeconds"].get<double>(), 0.2);
}

}  // namespace
}  // namespace wavepool::local
