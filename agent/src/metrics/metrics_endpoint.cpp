#include "metrics/metrics_endpoint.h"

#include <list>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http.hpp"
#include "wavepool/net/tcp_listen.h"

namespace wavepool::agent::internal {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Scrapes and probes send no body; anything larger is not one of them.
constexpr std::uint64_t kMaxBodyBytes = 4 * 1024;
constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

struct Answer {
  http::status status = http::status::ok;
  const char* content_type = kExpositionType;
  std::string body;
};

Answer AnswerFor(const MetricsEndpoint::Render& render,
                 const http::request<http::string_body>& request) {
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    return {http::status::method_not_allowed, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  const std::string_view target(request.target().data(), request.target().size());
  if (target.substr(0, target.find('?')) != "/metrics") {
    return {http::status::not_found, "text/plain; charset=utf-8", "not found: try /metrics\n"};
  }
  return {http::status::ok, kExpositionType, render()};
}

class Connection;
// The open connections, oldest first. Touched only by the endpoint's thread.
using OpenConnections = std::list<std::shared_ptr<Connection>>;

// One connection: one request read and answered within the deadline, then closed. Kept alive by
// the list of open connections and by the asynchronous operation in flight on it.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const MetricsEndpoint::Render* render, OpenConnections* open)
      : stream_(std::move(socket)), render_(render), open_(open) {
    parser_.body_limit(kMaxBodyBytes);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // REQUIRES: `position` is this connection's entry in the list of open connections.
  void Start(OpenConnections::iterator position, std::chrono::milliseconds deadline) {
    position_ = position;
    // The deadline covers reading the request and writing the answer: a client that sends
    // nothing, trickles bytes or does not read loses its connection when it passes.
    stream_.expires_after(deadline);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](boost::beast::error_code error, std::size_t) {
                       self->OnRead(error);
                     });
  }

  // Closes the socket (the operation in flight then ends with an error) and leaves the list of
  // open connections. Idempotent.
  void Close() {
    if (closed_) return;
    closed_ = true;
    const std::shared_ptr<Connection> self = shared_from_this();  // erase drops a reference
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    open_->erase(position_);
  }

 private:
  void OnRead(boost::beast::error_code error) {
    if (error || closed_) return Close();
    const auto& request = parser_.get();
    Answer answer = AnswerFor(*render_, request);
    response_ = http::response<http::string_body>{answer.status, request.version()};
    response_.set(http::field::content_type, answer.content_type);
    response_.set(http::field::cache_control, "no-cache");
    response_.keep_alive(false);
    const bool head = request.method() == http::verb::head;
    const std::size_t length = answer.body.size();
    response_.body() = head ? std::string() : std::move(answer.body);
    response_.prepare_payload();
    if (head) response_.content_length(length);
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](boost::beast::error_code, std::size_t) { self->Close(); });
  }

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
  const MetricsEndpoint::Render* const render_;
  OpenConnections* const open_;
  OpenConnections::iterator position_;
  bool closed_ = false;
};

class BeastMetricsEndpoint final : public MetricsEndpoint {
 public:
  BeastMetricsEndpoint(Render render, MetricsEndpointLimits limits)
      : render_(std::move(render)), limits_(limits) {}
  ~BeastMetricsEndpoint() override { Stop(); }

  absl::Status Listen(const std::string& address, int port) {
    absl::StatusOr<int> bound = net::ListenTcp(acceptor_, "metrics", address, port);
    if (!bound.ok()) return bound.status();
    port_ = *bound;
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return absl::OkStatus();
  }

  int port() const override { return port_; }

  void Stop() override {
    absl::MutexLock lock(&stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    io_.stop();
    if (thread_.joinable()) thread_.join();
    // The thread is gone: nothing else touches the acceptor or the connections.
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    while (!open_.empty()) open_.front()->Close();
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error == asio::error::operation_aborted) return;
      if (!error) Admit(std::move(socket));
      Accept();
    });
  }

  void Admit(tcp::socket socket) {
    // At the limit the oldest connection goes: it has had the longest to send its request, and
    // refusing the new one instead would let a few silent clients shut every scrape out.
    if (static_cast<int>(open_.size()) >= limits_.max_connections) open_.front()->Close();
    auto connection = std::make_shared<Connection>(std::move(socket), &render_, &open_);
    open_.push_back(connection);
    connection->Start(std::prev(open_.end()), limits_.request_deadline);
  }

  // Destroyed in reverse order: open_ (Stop closed them all), acceptor_, then io_ (and the
  // Connections its pending handlers still hold), then render_.
  const Render render_;
  const MetricsEndpointLimits limits_;
  absl::Mutex stop_mu_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  int port_ = 0;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  OpenConnections open_;
  std::thread thread_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, int port, Render render, MetricsEndpointLimits limits) {
  if (limits.request_deadline.count() <= 0 || limits.max_connections < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics endpoint limits: request_deadline must be > 0 ms and max_connections >= 1, got ",
        limits.request_deadline.count(), " ms and ", limits.max_connections));
  }
  auto endpoint = std::make_unique<BeastMetricsEndpoint>(std::move(render), limits);
  if (absl::Status status = endpoint->Listen(address, port); !status.ok()) return status;
  return std::unique_ptr<MetricsEndpoint>(std::move(endpoint));
}

}  // namespace wavepool::agent::internal
