// The agent's /metrics endpoint: what it answers (GET and HEAD of /metrics; 404 and 405 for the
// rest) and that MetricsOptions set its deadline and connection limit. How the server holds up
// against silent, trickling and numerous clients is net::ShortRequestServer's, tested in
// tests/base/short_request_server_test.cpp.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/raw_tcp_client.h"
#include "tests/support/http_get.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/metrics.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;
using ::testing::StartsWith;
using ::wavepool::testing::HttpGet;
using ::wavepool::testing::HttpResponse;
using ::wavepool::testing::RawTcpClient;
using ::wavepool::testing::StatusIs;
using namespace std::chrono_literals;

MetricsOptions EndpointOptions() {
  MetricsOptions options;
  options.hostname = "node-a";
  options.gpus = {{0, "GPU-0", false}};
  options.bind_address = "127.0.0.1";
  return options;
}

TEST(MetricsEndpoint, HttpOptionsSetTheConnectionLimitAndTheDeadline) {
  MetricsOptions limited = EndpointOptions();
  limited.http_request_deadline = 60s;  // no silent client is cut off by its deadline here
  limited.http_max_connections = 1;     // the default, 32, would keep `oldest` open
  absl::StatusOr<std::unique_ptr<AgentMetrics>> metrics = AgentMetrics::Create(limited);
  ASSERT_OK(metrics);
  RawTcpClient oldest((*metrics)->port());
  ASSERT_TRUE(oldest.connected());
  ASSERT_EQ(oldest.ReadToEnd(100ms), std::nullopt);  // accepted and waiting
  ASSERT_OK_AND_ASSIGN(HttpResponse scrape, HttpGet((*metrics)->port(), "/metrics", 3s));
  EXPECT_EQ(scrape.status, 200);
  EXPECT_THAT(scrape.body, HasSubstr("wavepool_gpu_memory_used_bytes"));
  EXPECT_THAT(oldest.ReadToEnd(3s), Optional(std::string()));  // closed, unanswered

  MetricsOptions hurried = EndpointOptions();
  hurried.http_request_deadline = 200ms;  // the default, 5 s, would outlast the wait below
  metrics = AgentMetrics::Create(hurried);
  ASSERT_OK(metrics);
  RawTcpClient silent((*metrics)->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_THAT(silent.ReadToEnd(2s), Optional(std::string()));
}

TEST(MetricsEndpoint, AnswersOnlyGetAndHeadOfMetrics) {
  absl::StatusOr<std::unique_ptr<AgentMetrics>> metrics = AgentMetrics::Create(EndpointOptions());
  ASSERT_OK(metrics);
  ASSERT_OK_AND_ASSIGN(HttpResponse other, HttpGet((*metrics)->port(), "/debug", 3s));
  EXPECT_EQ(other.status, 404);
  RawTcpClient head((*metrics)->port());
  ASSERT_TRUE(head.Send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::optional<std::string> head_answer = head.ReadToEnd(3s);
  ASSERT_TRUE(head_answer.has_value());
  EXPECT_THAT(*head_answer, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(*head_answer, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(*head_answer, ::testing::Not(HasSubstr("wavepool_")));  // no body
  RawTcpClient post((*metrics)->port());
  ASSERT_TRUE(post.Send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_THAT(post.ReadToEnd(3s), Optional(StartsWith("HTTP/1.1 405")));
}

TEST(MetricsEndpoint, BadLimitsAndAddressesAreRefusedNamingThem) {
  MetricsOptions no_deadline = EndpointOptions();
  no_deadline.http_request_deadline = 0ms;
  EXPECT_THAT(AgentMetrics::Create(no_deadline),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("http_request_deadline")));
  MetricsOptions no_connections = EndpointOptions();
  no_connections.http_max_connections = 0;
  EXPECT_THAT(AgentMetrics::Create(no_connections),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("http_max_connections")));
  MetricsOptions by_name = EndpointOptions();
  by_name.bind_address = "localhost";
  EXPECT_THAT(AgentMetrics::Create(by_name),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"localhost\"")));
}

}  // namespace
}  // namespace wavepool::agent
