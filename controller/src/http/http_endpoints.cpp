#include "http/http_endpoints.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <list>
#include <memory>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http.hpp"
#include "wavepool/net/tcp_listen.h"

namespace wavepool::controller::internal {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Probes and scrapes send no body; anything larger is not one of them.
constexpr std::uint64_t kMaxBodyBytes = 64 * 1024;

HttpAnswer Answer(const HttpEndpoints::Handler& handler,
                  const http::request<http::string_body>& request) {
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    return HttpAnswer{405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  const std::string_view target(request.target().data(), request.target().size());
  return handler(target.substr(0, target.find('?')));
}

class Connection;
// The open connections, oldest first. Touched only by the server's thread (and by Stop once that
// thread is joined).
using OpenConnections = std::list<std::shared_ptr<Connection>>;

// One connection: one request read and answered within the deadline, then closed. Kept alive by
// the list of open connections and by the asynchronous operation in flight on it; runs on the
// server's thread only.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const HttpEndpoints::Handler* handler, OpenConnections* open)
      : stream_(std::move(socket)), handler_(handler), open_(open) {
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
    const HttpAnswer answer = Answer(*handler_, request);
    response_ = http::response<http::string_body>{static_cast<http::status>(answer.status),
                                                  request.version()};
    response_.set(http::field::content_type, answer.content_type);
    response_.set(http::field::cache_control, "no-cache");
    response_.keep_alive(false);
    const bool head = request.method() == http::verb::head;
    response_.body() = head ? std::string() : answer.body;
    response_.prepare_payload();
    if (head) response_.content_length(answer.body.size());
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](boost::beast::error_code, std::size_t) { self->Close(); });
  }

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
  const HttpEndpoints::Handler* const handler_;
  OpenConnections* const open_;
  OpenConnections::iterator position_;
  bool closed_ = false;
};

// Serves every connection on one thread with asynchronous I/O, so a slow or silent client holds
// only its own connection, never the probes behind it.
class BeastEndpoints final : public HttpEndpoints {
 public:
  BeastEndpoints(Handler handler, HttpLimits limits)
      : handler_(std::move(handler)), limits_(limits) {}
  ~BeastEndpoints() override { Stop(); }

  absl::Status Listen(const std::string& address, int port) {
    absl::StatusOr<int> bound = net::ListenTcp(acceptor_, "http", address, port);
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
    // turning the new one away instead would let a client holding every connection open, silent,
    // shut the kubelet's probes out until it lets go (and the kubelet restart the controller).
    if (static_cast<int>(open_.size()) >= limits_.max_connections) open_.front()->Close();
    auto connection = std::make_shared<Connection>(std::move(socket), &handler_, &open_);
    open_.push_back(connection);
    connection->Start(std::prev(open_.end()), limits_.request_deadline);
  }

  // Destroyed in reverse order: open_ (Stop closed them all), acceptor_, then io_ (and the
  // Connections its pending handlers still hold), then handler_.
  const Handler handler_;
  const HttpLimits limits_;
  absl::Mutex stop_mu_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  int port_ = 0;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  OpenConnections open_;
  std::thread thread_;
};

// Fields of /proc/self/stat after the command (which may contain spaces), 0-based from field 3.
std::vector<std::string> StatFields() {
  std::ifstream file("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

double BootTimeSeconds() {
  std::ifstream file("/proc/stat");
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("btime ", 0) == 0) return std::strtod(line.c_str() + 6, nullptr);
  }
  return 0;
}

std::size_t OpenFds() {
  std::size_t count = 0;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++count;
  }
  return count;
}

}  // namespace

std::string ProcessMetricsText() {
  const std::vector<std::string> f = StatFields();
  // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (1-based); f[0] is field 3.
  if (f.size() < 22) return "";
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double cpu =
      (std::strtod(f[11].c_str(), nullptr) + std::strtod(f[12].c_str(), nullptr)) / ticks;
  const double start = BootTimeSeconds() + std::strtod(f[19].c_str(), nullptr) / ticks;
  const double virtual_bytes = std::strtod(f[20].c_str(), nullptr);
  const double resident_bytes = std::strtod(f[21].c_str(), nullptr) * page;
  std::string out;
  const auto metric = [&out](const char* name, const char* type, const char* help, double value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ",
                    absl::StrFormat("%.17g", value), "\n");
  };
  metric("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
         cpu);
  metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         resident_bytes);
  metric("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", virtual_bytes);
  metric("process_open_fds", "gauge", "Number of open file descriptors.",
         static_cast<double>(OpenFds()));
  metric("process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.", start);
  return out;
}

absl::StatusOr<std::unique_ptr<HttpEndpoints>> HttpEndpoints::Start(const std::string& address,
                                                                    int port, Handler handler,
                                                                    HttpLimits limits) {
  if (limits.request_deadline.count() <= 0 || limits.max_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("http limits: request_deadline must be > 0 ms and max_connections >= 1, got ",
                     limits.request_deadline.count(), " ms and ", limits.max_connections));
  }
  auto server = std::make_unique<BeastEndpoints>(std::move(handler), limits);
  if (absl::Status status = server->Listen(address, port); !status.ok()) return status;
  return std::unique_ptr<HttpEndpoints>(std::move(server));
}

}  // namespace wavepool::controller::internal
