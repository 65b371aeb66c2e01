// The controller's HTTP endpoints against raw sockets: slow and silent clients hold only their own
// connection, every request has a deadline, and the number of connections is bounded by closing
// the oldest, never by turning a probe away.
#include "http/http_endpoints.h"

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
#include "tests/support/status_matchers.h"

namespace wavepool::controller::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::StatusIs;

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
      if (left.count() <= 0 || !Readable(left)) return std::nullopt;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return received;  // EOF, or a reset: the server closed it
      received.append(buffer, static_cast<std::size_t>(n));
    }
  }

  // True when the server has closed the connection (or written to it) within `wait`.
  bool Readable(std::chrono::milliseconds wait) {
    pollfd entry{fd_, POLLIN, 0};
    return ::poll(&entry, 1, static_cast<int>(wait.count())) == 1;
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::unique_ptr<HttpEndpoints> StartServer(HttpLimits limits) {
  absl::StatusOr<std::unique_ptr<HttpEndpoints>> server = HttpEndpoints::Start(
      "127.0.0.1", 0,
      [](std::string_view path) {
        if (path == "/healthz") return HttpAnswer{200, "text/plain; charset=utf-8", "ok\n"};
        return HttpAnswer{404, "text/plain; charset=utf-8", "not found\n"};
      },
      limits);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// GET /healthz on a fresh connection; nullopt when no whole answer comes within `timeout`.
std::optional<std::string> GetHealthz(int port, std::chrono::milliseconds timeout) {
  RawClient client(port);
  if (!client.connected() || !client.Send("GET /healthz?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\n")) {
    return std::nullopt;
  }
  return client.ReadToEnd(timeout);
}

TEST(HttpEndpoints, ASilentConnectionDoesNotDelayHealthz) {
  HttpLimits limits;
  limits.request_deadline = std::chrono::seconds(60);  // the silent client is never cut off here
  std::unique_ptr<HttpEndpoints> server = StartServer(limits);
  ASSERT_NE(server, nullptr);
  RawClient silent(server->port());
  ASSERT_TRUE(silent.connected());
  // Served one connection at a time, the probe would wait the whole deadline behind `silent`.
  const std::optional<std::string> answer = GetHealthz(server->port(), std::chrono::seconds(5));
  ASSERT_TRUE(answer.has_value()) << "/healthz was not answered while a client sent nothing";
  EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(*answer, HasSubstr("\r\n\r\nok\n"));
  EXPECT_FALSE(silent.Readable(std::chrono::milliseconds(0)));  // still open, still waiting
}

TEST(HttpEndpoints, AClientTricklingItsRequestIsCutOffAtTheDeadline) {
  HttpLimits limits;
  limits.request_deadline = std::chrono::milliseconds(300);
  std::unique_ptr<HttpEndpoints> server = StartServer(limits);
  ASSERT_NE(server, nullptr);
  RawClient slow(server->port());
  ASSERT_TRUE(slow.connected());
  ASSERT_TRUE(slow.Send("GET /healthz HTTP/1.1\r\n"));
  // A header byte every 100 ms never finishes the request; a timeout per read would never fire.
  bool closed = false;
  for (int i = 0; i < 300 && !closed; ++i) {
    if (slow.Readable(std::chrono::milliseconds(100))) {
      closed = slow.ReadToEnd(std::chrono::seconds(5)) == std::string();
      break;
    }
    if (!slow.Send("X")) closed = true;  // the server reset it
  }
  EXPECT_TRUE(closed) << "a request still unfinished after 30 s was not cut off";
  EXPECT_TRUE(GetHealthz(server->port(), std::chrono::seconds(5)).has_value());
}

// A client that keeps more silent connections open than the server serves at once must not shut
// the kubelet's probes out: a refused liveness probe restarts the controller.
TEST(HttpEndpoints, ProbesAreAnsweredWhileMoreSilentConnectionsThanTheLimitAreOpen) {
  HttpLimits limits;
  limits.request_deadline = std::chrono::seconds(60);  // no silent client is cut off by it here
  std::unique_ptr<HttpEndpoints> server = StartServer(limits);
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < limits.max_connections + 6; ++i) {
    silent.push_back(std::make_unique<RawClient>(server->port()));
    ASSERT_TRUE(silent.back()->connected());
  }
  for (int probe = 0; probe < 3; ++probe) {
    const std::optional<std::string> answer = GetHealthz(server->port(), std::chrono::seconds(3));
    ASSERT_TRUE(answer.has_value()) << "probe " << probe << " was not answered in time";
    EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200 OK")) << "probe " << probe;
  }
}

TEST(HttpEndpoints, AtTheLimitANewConnectionClosesTheOldest) {
  HttpLimits limits;
  limits.request_deadline = std::chrono::seconds(60);
  limits.max_connections = 2;
  std::unique_ptr<HttpEndpoints> server = StartServer(limits);
  ASSERT_NE(server, nullptr);
  RawClient oldest(server->port());
  ASSERT_TRUE(oldest.connected());
  ASSERT_EQ(oldest.ReadToEnd(std::chrono::milliseconds(100)), std::nullopt);  // accepted, waiting
  RawClient newer(server->port());
  ASSERT_TRUE(newer.connected());
  const std::optional<std::string> answer = GetHealthz(server->port(), std::chrono::seconds(3));
  ASSERT_TRUE(answer.has_value());
  EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_EQ(oldest.ReadToEnd(std::chrono::seconds(3)), std::string());  // closed, unanswered
  // The newer one keeps its connection, and is answered when it asks.
  ASSERT_TRUE(newer.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(newer.ReadToEnd(std::chrono::seconds(3)).value_or(""), StartsWith("HTTP/1.1 200 OK"));
}

TEST(HttpEndpoints, AnswersOnlyGetAndHeadAndStopsIdempotently) {
  std::unique_ptr<HttpEndpoints> server = StartServer(HttpLimits());
  ASSERT_NE(server, nullptr);
  RawClient post(server->port());
  ASSERT_TRUE(post.Send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_THAT(post.ReadToEnd(std::chrono::seconds(5)).value_or(""),
              StartsWith("HTTP/1.1 405 Method Not Allowed"));
  RawClient head(server->port());
  ASSERT_TRUE(head.Send("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string answer = head.ReadToEnd(std::chrono::seconds(5)).value_or("");
  EXPECT_THAT(answer, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(answer, ::testing::EndsWith("\r\n\r\n"));
  RawClient silent(server->port());  // open while stopping
  server->Stop();
  server->Stop();
}

TEST(HttpEndpoints, RejectsLimitsThatAreNotPositive) {
  HttpLimits limits;
  limits.max_connections = 0;
  EXPECT_THAT(HttpEndpoints::Start(
                  "127.0.0.1", 0, [](std::string_view) { return HttpAnswer{}; }, limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_connections")));
}

}  // namespace
}  // namespace wavepool::controller::internal
