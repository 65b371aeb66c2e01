// End to end: Debian's real `prometheus` server scrapes the agent's metrics endpoint on loopback,
// and the test reads the series back through Prometheus' HTTP API.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/metrics_test_util.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/free_port.h"
#include "tests/support/http_get.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/metrics.h"

namespace wavepool::agent {
namespace {

using metrics_testing::Sample;
using metrics_testing::UrlEncode;
using ::wavepool::testing::ChildProcess;
using ::wavepool::testing::ChildStream;
using ::wavepool::testing::HttpGet;
using ::wavepool::testing::ReadFileOrEmpty;
using ::wavepool::testing::SpawnOptions;
using ::wavepool::testing::TempDir;
using Clock = std::chrono::steady_clock;

constexpr char kUuid[] = "GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d";
constexpr double kMemoryUsedBytes = 123456789;
// Per waiting phase (ready, each query). Generous: Prometheus starts in about a second and
// scrapes every second, but CI machines with 2 cores are shared. Four phases and the 30 s stop
// stay under CTest's 300 s limit for the test.
constexpr std::chrono::seconds kDeadline(60);
constexpr std::chrono::milliseconds kPollInterval(250);

std::string PrometheusConfig(std::uint16_t agent_port) {
  // honor_labels: the task series' own `job` label wins over the scrape job's (docs/agent.md).
  return absl::StrCat(
      "global:\n"
      "  scrape_interval: 1s\n"
      "  scrape_timeout: 1s\n"
      "  evaluation_interval: 1s\n"
      "scrape_configs:\n"
      "  - job_name: wavepool-agent\n"
      "    honor_labels: true\n"
      "    static_configs:\n"
      "      - targets: ['127.0.0.1:",
      agent_port, "']\n");
}

// Starts `argv` with stdin from /dev/null and both output streams in the file `log_path`, as
// `2>&1` gives: one open file description, so that neither stream overwrites the other.
absl::StatusOr<std::unique_ptr<ChildProcess>> StartWithLog(const std::vector<std::string>& argv,
                                                           const std::string& log_path) {
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", log_path));
  SpawnOptions options;
  options.in = ChildStream::File("/dev/null");
  options.out = ChildStream::Descriptor(log_fd);
  options.err = ChildStream::Descriptor(log_fd);
  auto process = std::make_unique<ChildProcess>(argv, options);
  ::close(log_fd);
  if (!process->start_status().ok()) return process->start_status();
  return process;
}

// A Prometheus server on loopback with its own storage, stopped (SIGTERM) on destruction.
class PrometheusServer {
 public:
  PrometheusServer(std::string binary, std::string directory)
      : binary_(std::move(binary)), directory_(std::move(directory)) {}
  ~PrometheusServer() { Stop(); }

  // Starts the server and waits until /-/ready answers 200. A port taken between choosing it and
  // Prometheus binding it is retried with another one.
  ::testing::AssertionResult Start(std::uint16_t agent_port) {
    if (absl::Status written =
            ::wavepool::testing::WriteFile(config_path(), PrometheusConfig(agent_port));
        !written.ok()) {
      return ::testing::AssertionFailure() << written;
    }
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = static_cast<std::uint16_t>(::wavepool::testing::FreePort());
      auto child = StartWithLog(
          {binary_, "--config.file=" + config_path(), "--storage.tsdb.path=" + directory_ + "/data",
           absl::StrCat("--web.listen-address=127.0.0.1:", port_), "--log.level=info"},
          log_path());
      if (!child.ok()) return ::testing::AssertionFailure() << child.status();
      process_ = std::move(child).value();
      if (WaitUntilReady()) return ::testing::AssertionSuccess();
      const bool port_taken = log().find("address already in use") != std::string::npos;
      if (!port_taken || process_->Running()) break;
    }
    return ::testing::AssertionFailure()
           << "prometheus did not become ready on 127.0.0.1:" << port_;
  }

  // The series an instant query returns, or nullopt while the API does not answer.
  std::optional<std::vector<Sample>> Query(const std::string& promql) {
    auto response =
        HttpGet(port_, "/api/v1/query?query=" + UrlEncode(promql), std::chrono::seconds(10));
    if (!response.ok() || response->status != 200) return std::nullopt;
    return metrics_testing::ParseInstantVector(response->body);
  }

  // What the query answers now, for failure messages.
  std::string Describe(const std::string& promql) {
    const std::optional<std::vector<Sample>> result = Query(promql);
    if (!result.has_value()) return "no answer";
    std::string text = absl::StrCat(result->size(), " series");
    for (const Sample& sample : *result) {
      absl::StrAppend(&text, "; ", sample.name, "{");
      for (const auto& [key, value] : sample.labels) absl::StrAppend(&text, key, "=", value, " ");
      absl::StrAppend(&text, "} ", sample.value);
    }
    return text;
  }

  bool running() { return process_ != nullptr && process_->Running(); }

  // SIGTERM and a bounded wait; the exit code (128 + signal when a signal ended it; -1 if it never
  // ran).
  int Stop() {
    if (process_ == nullptr) return -1;
    const int status = process_->Stop(std::chrono::seconds(30));
    process_.reset();
    return status;
  }

  std::string log() const { return ReadFileOrEmpty(log_path()); }

 private:
  std::string config_path() const { return directory_ + "/prometheus.yml"; }
  std::string log_path() const { return directory_ + "/prometheus.log"; }

  bool WaitUntilReady() {
    const auto deadline = Clock::now() + kDeadline;
    while (Clock::now() < deadline && running()) {
      auto response = HttpGet(port_, "/-/ready", std::chrono::seconds(10));
      if (response.ok() && response->status == 200) return true;
      std::this_thread::sleep_for(kPollInterval);
    }
    return false;
  }

  const std::string binary_;
  const std::string directory_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

// Prints Prometheus' log when the test failed, whichever assertion ended it.
class LogOnFailure {
 public:
  explicit LogOnFailure(PrometheusServer& server) : server_(server) {}
  ~LogOnFailure() {
    if (::testing::Test::HasFailure()) {
      std::cerr << "---- prometheus log ----\n" << server_.log() << "---- end of log ----\n";
    }
  }

 private:
  PrometheusServer& server_;
};

// Polls `promql` until `accept` holds for its result, Prometheus exits, or the deadline passes.
template <typename Predicate>
std::optional<std::vector<Sample>> PollQuery(PrometheusServer& server, const std::string& promql,
                                             Predicate accept) {
  const auto deadline = Clock::now() + kDeadline;
  while (Clock::now() < deadline && server.running()) {
    std::optional<std::vector<Sample>> result = server.Query(promql);
    if (result.has_value() && accept(*result)) return result;
    std::this_thread::sleep_for(kPollInterval);
  }
  return std::nullopt;
}

TEST(MetricsEndToEnd, PrometheusScrapesGpuAndTaskSeriesAndDropsEndedTasks) {
  const auto binary = metrics_testing::FindExecutable("prometheus");
  if (!binary.has_value()) {
    GTEST_SKIP() << "the prometheus server is not installed (Debian package prometheus; "
                    "scripts/setup installs it)";
  }
  MetricsOptions options;
  options.hostname = "node-e2e";
  options.info = {"0.1.0", false, false, false};
  options.gpus = {{0, kUuid, false}};
  options.bind_address = "127.0.0.1";
  ASSERT_OK_AND_ASSIGN(auto metrics, AgentMetrics::Create(options));
  metrics->gpu(0)->SetMemory(static_cast<std::int64_t>(kMemoryUsedBytes), 80LL << 30);
  ASSERT_OK_AND_ASSIGN(TaskMetrics * fg, metrics->AddTask({"research", "vgg16", "vgg16-worker-0",
                                                           Role::kForeground, 0}));
  ASSERT_OK_AND_ASSIGN(TaskMetrics * bg, metrics->AddTask({"research", "resnet", "resnet-bg-0",
                                                           Role::kBackground, 0}));
  fg->ObserveGate({2, 1, 100, 0, 0});
  bg->ObserveGate({1, 0, 40, 0, 0});

  ASSERT_OK_AND_ASSIGN(const TempDir directory, TempDir::Create("wavepool-metrics"));
  PrometheusServer server(*binary, directory.path());
  LogOnFailure log_on_failure(server);
  ASSERT_TRUE(server.Start(metrics->port()));
  const std::string instance = absl::StrCat("127.0.0.1:", metrics->port());

  // The GPU series with exactly the labels that join it with dcgm-exporter's, plus the scrape's
  // own `instance` and `job` (no label of ours is called job here).
  const std::string gpu_query = "wavepool_gpu_memory_used_bytes";
  const auto gpu = PollQuery(server, gpu_query, [](const std::vector<Sample>& r) {
    return r.size() == 1 && r[0].value == kMemoryUsedBytes;
  });
  ASSERT_TRUE(gpu.has_value()) << gpu_query << " never read " << kMemoryUsedBytes << " within "
                               << kDeadline.count() << " s; now: " << server.Describe(gpu_query);
  EXPECT_EQ((*gpu)[0].labels, (metrics_testing::Labels{{"hostname", "node-e2e"},
                                                       {"gpu", "0"},
                                                       {"UUID", kUuid},
                                                       {"instance", instance},
                                                       {"job", "wavepool-agent"}}));

  // A task series keeps its own labels (honor_labels), its `job` included.
  const std::string task_query = "wavepool_task_launch_credit_limit{pod=\"vgg16-worker-0\"}";
  const auto task = PollQuery(server, task_query, [](const std::vector<Sample>& r) {
    return r.size() == 1 && r[0].value == 2;
  });
  ASSERT_TRUE(task.has_value()) << task_query << ": " << server.Describe(task_query);
  EXPECT_EQ((*task)[0].labels, (metrics_testing::Labels{{"hostname", "node-e2e"},
                                                        {"namespace", "research"},
                                                        {"job", "vgg16"},
                                                        {"pod", "vgg16-worker-0"},
                                                        {"role", "foreground"},
                                                        {"gpu", "0"},
                                                        {"instance", instance}}));

  // An ended task's series go stale at the next scrape, so Prometheus stops returning them.
  const std::string ended_query = "wavepool_task_launches_total{pod=\"resnet-bg-0\"}";
  ASSERT_TRUE(
      PollQuery(server, ended_query,
                [](const std::vector<Sample>& r) { return r.size() == 1 && r[0].value == 40; })
          .has_value())
      << ended_query << ": " << server.Describe(ended_query);
  metrics->RemoveTask(bg);
  EXPECT_TRUE(PollQuery(server, ended_query, [](const std::vector<Sample>& r) { return r.empty(); })
                  .has_value())
      << ended_query << " still answers " << server.Describe(ended_query);

  const int status = server.Stop();
  EXPECT_EQ(status, 0) << "prometheus did not exit cleanly on SIGTERM (exit code " << status << ")";
}

}  // namespace
}  // namespace wavepool::agent
