// ShortRequestServer against raw sockets, as a hostile pod on the cluster network can use it:
// slow and silent clients hold only their own connection, every connection has a deadline, the
// number of connections is bounded by closing the oldest, never by turning a probe away, and bad
// settings or addresses are refused naming the server.
#include "wavepool/net/short_request_server.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/raw_tcp_client.h"
#include "tests/support/status_matchers.h"

namespace wavepool::net {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Optional;
using ::testing::StartsWith;
using ::wavepool::testing::RawTcpClient;
using ::wavepool::testing::StatusIs;
using namespace std::chrono_literals;

// Answers with what it was asked ("GET /echo\n"), and /missing with 404.
ShortAnswer Echo(const ShortRequest& request) {
  if (request.path == "/missing") return {404, "text/plain; charset=utf-8", "not found\n"};
  return {200, "text/x-echo", std::string(request.method) + " " + std::string(request.path) + "\n"};
}

ShortRequestSettings Settings(std::chrono::milliseconds deadline, int max_connections = 64) {
  ShortRequestSettings settings;
  settings.name = "probe";
  settings.request_deadline = deadline;
  settings.max_connections = max_connections;
  return settings;
}

std::unique_ptr<ShortRequestServer> StartServer(ShortRequestSettings settings) {
  absl::StatusOr<std::unique_ptr<ShortRequestServer>> server =
      ShortRequestServer::Start("127.0.0.1", 0, std::move(settings), Echo);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// `request` on a fresh connection; nullopt when no whole answer comes within `timeout`.
std::optional<std::string> Ask(int port, std::string_view request,
                               std::chrono::milliseconds timeout = 5s) {
  RawTcpClient client(port);
  if (!client.connected() || !client.Send(request)) return std::nullopt;
  return client.ReadToEnd(timeout);
}

std::optional<std::string> GetEcho(int port, std::chrono::milliseconds timeout = 5s) {
  return Ask(port, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", timeout);
}

TEST(ShortRequestServer, AnswersWithTheHandlersAnswerAndCloses) {
  std::unique_ptr<ShortRequestServer> server = StartServer(Settings(5s));
  ASSERT_NE(server, nullptr);
  // The handler sees the path without its query string, and any method; HEAD's answer is GET's
  // without the body.
  EXPECT_THAT(
      Ask(server->port(), "GET /echo?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\n"),
      Optional(AllOf(StartsWith("HTTP/1.1 200 OK\r\n"), HasSubstr("Content-Type: text/x-echo"),
                     HasSubstr("Cache-Control: no-cache"), HasSubstr("Connection: close"),
                     EndsWith("\r\n\r\nGET /echo\n"))));
  EXPECT_THAT(Ask(server->port(), "BREW /pot HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
              Optional(EndsWith("\r\n\r\nBREW /pot\n")));
  EXPECT_THAT(Ask(server->port(), "GET /missing HTTP/1.0\r\n\r\n"),
              Optional(AllOf(StartsWith("HTTP/1.0 404 Not Found\r\n"), EndsWith("not found\n"))));
  // RFC 9110 §9.3.2: HEAD gets GET's header, Content-Length included, and no body.
  EXPECT_THAT(
      Ask(server->port(), "HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n"),
      Optional(AllOf(StartsWith("HTTP/1.1 200 OK\r\n"), HasSubstr("Content-Type: text/x-echo"),
                     HasSubstr("Content-Length: 11\r\n"), EndsWith("\r\n\r\n"))));
}

TEST(ShortRequestServer, ASilentConnectionDoesNotDelayAnother) {
  std::unique_ptr<ShortRequestServer> server = StartServer(Settings(60s));  // never cut off here
  ASSERT_NE(server, nullptr);
  RawTcpClient silent(server->port());
  ASSERT_TRUE(silent.connected());
  // Served one connection at a time, the request would wait the whole deadline behind `silent`.
  const std::optional<std::string> answer = GetEcho(server->port());
  ASSERT_TRUE(answer.has_value()) << "no answer while another client sent nothing";
  EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_FALSE(silent.Readable(0ms));  // still open, still waiting
}

TEST(ShortRequestServer, ASilentClientIsClosedUnansweredAtTheDeadline) {
  std::unique_ptr<ShortRequestServer> server = StartServer(Settings(200ms));
  ASSERT_NE(server, nullptr);
  RawTcpClient silent(server->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_THAT(silent.ReadToEnd(3s), Optional(std::string()));
}

TEST(ShortRequestServer, AClientTricklingItsRequestIsCutOffAtTheDeadline) {
  std::unique_ptr<ShortRequestServer> server = StartServer(Settings(300ms));
  ASSERT_NE(server, nullptr);
  RawTcpClient slow(server->port());
  ASSERT_TRUE(slow.connected());
  ASSERT_TRUE(slow.Send("GET /echo HTTP/1.1\r\n"));
  // A header byte every 100 ms never finishes the request; a timeout per read would never fire.
  bool closed = false;
  for (int i = 0; i < 300 && !closed; ++i) {
    if (slow.Readable(100ms)) {
      closed = slow.ReadToEnd(5s) == std::string();
      break;
    }
    if (!slow.Send("X")) closed = true;  // the server reset it
  }
  EXPECT_TRUE(closed) << "a request still unfinished after 30 s was not cut off";
  EXPECT_TRUE(GetEcho(server->port()).has_value());
}

// A client that keeps more silent connections open than the server serves at once must not shut
// the probes out: a refused liveness probe restarts the process.
TEST(ShortRequestServer, AnswersWhileMoreSilentConnectionsThanTheLimitAreOpen) {
  const ShortRequestSettings settings = Settings(60s, 8);  // no silent client is cut off by it
  std::unique_ptr<ShortRequestServer> server = StartServer(settings);
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawTcpClient>> silent;
  for (int i = 0; i < settings.max_connections + 6; ++i) {
    silent.push_back(std::make_unique<RawTcpClient>(server->port()));
    ASSERT_TRUE(silent.back()->connected());
  }
  for (int probe = 0; probe < 3; ++probe) {
    const std::optional<std::string> answer = GetEcho(server->port(), 3s);
    ASSERT_TRUE(answer.has_value()) << "probe " << probe << " was not answered in time";
    EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200 OK")) << "probe " << probe;
  }
}

TEST(ShortRequestServer, AtTheLimitANewConnectionClosesTheOldest) {
  std::unique_ptr<ShortRequestServer> server = StartServer(Settings(60s, 2));
  ASSERT_NE(server, nullptr);
  RawTcpClient oldest(server->port());
  ASSERT_TRUE(oldest.connected());
  ASSERT_EQ(oldest.ReadToEnd(100ms), std::nullopt);  // accepted, waiting
  RawTcpClient newer(server->port());
  ASSERT_TRUE(newer.connected());
  EXPECT_THAT(GetEcho(server->port(), 3s), Optional(StartsWith("HTTP/1.1 200 OK")));
  EXPECT_EQ(oldest.ReadToEnd(3s), std::string());  // closed, unanswered
  // The newer one keeps its connection, and is answered when it asks.
  ASSERT_TRUE(newer.Send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(newer.ReadToEnd(3s), Optional(StartsWith("HTTP/1.1 200 OK")));
}

TEST(ShortRequestServer, ARequestWithABodyOverTheLimitIsClosedUnanswered) {
  ShortRequestSettings settings = Settings(5s);
  settings.max_body_bytes = 16;
  std::unique_ptr<ShortRequestServer> server = StartServer(settings);
  ASSERT_NE(server, nullptr);
  const std::string at_limit(16, 'x');
  EXPECT_THAT(Ask(server->port(),
                  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\n" + at_limit),
              Optional(StartsWith("HTTP/1.1 200 OK")));
  EXPECT_THAT(Ask(server->port(),
                  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n" + at_limit + "x"),
              Optional(std::string()));
}

// The process's CPU time (every thread's), user and system.
std::chrono::microseconds ProcessCpuTime() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto us = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return us(usage.ru_utime) + us(usage.ru_stime);
}

// Out of descriptors, a connection waits in the backlog that the server cannot accept: it must
// wait for a descriptor to free, not spin on the ready listener, and then answer.
TEST(ShortRequestServer, OutOfDescriptorsItRestsInsteadOfSpinningThenAnswers) {
  std::unique_ptr<ShortRequestServer> server = StartServer(Settings(5s));
  ASSERT_NE(server, nullptr);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Every descriptor a lowered limit allows is taken, but one for the client.
  rlimit lowered = saved;
  lowered.rlim_cur = std::min<rlim_t>(saved.rlim_cur, 256);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  std::vector<int> filler;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
  ASSERT_FALSE(filler.empty());
  ::close(filler.back());
  filler.pop_back();
  RawTcpClient client(server->port());  // the kernel completes it; the server cannot accept it
  const bool sent = client.connected() && client.Send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::chrono::microseconds before = ProcessCpuTime();
  std::this_thread::sleep_for(500ms);
  const std::chrono::microseconds spent = ProcessCpuTime() - before;
  for (int fd : filler) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(sent);
  EXPECT_LT(spent.count(), 100'000)
      << "microseconds of CPU in 500 ms: the server spun on a connection it could not accept";
  EXPECT_THAT(client.ReadToEnd(5s), Optional(EndsWith("\r\n\r\nGET /echo\n")));
}

TEST(ShortRequestServer, StopClosesOpenConnectionsAndIsIdempotent) {
  std::unique_ptr<ShortRequestServer> server = StartServer(Settings(60s));
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  RawTcpClient open(port);
  ASSERT_TRUE(open.connected());
  ASSERT_EQ(open.ReadToEnd(100ms), std::nullopt);  // accepted, waiting
  server->Stop();
  EXPECT_EQ(open.ReadToEnd(3s), std::string());
  server->Stop();
  EXPECT_EQ(server->port(), port);
  EXPECT_FALSE(RawTcpClient(port).connected());  // no longer listening
}

TEST(ShortRequestServer, RefusesLimitsThatAreNotPositiveNamingTheServer) {
  for (const auto& [deadline, max_connections] :
       {std::pair{0ms, 1}, std::pair{-1ms, 1}, std::pair{1ms, 0}, std::pair{1ms, -3}}) {
    EXPECT_THAT(
        ShortRequestServer::Start("127.0.0.1", 0, Settings(deadline, max_connections), Echo),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("probe limits: request_deadline must be > 0 ms and "
                                 "max_connections >= 1"),
                       HasSubstr("got " + std::to_string(deadline.count()) + " ms and " +
                                 std::to_string(max_connections)))))
        << deadline.count() << " ms, " << max_connections;
  }
}

TEST(ShortRequestServer, RefusesABadAddressOrPortAndATakenPortNamingTheServer) {
  EXPECT_THAT(ShortRequestServer::Start("localhost", 0, Settings(5s), Echo),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("probe address"), HasSubstr("\"localhost\""))));
  EXPECT_THAT(ShortRequestServer::Start("127.0.0.1", 65536, Settings(5s), Echo),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("probe port")));
  std::unique_ptr<ShortRequestServer> first = StartServer(Settings(5s));
  ASSERT_NE(first, nullptr);
  EXPECT_THAT(
      ShortRequestServer::Start("127.0.0.1", first->port(), Settings(5s), Echo),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("probe: cannot listen on 127.0.0.1:")));
  EXPECT_THAT(GetEcho(first->port()), Optional(StartsWith("HTTP/1.1 200 OK")));  // unharmed
}

}  // namespace
}  // namespace wavepool::net
