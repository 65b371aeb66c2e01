#include "tests/support/apiserver/http_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/buffer.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/string.hpp"
#include "boost/beast/http.hpp"
#include "wavepool/net/tcp_listen.h"

namespace wavepool::testing::apiserver {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Request bodies up to this size (a CRD with a large schema is a few hundred KiB).
constexpr std::uint64_t kMaxBodyBytes = 64ull << 20;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

HttpRequest ToHttpRequest(const http::request<http::string_body>& message) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  const std::string_view target = request.target;
  const std::size_t question = target.find('?');
  request.path = UrlDecode(target.substr(0, question), /*plus_is_space=*/false);
  if (question != std::string_view::npos) {
    request.query = ParseQueryString(target.substr(question + 1));
  }
  for (const auto& field : message) {
    std::string name = absl::AsciiStrToLower(std::string(field.name_string()));
    std::string& value = request.headers[name];
    value = value.empty() ? std::string(field.value())
                          : absl::StrCat(value, ",", std::string(field.value()));
  }
  request.body = message.body();
  return request;
}

// One connection: reads requests, lets the handler answer, until the client or the server
// closes it. Writes happen only on the connection's own thread; Stop() from another thread
// only shuts the socket down, which wakes any blocked read or write.
class Connection final : public HttpResponder {
 public:
  Connection(tcp::socket socket, const HttpHandler& handler, const std::atomic<bool>& stopping)
      : socket_(std::move(socket)), handler_(handler), stopping_(stopping) {}

  void Serve() {
    boost::beast::flat_buffer buffer;
    while (!stopping_.load() && !broken_) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kMaxBodyBytes);
      boost::beast::error_code error;
      http::read_header(socket_, buffer, parser, error);
      if (error) break;
      // curl sends large bodies only after "100 Continue" (or a second's wait without one).
      if (boost::beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        http::response<http::empty_body> proceed{http::status::continue_, 11};
        http::write(socket_, proceed, error);
        if (error) break;
      }
      http::read(socket_, buffer, parser, error);
      if (error) break;
      const auto& message = parser.get();
      keep_alive_ = message.keep_alive();
      version_ = message.version();
      answered_ = false;
      handler_(ToHttpRequest(message), *this);
      if (!answered_) Send(HttpResponse{500, "text/plain", {}, "no answer\n"});
      if (!keep_alive_) break;
    }
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
  }

  // Called once the server no longer shuts this descriptor down from Stop(), so that Stop()
  // never reaches a descriptor number the system has handed out again.
  void Close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

  int native_handle() { return socket_.native_handle(); }

  void Send(const HttpResponse& response) override {
    answered_ = true;
    http::response<http::string_body> message{static_cast<http::status>(response.status), version_};
    FillHead(response, message);
    message.body() = response.body;
    message.prepare_payload();
    boost::beast::error_code error;
    http::write(socket_, message, error);
    if (error) broken_ = true;
  }

  bool StartStream(const HttpResponse& head) override {
    answered_ = true;
    http::response<http::empty_body> message{static_cast<http::status>(head.status), version_};
    FillHead(head, message);
    message.chunked(true);
    http::response_serializer<http::empty_body> serializer{message};
    boost::beast::error_code error;
    http::write_header(socket_, serializer, error);
    if (error) broken_ = true;
    return !broken_;
  }

  bool WriteChunk(std::string_view data) override {
    if (broken_) return false;
    boost::system::error_code error;
    asio::write(socket_, http::make_chunk(asio::const_buffer(data.data(), data.size())), error);
    if (error) broken_ = true;
    return !broken_;
  }

  void EndStream() override {
    if (broken_) return;
    boost::system::error_code error;
    asio::write(socket_, http::make_chunk_last(), error);
    if (error) broken_ = true;
  }

  void Abort() override {
    broken_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
  }

  bool Cancelled() override {
    if (stopping_.load() || broken_) return true;
    // A client that closed its side shows as readable with POLLRDHUP (or an error).
    pollfd descriptor{socket_.native_handle(), POLLRDHUP, 0};
    if (::poll(&descriptor, 1, 0) > 0 &&
        (descriptor.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      return true;
    }
    return false;
  }

 private:
  template <typename Message>
  void FillHead(const HttpResponse& response, Message& message) {
    message.set(http::field::content_type, response.content_type);
    // The real server sends these on every answer; clients do not depend on them.
    message.set(http::field::cache_control, "no-cache, private");
    for (const auto& [name, value] : response.headers) message.insert(name, value);
    message.keep_alive(keep_alive_ && !stopping_.load());
  }

  tcp::socket socket_;
  const HttpHandler& handler_;
  const std::atomic<bool>& stopping_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool answered_ = false;
  bool broken_ = false;
};

class BeastHttpServer final : public HttpServer {
 public:
  explicit BeastHttpServer(HttpHandler handler) : handler_(std::move(handler)), acceptor_(io_) {}
  ~BeastHttpServer() override { Stop(); }

  absl::Status Listen(const std::string& address, int port) {
    absl::StatusOr<int> bound = net::ListenTcp(acceptor_, "test API server", address, port);
    if (!bound.ok()) return bound.status();
    port_ = *bound;
    accept_thread_ = std::thread([this] { AcceptLoop(); });
    return absl::OkStatus();
  }

  int port() const override { return port_; }

  void Stop() override {
    absl::MutexLock stop_lock(&stop_mu_);
    if (stopping_.exchange(true)) return;
    // shutdown() wakes a thread blocked in accept() or read() on Linux; each thread then closes
    // its own descriptor, so no descriptor is closed while another thread still uses it.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    if (accept_thread_.joinable()) accept_thread_.join();
    std::vector<std::thread*> threads;
    {
      absl::MutexLock lock(&mu_);
      for (auto& [id, entry] : connections_) {
        if (!entry.done) ::shutdown(entry.connection->native_handle(), SHUT_RDWR);
        threads.push_back(&entry.thread);
      }
    }
    // Joined without mu_, which each thread takes to mark itself done; with the accept thread
    // gone, no entry is added or removed meanwhile.
    for (std::thread* thread : threads) thread->join();
    {
      absl::MutexLock lock(&mu_);
      connections_.clear();
    }
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  }

 private:
  struct Entry {
    std::unique_ptr<Connection> connection;
    std::thread thread;
    bool done = false;  // guarded by mu_
  };

  void AcceptLoop() {
    while (!stopping_.load()) {
      tcp::socket socket(io_);
      boost::system::error_code error;
      acceptor_.accept(socket, error);
      if (stopping_.load()) break;
      if (error) continue;
      socket.set_option(tcp::no_delay(true), error);
      absl::MutexLock lock(&mu_);
      ReapFinishedLocked();
      const std::uint64_t id = next_id_++;
      Entry& entry = connections_[id];
      entry.connection = std::make_unique<Connection>(std::move(socket), handler_, stopping_);
      entry.thread = std::thread([this, id, connection = entry.connection.get()] {
        connection->Serve();
        {
          absl::MutexLock done_lock(&mu_);
          connections_.find(id)->second.done = true;
        }
        connection->Close();
      });
    }
  }

  // Joins the threads of closed connections (they have finished or are about to).
  void ReapFinishedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->second.done) {
        it->second.thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const HttpHandler handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  std::map<std::uint64_t, Entry> connections_ ABSL_GUARDED_BY(mu_);
  std::uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::string HttpRequest::Query(const std::string& name) const {
  const auto it = query.find(name);
  return it == query.end() ? std::string() : it->second;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address, int port,
                                                              HttpHandler handler) {
  auto server = std::make_unique<BeastHttpServer>(std::move(handler));
  if (absl::Status status = server->Listen(address, port); !status.ok()) return status;
  return server;
}

std::string UrlDecode(std::string_view text, bool plus_is_space) {
  std::string decoded;
  decoded.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int high = HexValue(text[i + 1]);
      const int low = HexValue(text[i + 2]);
      if (high >= 0 && low >= 0) {
        decoded.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    decoded.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return decoded;
}

std::map<std::string, std::string> ParseQueryString(std::string_view query) {
  std::map<std::string, std::string> parameters;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    std::string key = UrlDecode(pair.substr(0, eq), /*plus_is_space=*/true);
    std::string value = eq == std::string_view::npos
                            ? std::string()
                            : UrlDecode(pair.substr(eq + 1), /*plus_is_space=*/true);
    parameters[std::move(key)] = std::move(value);
  }
  return parameters;
}

}  // namespace wavepool::testing::apiserver
