// The HTTP layer alone: keep-alive, request decoding, chunked streams that end, break or are cut
// by a stop, and listening errors.
#include <atomic>
#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/http_test_client.h"
#include "tests/support/apiserver/http_server.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;

std::string UrlOf(const HttpServer& server) {
  return "http://127.0.0.1:" + std::to_string(server.port());
}

HttpResponse Echo(const HttpRequest& request) {
  nlohmann::json echo = {{"method", request.method},
                         {"path", request.path},
                         {"query", request.query},
                         {"accept", request.Header("accept")},
                         {"body", request.body}};
  return HttpResponse{200, "application/json", {{"X-Test", "1"}}, echo.dump()};
}

TEST(HttpTransport, KeepsTheConnectionAliveAndDecodesRequests) {
  ASSERT_OK_AND_ASSIGN(
      auto server,
      HttpServer::Start("127.0.0.1", 0, [](const HttpRequest& request, HttpResponder& responder) {
        responder.Send(Echo(request));
      }));
  ASSERT_GT(server->port(), 0);
  HttpTestClient client(UrlOf(*server));
  const ClientResponse first =
      client.Request("POST", "/api/v1/name%20x?labelSelector=a%3Db", "{\"k\":1}",
                     "application/json", {{"Accept", "application/json;as=Table"}});
  ASSERT_EQ(first.status, 200);
  const nlohmann::json echo = first.Json();
  EXPECT_EQ(echo["method"], "POST");
  EXPECT_EQ(echo["path"], "/api/v1/name x");
  EXPECT_EQ(echo["query"]["labelSelector"], "a=b");
  EXPECT_EQ(echo["accept"], "application/json;as=Table");
  EXPECT_EQ(echo["body"], "{\"k\":1}");
  EXPECT_EQ(first.Header("x-test"), "1");
  ASSERT_EQ(client.Get("/second").status, 200);
  EXPECT_EQ(client.requests_on_connection(), 2);  // both answers on one connection
}

TEST(HttpTransport, StreamsChunksToACompleteEnd) {
  ASSERT_OK_AND_ASSIGN(
      auto server,
      HttpServer::Start("127.0.0.1", 0, [](const HttpRequest&, HttpResponder& responder) {
        ASSERT_TRUE(responder.StartStream(HttpResponse{}));
        for (int i = 0; i < 3; ++i) {
          responder.WriteChunk("{\"n\":" + std::to_string(i) + "}\n");
        }
        responder.EndStream();
      }));
  WatchReader reader(UrlOf(*server), "/stream");
  EXPECT_EQ(reader.head().status, 200);
  EXPECT_EQ(reader.head().Header("transfer-encoding"), "chunked");
  for (int i = 0; i < 3; ++i) {
    const auto event = reader.Next();
    ASSERT_TRUE(event.has_value());
    EXPECT_EQ((*event)["n"], i);
  }
  EXPECT_FALSE(reader.Next().has_value());
  EXPECT_EQ(reader.end(), WatchReader::End::kComplete);
}

TEST(HttpTransport, AbortBreaksTheStreamWithoutItsEnd) {
  ASSERT_OK_AND_ASSIGN(
      auto server,
      HttpServer::Start("127.0.0.1", 0, [](const HttpRequest&, HttpResponder& responder) {
        ASSERT_TRUE(responder.StartStream(HttpResponse{}));
        responder.WriteChunk("{\"n\":0}\n");
        responder.Abort();
      }));
  WatchReader reader(UrlOf(*server), "/stream");
  ASSERT_TRUE(reader.Next().has_value());
  EXPECT_FALSE(reader.Next().has_value());
  EXPECT_EQ(reader.end(), WatchReader::End::kBroken);
}

// A handler that streams until it is cancelled, as a watch does.
HttpHandler StreamUntilCancelled(std::atomic<bool>& cancelled) {
  return [&cancelled](const HttpRequest&, HttpResponder& responder) {
    responder.StartStream(HttpResponse{});
    responder.WriteChunk("{\"n\":0}\n");
    while (!responder.Cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    cancelled = true;
  };
}

TEST(HttpTransport, StopClosesOpenStreams) {
  std::atomic<bool> cancelled{false};
  ASSERT_OK_AND_ASSIGN(auto server,
                       HttpServer::Start("127.0.0.1", 0, StreamUntilCancelled(cancelled)));
  WatchReader reader(UrlOf(*server), "/stream");
  ASSERT_TRUE(reader.Next().has_value());
  server->Stop();  // returns only once the handler has
  EXPECT_TRUE(cancelled);
  EXPECT_FALSE(reader.Next().has_value());
  EXPECT_EQ(reader.end(), WatchReader::End::kBroken);
}

TEST(HttpTransport, NoticesAClientThatHungUp) {
  std::atomic<bool> cancelled{false};
  ASSERT_OK_AND_ASSIGN(auto server,
                       HttpServer::Start("127.0.0.1", 0, StreamUntilCancelled(cancelled)));
  {
    WatchReader reader(UrlOf(*server), "/stream");
    ASSERT_TRUE(reader.Next().has_value());
  }
  EXPECT_TRUE(Eventually([&] { return cancelled.load(); }, std::chrono::seconds(30),
                         std::chrono::milliseconds(50)));
}

TEST(HttpTransport, RejectsBadAddressesAndTakenPorts) {
  const HttpHandler ignore = [](const HttpRequest&, HttpResponder& responder) {
    responder.Send(HttpResponse{});
  };
  EXPECT_THAT(HttpServer::Start("not-an-ip", 0, ignore),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not-an-ip")));
  EXPECT_THAT(HttpServer::Start("127.0.0.1", 70000, ignore),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("port")));
  ASSERT_OK_AND_ASSIGN(auto first, HttpServer::Start("127.0.0.1", 0, ignore));
  EXPECT_THAT(HttpServer::Start("127.0.0.1", first->port(), ignore),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("listen")));
}

TEST(HttpTransport, ServesAgainOnTheSamePortAfterStop) {
  const HttpHandler ok = [](const HttpRequest& request, HttpResponder& responder) {
    responder.Send(Echo(request));
  };
  ASSERT_OK_AND_ASSIGN(auto first, HttpServer::Start("127.0.0.1", 0, ok));
  const int port = first->port();
  HttpTestClient client(UrlOf(*first));
  ASSERT_EQ(client.Get("/a").status, 200);  // leaves a kept-alive connection open
  first->Stop();
  ASSERT_OK_AND_ASSIGN(auto second, HttpServer::Start("127.0.0.1", port, ok));
  EXPECT_EQ(client.Get("/b").status, 200);  // the client reconnects
}

}  // namespace
}  // namespace wavepool::testing::apiserver
