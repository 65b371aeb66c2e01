// The agent's /metrics endpoint against raw sockets, as a hostile pod on the cluster network can
// use it: silent clients hold off neither a scrape nor the kubelet's liveness probe (which asks
// /metrics), and each connection is closed at its deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
using ::wavepool::testing::StatusIs;
using namespace std::chrono_literals;

// A blocking TCP connection to 127.0.0.1:port. Owns its descriptor.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 &&
                 ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // Everything the server writes until it closes the connection; nullopt when `timeout` passes
  // first.
  std::optional<std::string> ReadToEnd(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string received;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd entry{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&entry, 1, static_cast<int>(left.count())) != 1) {
        return std::nullopt;
      }
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return received;  // EOF, or a reset: the server closed it
      received.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

MetricsOptions EndpointOptions() {
  MetricsOptions options;
  options.hostname = "node-a";
  options.gpus = {{0, "GPU-0", false}};
  options.bind_address = "127.0.0.1";
  return options;
}

// More silent connections than the endpoint serves at once (its default limit is 32) must not
// hold off a scrape: the liveness probe asks /metrics too, and a probe that waits for them fails
// and restarts the agent.
TEST(MetricsEndpoint, SilentClientsNeverHoldOffAScrape) {
  absl::StatusOr<std::unique_ptr<AgentMetrics>> metrics = AgentMetrics::Create(EndpointOptions());
  ASSERT_OK(metrics);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 40; ++i) {
    silent.push_back(std::make_unique<RawClient>((*metrics)->port()));
    ASSERT_TRUE(silent.back()->connected());
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(HttpResponse scrape, HttpGet((*metrics)->port(), "/metrics", 3s));
  EXPECT_EQ(scrape.status, 200);
  EXPECT_THAT(scrape.body, HasSubstr("wavepool_gpu_memory_used_bytes"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(MetricsEndpoint, ASilentClientIsClosedAtTheDeadline) {
  MetricsOptions options = EndpointOptions();
  options.http_request_deadline = 200ms;
  absl::StatusOr<std::unique_ptr<AgentMetrics>> metrics = AgentMetrics::Create(options);
  ASSERT_OK(metrics);
  RawClient silent((*metrics)->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_THAT(silent.ReadToEnd(10s), Optional(std::string()));  // closed, unanswered
  RawClient trickling((*metrics)->port());
  ASSERT_TRUE(trickling.connected());
  ASSERT_TRUE(trickling.Send("GET /metrics HTTP/1.1\r\n"));  // and never the end of the headers
  EXPECT_THAT(trickling.ReadToEnd(10s), Optional(std::string()));
}

TEST(MetricsEndpoint, AtTheLimitANewConnectionClosesTheOldest) {
  MetricsOptions options = EndpointOptions();
  options.http_request_deadline = 60s;  // no silent client is cut off by its deadline here
  options.http_max_connections = 2;
  absl::StatusOr<std::unique_ptr<AgentMetrics>> metrics = AgentMetrics::Create(options);
  ASSERT_OK(metrics);
  RawClient oldest((*metrics)->port());
  ASSERT_TRUE(oldest.connected());
  ASSERT_TRUE(oldest.ReadToEnd(100ms) == std::nullopt);  // accepted and waiting
  RawClient newer((*metrics)->port());
  ASSERT_TRUE(newer.connected());
  ASSERT_OK_AND_ASSIGN(HttpResponse scrape, HttpGet((*metrics)->port(), "/metrics", 3s));
  EXPECT_EQ(scrape.status, 200);
  EXPECT_THAT(oldest.ReadToEnd(3s), Optional(std::string()));
}

TEST(MetricsEndpoint, AnswersOnlyGetAndHeadOfMetrics) {
  absl::StatusOr<std::unique_ptr<AgentMetrics>> metrics = AgentMetrics::Create(EndpointOptions());
  ASSERT_OK(metrics);
  ASSERT_OK_AND_ASSIGN(HttpResponse other, HttpGet((*metrics)->port(), "/debug", 3s));
  EXPECT_EQ(other.status, 404);
  RawClient head((*metrics)->port());
  ASSERT_TRUE(head.Send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::optional<std::string> head_answer = head.ReadToEnd(3s);
  ASSERT_TRUE(head_answer.has_value());
  EXPECT_THAT(*head_answer, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(*head_answer, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(*head_answer, ::testing::Not(HasSubstr("wavepool_")));  // no body
  RawClient post((*metrics)->port());
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
