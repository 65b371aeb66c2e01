#include "wavepool/net/short_request_server.h"

#include <chrono>
#include <iterator>
#include <list>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http.hpp"
#include "wavepool/net/tcp_listen.h"

namespace wavepool::net {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

std::string_view View(boost::beast::string_view text) { return {text.data(), text.size()}; }

class Connection;
// The open connections, oldest first. Touched only by the server's thread (and by Stop once that
// thread is joined).
using OpenConnections = std::list<std::shared_ptr<Connection>>;

// One connection: one request read and answered within the deadline, then closed. Kept alive by
// the list of open connections and by the asynchronous operation in flight on it; runs on the
// server's thread only.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::uint64_t max_body_bytes,
             const ShortRequestServer::Handler* handler, OpenConnections* open)
      : stream_(std::move(socket)), handler_(handler), open_(open) {
    parser_.body_limit(max_body_bytes);
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
    const std::string_view target = View(request.target());
    ShortAnswer answer = (*handler_)(
        ShortRequest{View(request.method_string()), target.substr(0, target.find('?'))});
    response_ = http::response<http::string_body>{static_cast<http::status>(answer.status),
                                                  request.version()};
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
  const ShortRequestServer::Handler* const handler_;
  OpenConnections* const open_;
  OpenConnections::iterator position_;
  bool closed_ = false;
};

}  // namespace

// After a failed accept (out of descriptors) the server rests this long before the next.
constexpr std::chrono::milliseconds kAcceptPause{100};

class ShortRequestServer::Impl {
 public:
  Impl(ShortRequestSettings settings, Handler handler)
      : handler_(std::move(handler)), settings_(std::move(settings)) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() { Stop(); }

  absl::Status Listen(const std::string& address, int port) {
    absl::StatusOr<int> bound = ListenTcp(acceptor_, settings_.name, address, port);
    if (!bound.ok()) return bound.status();
    port_ = *bound;
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return absl::OkStatus();
  }

  int port() const { return port_; }

  void Stop() {
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
      if (!error) {
        Admit(std::move(socket));
        Accept();
        return;
      }
      // Out of descriptors (EMFILE, ENFILE) the waiting connection stays ready: accepting again
      // at once would spin this thread until a descriptor frees.
      accept_pause_.expires_after(kAcceptPause);
      accept_pause_.async_wait([this](boost::system::error_code waited) {
        if (waited != asio::error::operation_aborted) Accept();
      });
    });
  }

  void Admit(tcp::socket socket) {
    // At the limit the oldest connection goes: it has had the longest to send its request, and
    // turning the new one away instead would let a client holding every connection open, silent,
    // shut the kubelet's probes and the scrapes out until it lets go.
    if (static_cast<int>(open_.size()) >= settings_.max_connections) open_.front()->Close();
    auto connection = std::make_shared<Connection>(std::move(socket), settings_.max_body_bytes,
                                                   &handler_, &open_);
    open_.push_back(connection);
    connection->Start(std::prev(open_.end()), settings_.request_deadline);
  }

  // Destroyed in reverse order: open_ (Stop closed them all), acceptor_, then io_ (and the
  // Connections its pending handlers still hold), then handler_.
  // Constant after construction (port_ once Listen has returned).
  const Handler handler_;
  const ShortRequestSettings settings_;
  int port_ = 0;

  absl::Mutex stop_mu_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;

  // The server's thread's alone while it runs; Stop's once it is joined.
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  asio::steady_timer accept_pause_{io_};
  OpenConnections open_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<ShortRequestServer>> ShortRequestServer::Start(
    const std::string& address, int port, ShortRequestSettings settings, Handler handler) {
  if (settings.request_deadline.count() <= 0 || settings.max_connections < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        settings.name, " limits: request_deadline must be > 0 ms and max_connections >= 1, got ",
        settings.request_deadline.count(), " ms and ", settings.max_connections));
  }
  auto impl = std::make_unique<Impl>(std::move(settings), std::move(handler));
  if (absl::Status status = impl->Listen(address, port); !status.ok()) return status;
  return std::unique_ptr<ShortRequestServer>(new ShortRequestServer(std::move(impl)));
}

ShortRequestServer::ShortRequestServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ShortRequestServer::~ShortRequestServer() = default;

int ShortRequestServer::port() const { return impl_->port(); }

void ShortRequestServer::Stop() { impl_->Stop(); }

}  // namespace wavepool::net
