// The controller's HTTP endpoints: GET and HEAD reach the handler with the path, other methods get
// 405, and HttpLimits set the server's deadline and connection limit. How the server holds up
// against silent, trickling and numerous clients is net::ShortRequestServer's, tested in
// tests/base/short_request_server_test.cpp.
#include "http/http_endpoints.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/raw_tcp_client.h"
#include "tests/support/status_matchers.h"

namespace wavepool::controller::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::RawTcpClient;
using ::wavepool::testing::StatusIs;

std::unique_ptr<net::ShortRequestServer> StartServer(HttpLimits limits) {
  absl::StatusOr<std::unique_ptr<net::ShortRequestServer>> server = StartHttpEndpoints(
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
  RawTcpClient client(port);
  if (!client.connected() || !client.Send("GET /healthz?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\n")) {
    return std::nullopt;
  }
  return client.ReadToEnd(timeout);
}

TEST(HttpEndpoints, HttpLimitsSetTheConnectionLimitAndTheDeadline) {
  HttpLimits limited;
  limited.request_deadline = std::chrono::seconds(60);  // no silent client is cut off by it here
  limited.max_connections = 1;                          // the default, 64, would keep `oldest` open
  std::unique_ptr<net::ShortRequestServer> server = StartServer(limited);
  ASSERT_NE(server, nullptr);
  RawTcpClient oldest(server->port());
  ASSERT_TRUE(oldest.connected());
  ASSERT_EQ(oldest.ReadToEnd(std::chrono::milliseconds(100)), std::nullopt);  // accepted, waiting
  const std::optional<std::string> answer = GetHealthz(server->port(), std::chrono::seconds(3));
  ASSERT_TRUE(answer.has_value());
  EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(*answer, HasSubstr("\r\n\r\nok\n"));
  EXPECT_EQ(oldest.ReadToEnd(std::chrono::seconds(3)), std::string());  // closed, unanswered

  HttpLimits hurried;
  // The default deadline, 5 s, would outlast the wait below.
  hurried.request_deadline = std::chrono::milliseconds(200);
  server = StartServer(hurried);
  ASSERT_NE(server, nullptr);
  RawTcpClient silent(server->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_EQ(silent.ReadToEnd(std::chrono::seconds(2)), std::string());
}

TEST(HttpEndpoints, AnswersOnlyGetAndHeadAndStopsIdempotently) {
  std::unique_ptr<net::ShortRequestServer> server = StartServer(HttpLimits());
  ASSERT_NE(server, nullptr);
  RawTcpClient post(server->port());
  ASSERT_TRUE(post.Send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_THAT(post.ReadToEnd(std::chrono::seconds(5)).value_or(""),
              StartsWith("HTTP/1.1 405 Method Not Allowed"));
  RawTcpClient head(server->port());
  ASSERT_TRUE(head.Send("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string answer = head.ReadToEnd(std::chrono::seconds(5)).value_or("");
  EXPECT_THAT(answer, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(answer, ::testing::EndsWith("\r\n\r\n"));
  RawTcpClient silent(server->port());  // open while stopping
  server->Stop();
  server->Stop();
}

// The server checks the limits; its messages name the controller's server "http".
TEST(HttpEndpoints, RejectsLimitsThatAreNotPositive) {
  HttpLimits limits;
  limits.max_connections = 0;
  EXPECT_THAT(StartHttpEndpoints(
                  "127.0.0.1", 0, [](std::string_view) { return HttpAnswer{}; }, limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("http limits: request_deadline must be > 0 ms and "
                                 "max_connections >= 1, got 5000 ms and 0")));
}

}  // namespace
}  // namespace wavepool::controller::internal
