#include "http/http_endpoints.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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

// The connections being served, counted so that their number stays bounded. Safe for concurrent
// use; outlives every Connection (the server owns it and destroys its io_context first).
class ConnectionSlots {
 public:
  explicit ConnectionSlots(int limit) : limit_(limit) {}
  bool TryAcquire() {
    int now = used_.load(std::memory_order_relaxed);
    do {
      if (now >= limit_) return false;
    } while (!used_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
    return true;
  }
  void Release() { used_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  const int limit_;
  std::atomic<int> used_{0};
};

// One connection: one request read and answered within the deadline, then closed. Kept alive by
// the asynchronous operations in flight on it; runs on the server's thread only.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const HttpEndpoints::Handler* handler, ConnectionSlots* slots)
      : stream_(std::move(socket)), handler_(handler), slots_(slots) {
    parser_.body_limit(kMaxBodyBytes);
  }
  ~Connection() { slots_->Release(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The deadline covers reading the request and writing the answer: a client that sends nothing,
  // or a byte at a time, loses its connection when it passes.
  void Start(std::chrono::milliseconds deadline) {
    stream_.expires_after(deadline);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](boost::beast::error_code error, std::size_t) {
                       self->OnRead(error);
                     });
  }

 private:
  void OnRead(boost::beast::error_code error) {
    if (error) return Close();
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

  void Close() {
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
  const HttpEndpoints::Handler* handler_;
  ConnectionSlots* slots_;
};

// Serves every connection on one thread with asynchronous I/O, so a slow or silent client holds
// only its own connection (and one of limits.max_connections slots), never the probes behind it.
class BeastEndpoints final : public HttpEndpoints {
 public:
  BeastEndpoints(Handler handler, HttpLimits limits)
      : handler_(std::move(handler)), limits_(limits), slots_(limits.max_connections) {}
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
    // The thread is gone: nothing else touches the acceptor. Connections still open are closed
    // when io_ is destroyed.
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error == asio::error::operation_aborted) return;
      if (!error) {
        if (slots_.TryAcquire()) {
          std::make_shared<Connection>(std::move(socket), &handler_, &slots_)
              ->Start(limits_.request_deadline);
        } else {
          // Every slot is held: refuse at once rather than queue behind the slow clients.
          boost::system::error_code ignored;
          socket.close(ignored);
        }
      }
      Accept();
    });
  }

  // Destroyed in reverse order: acceptor_, then io_ (and the Connections its pending handlers
  // hold, which release their slots), then slots_ and handler_.
  const Handler handler_;
  const HttpLimits limits_;
  ConnectionSlots slots_;
  absl::Mutex stop_mu_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  int port_ = 0;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
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
