// report.html in a real browser: Debian's chromium, headless, loads the page from a file and
// must report no script or console error and every chart rendered (the page's own check, see
// report_html.h). A screenshot of each page is kept in the test's output directory
// (WAVEPOOL_TEST_OUTPUT_DIR/<test>/report.png) with the page, the DOM chromium ended with and
// its log. Skipped where chromium is not installed (scripts/setup installs it).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report_html.h"
#include "tests/local/synthetic_report.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::local {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::wavepool::testing::ReadFileOrEmpty;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

// $WAVEPOOL_CHROMIUM, else `chromium` on the PATH; "" when neither is there.
std::string FindChromium() {
  if (const char* chosen = std::getenv("WAVEPOOL_CHROMIUM"); chosen != nullptr && *chosen) {
    return chosen;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path == nullptr ? "/usr/bin:/bin" : path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/chromium";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string Quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// What chromium made of a page.
struct PageLoad {
  std::string dom;                            // --dump-dom, after the page's scripts ran
  std::vector<std::string> console;           // the page's console messages (errors included)
  std::map<std::string, std::string> body;    // <body>'s data-* attributes, without "data-"
  std::map<std::string, std::string> charts;  // data-chart -> data-rendered
  std::map<std::string, bool> empty;          // data-chart -> has data-empty
};

class ReportInChromium : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium is not installed (apt-get install chromium, or set "
                      "WAVEPOOL_CHROMIUM): report.html is not checked in a browser";
    }
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    out_ =
        std::string(WAVEPOOL_TEST_OUTPUT_DIR) + "/" + test->test_suite_name() + "." + test->name();
    fs::remove_all(out_);
    fs::create_directories(out_);
    ASSERT_OK_AND_ASSIGN(profile_, TempDir::Create("wavepool-chromium"));
  }

  // chromium --headless with the flags every run shares; its stdout to `stdout_path`, its log
  // (console messages included) to `log_path`. Returns the exit status.
  int Chromium(const std::string& args, const std::string& stdout_path,
               const std::string& log_path) const {
    const std::string command =
        "timeout 120 " + Quote(chromium_) +
        " --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run"
        " --no-default-browser-check --disable-extensions --hide-scrollbars"
        " --enable-logging=stderr --v=0 --user-data-dir=" +
        Quote(profile_.path()) + " --window-size=1100," + std::to_string(height_) + " " + args +
        " > " + Quote(stdout_path) + " 2> " + Quote(log_path);
    return std::system(command.c_str());
  }

  // Loads `html` (a file), reads the page's verdict from the DOM, then screenshots the whole
  // page (its height as the page measured it) to <out>/report.png.
  PageLoad Load(const std::string& html) {
    fs::copy_file(html, out_ + "/report.html", fs::copy_options::overwrite_existing);
    const std::string url = "file://" + fs::absolute(html).string();
    PageLoad load;
    EXPECT_EQ(Chromium("--dump-dom " + Quote(url), out_ + "/dom.html", out_ + "/chromium.log"), 0)
        << ReadFileOrEmpty(out_ + "/chromium.log");
    load.dom = ReadFileOrEmpty(out_ + "/dom.html");
    std::stringstream log(ReadFileOrEmpty(out_ + "/chromium.log"));
    for (std::string line; std::getline(log, line);) {
      if (line.find(":CONSOLE") != std::string::npos) load.console.push_back(line);
    }
    std::smatch body;
    if (std::regex_search(load.dom, body, std::regex("<body([^>]*)>"))) {
      const std::string attributes = body[1].str();
      const std::regex attribute("data-([a-z-]+)=\"([^\"]*)\"");
      for (std::sregex_iterator it(attributes.begin(), attributes.end(), attribute), end; it != end;
           ++it) {
        load.body[(*it)[1].str()] = (*it)[2].str();
      }
    }
    const std::regex figure("<figure class=\"chart\"[^>]*>");
    for (std::sregex_iterator it(load.dom.begin(), load.dom.end(), figure), end; it != end; ++it) {
      const std::string tag = it->str();
      std::smatch id, rendered;
      if (!std::regex_search(tag, id, std::regex("data-chart=\"([^\"]*)\""))) continue;
      std::regex_search(tag, rendered, std::regex("data-rendered=\"([^\"]*)\""));
      load.charts[id[1].str()] = rendered.empty() ? "missing" : rendered[1].str();
      load.empty[id[1].str()] = tag.find("data-empty=") != std::string::npos;
    }
    if (load.body.count("height") > 0) height_ = std::max(600, std::stoi(load.body["height"]));
    EXPECT_EQ(Chromium("--screenshot=" + Quote(out_ + "/report.png") + " " + Quote(url),
                       out_ + "/screenshot.out", out_ + "/screenshot.log"),
              0)
        << ReadFileOrEmpty(out_ + "/screenshot.log");
    return load;
  }

  // No error of any kind, and every chart drawn.
  static void ExpectClean(const PageLoad& load) {
    EXPECT_EQ(load.body.count("ready") ? load.body.at("ready") : "", "yes") << load.dom;
    EXPECT_EQ(load.body.count("errors") ? load.body.at("errors") : "", "0") << load.dom;
    EXPECT_THAT(load.console, IsEmpty());
    EXPECT_THAT(load.dom, HasSubstr("<pre id=\"page-errors\" class=\"failed\"></pre>"));
    ASSERT_FALSE(load.charts.empty());
    EXPECT_EQ(load.body.count("charts") ? load.body.at("charts") : "",
              std::to_string(load.charts.size()));
    EXPECT_EQ(load.body.count("charts-rendered") ? load.body.at("charts-rendered") : "",
              std::to_string(load.charts.size()));
    for (const auto& [id, rendered] : load.charts) EXPECT_EQ(rendered, "yes") << id;
  }

  void ExpectScreenshot() const {
    const std::string png = ReadFileOrEmpty(out_ + "/report.png");
    ASSERT_GT(png.size(), 10000u) << "no screenshot in " << out_;
    EXPECT_EQ(png.substr(1, 3), "PNG");
  }

  std::string chromium_;
  std::string out_;
  TempDir profile_;  // chromium's
  TempDir run_dir_;  // a `wavepool run`'s
  int height_ = 1200;
};

TEST_F(ReportInChromium, ASyntheticReportWithHostileNamesLoadsWithoutErrors) {
  ASSERT_TRUE(WriteReportHtml(HostileReport(), out_ + "/page.html").ok());
  const PageLoad load = Load(out_ + "/page.html");
  ExpectClean(load);
  ExpectScreenshot();
  // The markup in the names stayed text: no element the names tried to inject exists, and
  // their scripts never ran.
  for (const char* element : {"<img id=\"pwned\"", "<b id=\"pwned\"", "<svg onload"}) {
    EXPECT_THAT(load.dom, Not(HasSubstr(element)));
  }
  EXPECT_THAT(load.dom, HasSubstr("team-a/x&lt;script&gt;window.pwned=1&lt;/script&gt;"));
  EXPECT_EQ(load.charts.size(), 12u);
  for (const auto& [id, empty] : load.empty) EXPECT_FALSE(empty) << id;
}

TEST_F(ReportInChromium, EmptyChartsRenderTheirReason) {
  RunReport r = SyntheticReport();
  for (JobReport& j : r.jobs) j.steps_trained.clear();
  r.agent.clear();
  r.memory.clear();
  ASSERT_TRUE(WriteReportHtml(r, out_ + "/page.html").ok());
  const PageLoad load = Load(out_ + "/page.html");
  ExpectClean(load);
  EXPECT_TRUE(load.empty.at("loss"));
  EXPECT_TRUE(load.empty.at("pacing"));
  EXPECT_FALSE(load.empty.at("plan"));  // the predictions alone
}

// A foreground tick-tock job and a background job sharing GPU 0, as in local_run_test.cpp.
constexpr const char* kRun = R"(apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: waves, namespace: team-a}
spec:
  role: Foreground
  model: {name: cnn_tiny}
  globalBatchSize: 32
  gpus: 1
  steps: 200
  parallelism: {strategy: DataParallel, tickTock: "On"}
  collocation: {maxForegroundSlowdown: 1.2}
---
apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata: {name: sweep, namespace: team-a}
spec:
  role: Background
  model: {name: mlp_tiny}
  globalBatchSize: 64
  gpus: 1
  steps: 400
  checkpoint: {path: /checkpoints/sweep}
)";

TEST_F(ReportInChromium, AWavepoolRunsReportRendersEveryChart) {
  // A short directory: the agent's socket path must fit in sun_path.
  ASSERT_OK_AND_ASSIGN(run_dir_, TempDir::Create("wavepool-report"));
  const std::string run = run_dir_.path();
  ASSERT_OK(WriteFile(run + "/jobs.yaml", kRun));
  const std::string command = "cd " + Quote(run) + " && " + Quote(WAVEPOOL_BIN) +
                              " run jobs.yaml --out out --threads 1 --fresh --worker " +
                              Quote(WAVEPOOL_WORKER_BIN) + " > run.out 2> run.err";
  ASSERT_EQ(std::system(command.c_str()), 0)
      << ReadFileOrEmpty(run + "/run.out") << ReadFileOrEmpty(run + "/run.err");
  EXPECT_THAT(ReadFileOrEmpty(run + "/run.out"), HasSubstr("report: out/report.html"));
  fs::copy_file(run + "/out/report.json", out_ + "/report.json");
  const PageLoad load = Load(run + "/out/report.html");
  ExpectClean(load);
  ExpectScreenshot();
  // What the run measured is drawn, not said missing: steps, the workers' memory, the agent.
  for (const char* id : {"loss", "throughput", "memory-gpu-0", "memory-wave-gpu-0",
                         "slo-team-a-waves", "slowdown", "pacing", "decisions", "plan"}) {
    ASSERT_EQ(load.empty.count(id), 1u) << id;
    EXPECT_FALSE(load.empty.at(id)) << id;
  }
  EXPECT_THAT(load.dom, HasSubstr("tick steps of team-a/waves"));
  EXPECT_THAT(load.dom, HasSubstr("team-a/sweep samples/s (right axis)"));
}

}  // namespace
}  // namespace wavepool::local
