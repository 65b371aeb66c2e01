// The cpprest transport against a raw loopback HTTP server: what goes on the wire, token
// rotation, streamed bodies, cancellation and failures without an answer.
#include "wavepool/kube/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/raw_http_server.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/client.h"

namespace wavepool::kube {
namespace {

using ::testing::HasSubstr;
using ::wavepool::kube::testing::RawConnection;
using ::wavepool::kube::testing::RawHttpServer;
using ::wavepool::kube::testing::RawRequest;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

std::unique_ptr<Transport> TransportTo(const ClientConfig& config) {
  absl::StatusOr<std::unique_ptr<Transport>> transport = NewHttpTransport(config);
  EXPECT_TRUE(transport.ok()) << transport.status();
  return transport.ok() ? std::move(*transport) : nullptr;
}

ClientConfig ConfigFor(const RawHttpServer& server) {
  ClientConfig config;
  config.server = server.url();
  config.user_agent = "wavepool-test/1";
  return config;
}

TEST(HttpTransport, SendsMethodTargetHeadersAndBody) {
  RawHttpServer server([](const RawRequest&, RawConnection& connection) {
    connection.Answer(201, R"({"kind":"ConfigMap"})", "application/json");
  });
  ClientConfig config = ConfigFor(server);
  config.bearer_token = "t0k3n";
  std::unique_ptr<Transport> transport = TransportTo(config);
  ASSERT_NE(transport, nullptr);
  HttpRequest request;
  request.method = "PATCH";
  request.target = "/api/v1/namespaces/a/configmaps/b?fieldManager=x%2Fy";
  request.content_type = "application/merge-patch+json";
  request.body = R"({"data":{"k":"v"}})";
  ASSERT_OK_AND_ASSIGN(HttpResponse response, transport->Send(request));
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(response.body, R"({"kind":"ConfigMap"})");
  EXPECT_EQ(response.content_type, "application/json");
  ASSERT_EQ(server.requests().size(), 1u);
  const RawRequest seen = server.requests()[0];
  EXPECT_EQ(seen.method, "PATCH");
  EXPECT_EQ(seen.target, "/api/v1/namespaces/a/configmaps/b?fieldManager=x%2Fy");
  EXPECT_EQ(seen.headers.at("content-type"), "application/merge-patch+json");
  EXPECT_EQ(seen.headers.at("accept"), "application/json");
  EXPECT_EQ(seen.headers.at("user-agent"), "wavepool-test/1");
  EXPECT_EQ(seen.headers.at("authorization"), "Bearer t0k3n");
  EXPECT_EQ(seen.body, R"({"data":{"k":"v"}})");
}

TEST(HttpTransport, ATokenSentOverPlainHttpIsWarnedOfOncePerClient) {
  RawHttpServer server(
      [](const RawRequest&, RawConnection& connection) { connection.Answer(200, "{}"); });
  std::vector<std::string> warnings;
  ClientConfig config = ConfigFor(server);
  config.log = [&warnings](std::string_view line) { warnings.emplace_back(line); };
  // No token, no warning.
  std::unique_ptr<Transport> anonymous = TransportTo(config);
  ASSERT_OK(anonymous->Send(HttpRequest{}));
  EXPECT_TRUE(warnings.empty());
  config.bearer_token = "t0k3n";
  config.source = "kubeconfig /tmp/plain";
  std::unique_ptr<Transport> transport = TransportTo(config);
  ASSERT_OK(transport->Send(HttpRequest{}));
  ASSERT_OK(transport->Send(HttpRequest{}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("bearer token over plain http"));
  EXPECT_THAT(warnings[0], HasSubstr(server.url()));
  EXPECT_THAT(warnings[0], HasSubstr("kubeconfig /tmp/plain"));
  EXPECT_THAT(warnings[0], ::testing::Not(HasSubstr("t0k3n")));
}

TEST(HttpTransport, AnyHttpStatusIsAnAnswer) {
  RawHttpServer server([](const RawRequest&, RawConnection& connection) {
    connection.Answer(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  });
  std::unique_ptr<Transport> transport = TransportTo(ConfigFor(server));
  ASSERT_OK_AND_ASSIGN(HttpResponse response, transport->Send(HttpRequest{}));
  EXPECT_EQ(response.status, 404);
  // No Authorization header when there is no token.
  EXPECT_EQ(server.requests()[0].headers.count("authorization"), 0u);
}

TEST(HttpTransport, RereadsTheTokenFileWhenItIsReplaced) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-kube"));
  const std::filesystem::path token = dir.File("token");
  ASSERT_OK(WriteFile(token.string(), "first-token\n"));
  RawHttpServer server(
      [](const RawRequest&, RawConnection& connection) { connection.Answer(200, "{}"); });
  ClientConfig config = ConfigFor(server);
  config.bearer_token = "ignored: the file wins";
  config.bearer_token_file = token.string();
  std::unique_ptr<Transport> transport = TransportTo(config);
  ASSERT_OK(transport->Send(HttpRequest{}));
  // Rotate as kubelet does: write a new file, then rename it over the old one.
  ASSERT_OK(WriteFile(dir.File("token.new"), "second-token"));
  std::filesystem::rename(dir.File("token.new"), token);
  ASSERT_OK(transport->Send(HttpRequest{}));
  // A missing file keeps the last token read.
  std::filesystem::remove(token);
  ASSERT_OK(transport->Send(HttpRequest{}));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer first-token");
  EXPECT_EQ(requests[1].headers.at("authorization"), "Bearer second-token");
  EXPECT_EQ(requests[2].headers.at("authorization"), "Bearer second-token");
}

TEST(HttpTransport, MissingTokenFileIsUnauthenticated) {
  RawHttpServer server(
      [](const RawRequest&, RawConnection& connection) { connection.Answer(200, "{}"); });
  ClientConfig config = ConfigFor(server);
  config.bearer_token_file = "/nonexistent/wavepool/token";
  std::unique_ptr<Transport> transport = TransportTo(config);
  EXPECT_THAT(transport->Send(HttpRequest{}), StatusIs(absl::StatusCode::kUnauthenticated,
                                                       HasSubstr("/nonexistent/wavepool/token")));
  EXPECT_TRUE(server.requests().empty());
}

// Chunked answer with lines split across chunks, then the last chunk.
void StreamThreeLines(const RawRequest&, RawConnection& connection) {
  const auto chunk = [&](const std::string& data) {
    char size[16];
    std::snprintf(size, sizeof(size), "%zx", data.size());
    connection.Write(std::string(size) + "\r\n" + data + "\r\n");
  };
  connection.Write(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n");
  chunk("{\"a\":1}\n{\"b\"");
  chunk(":2}\r\n\n");
  chunk("{\"c\":3}");
  connection.Write("0\r\n\r\n");
}

TEST(HttpTransport, StreamReadsLinesAcrossChunks) {
  RawHttpServer server(StreamThreeLines);
  std::unique_ptr<Transport> transport = TransportTo(ConfigFor(server));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineReader> reader, transport->Stream(HttpRequest{}));
  std::vector<std::string> lines;
  while (true) {
    ASSERT_OK_AND_ASSIGN(std::optional<std::string> line, reader->NextLine());
    if (!line) break;
    lines.push_back(*line);
  }
  EXPECT_THAT(lines, ::testing::ElementsAre("{\"a\":1}", "{\"b\":2}", "", "{\"c\":3}"));
}

TEST(HttpTransport, StreamMapsAnErrorStatus) {
  RawHttpServer server([](const RawRequest&, RawConnection& connection) {
    connection.Answer(410,
                      R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})");
  });
  std::unique_ptr<Transport> transport = TransportTo(ConfigFor(server));
  HttpRequest request;
  request.target = "/api/v1/pods?watch=1";
  const auto reader = transport->Stream(request);
  EXPECT_THAT(reader,
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("GET /api/v1/pods?watch=1")));
  EXPECT_TRUE(IsGone(reader.status()));
}

TEST(HttpTransport, CancelEndsABlockedRead) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  RawHttpServer server([released](const RawRequest&, RawConnection& connection) {
    connection.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"a\":1}\n\r\n");
    released.wait_for(std::chrono::seconds(30));  // hold the stream open, silent
  });
  std::unique_ptr<Transport> transport = TransportTo(ConfigFor(server));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineReader> reader, transport->Stream(HttpRequest{}));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> first, reader->NextLine());
  EXPECT_EQ(first, std::optional<std::string>("{\"a\":1}"));
  // Whether Cancel lands before or during the read, the read ends Cancelled.
  std::thread canceller([&reader] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    reader->Cancel();
  });
  EXPECT_THAT(reader->NextLine(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancel")));
  canceller.join();
  release.set_value();
}

TEST(HttpTransport, BrokenStreamIsUnavailable) {
  RawHttpServer server([](const RawRequest&, RawConnection& connection) {
    connection.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"a\":1}\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    connection.Close();  // no last chunk: the connection broke mid-stream
  });
  std::unique_ptr<Transport> transport = TransportTo(ConfigFor(server));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineReader> reader, transport->Stream(HttpRequest{}));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> first, reader->NextLine());
  EXPECT_TRUE(first.has_value());
  const auto next = reader->NextLine();
  EXPECT_THAT(next, StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
}

TEST(HttpTransport, RequestsSurviveKeptAliveConnectionsTheServerClosed) {
  // Every answer says keep-alive, then the server closes the connection (as a restarted API
  // server does): the next request finds a dead pooled connection and must still get through.
  RawHttpServer server([](const RawRequest&, RawConnection& connection) {
    connection.Answer(201, "{}");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    connection.Close();
  });
  std::unique_ptr<Transport> transport = TransportTo(ConfigFor(server));
  HttpRequest request;
  request.method = "POST";
  request.content_type = "application/json";
  request.body = std::string(64 * 1024, ' ') + "{}";
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(HttpResponse response, transport->Send(request));
    EXPECT_EQ(response.status, 201);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST(HttpTransport, RefusedConnectionIsUnavailable) {
  // A port that was free a moment ago: nothing listens there.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t size = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  std::unique_ptr<Transport> transport = TransportTo(config);
  EXPECT_THAT(transport->Send(HttpRequest{}),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  EXPECT_THAT(transport->Stream(HttpRequest{}),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
}

TEST(HttpTransport, SilentServerTimesOut) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  RawHttpServer server([released](const RawRequest&, RawConnection&) {
    released.wait_for(std::chrono::seconds(30));
  });
  std::unique_ptr<Transport> transport = TransportTo(ConfigFor(server));
  HttpRequest request;
  request.timeout = std::chrono::milliseconds(200);
  EXPECT_THAT(transport->Send(request),
              StatusIs(absl::StatusCode::kDeadlineExceeded, ::testing::_));
  release.set_value();
}

TEST(HttpTransport, RejectsBadServerUrlsAndPem) {
  ClientConfig config;
  config.server = "10.0.0.1:6443";
  EXPECT_THAT(NewHttpTransport(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("server")));
  config.server = "https://10.0.0.1:6443";
  config.certificate_authority_pem =
      "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n";
  EXPECT_THAT(NewHttpTransport(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("certificate_authority_pem")));
  config.certificate_authority_pem.clear();
  config.client_key_pem = "garbage";
  EXPECT_THAT(NewHttpTransport(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client_key_pem")));
}

TEST(HttpTransport, ClientConnectGetsAnObject) {
  RawHttpServer server([](const RawRequest& request, RawConnection& connection) {
    connection.Answer(200, R"({"kind":"Node","metadata":{"name":")" +
                               request.target.substr(request.target.rfind('/') + 1) + R"("}})");
  });
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(ConfigFor(server)));
  ASSERT_OK_AND_ASSIGN(nlohmann::json node, client->Get(kNodes, "", "gpu-7"));
  EXPECT_EQ(node["metadata"]["name"], "gpu-7");
}

}  // namespace
}  // namespace wavepool::kube
