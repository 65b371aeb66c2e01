#include "http_endpoints.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"

namespace wavepool::controller::internal {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Probes and scrapes send no body; anything larger is not one of them.
constexpr std::uint64_t kMaxBodyBytes = 64 * 1024;

void SetIoTimeout(int fd) {
  timeval timeout{};
  timeout.tv_sec = HttpEndpoints::kIoTimeout.count();
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
}

class BeastEndpoints final : public HttpEndpoints {
 public:
  explicit BeastEndpoints(Handler handler) : handler_(std::move(handler)), acceptor_(io_) {}
  ~BeastEndpoints() override { Stop(); }

  absl::Status Listen(const std::string& address, int port) {
    boost::system::error_code error;
    const auto ip = asio::ip::make_address(address, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("http address: must be an IP address, got \"", address, "\""));
    }
    const tcp::endpoint endpoint{ip, static_cast<unsigned short>(port)};
    acceptor_.open(endpoint.protocol(), error);
    if (!error) acceptor_.set_option(asio::socket_base::reuse_address(true), error);
    if (!error) acceptor_.bind(endpoint, error);
    if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
    if (error) {
      return absl::UnavailableError(
          absl::StrCat("http: cannot listen on ", address, ":", port, ": ", error.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { AcceptLoop(); });
    return absl::OkStatus();
  }

  int port() const override { return port_; }

  void Stop() override {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopping_.exchange(true)) return;
    // shutdown() wakes a thread blocked in accept() or in a read on Linux; the thread closes
    // the connection's descriptor itself.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    {
      std::lock_guard<std::mutex> serving(serving_mu_);
      if (serving_fd_ >= 0) ::shutdown(serving_fd_, SHUT_RDWR);
    }
    if (thread_.joinable()) thread_.join();
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  }

 private:
  void AcceptLoop() {
    while (!stopping_.load()) {
      tcp::socket socket(io_);
      boost::system::error_code error;
      acceptor_.accept(socket, error);
      if (stopping_.load()) break;
      if (error) continue;
      {
        std::lock_guard<std::mutex> serving(serving_mu_);
        serving_fd_ = socket.native_handle();
      }
      SetIoTimeout(socket.native_handle());
      Serve(socket);
      {
        std::lock_guard<std::mutex> serving(serving_mu_);
        serving_fd_ = -1;
      }
      socket.shutdown(tcp::socket::shutdown_both, error);
      socket.close(error);
    }
  }

  void Serve(tcp::socket& socket) {
    boost::beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    boost::beast::error_code error;
    http::read(socket, buffer, parser, error);
    if (error) return;
    const auto& request = parser.get();
    HttpAnswer answer;
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      answer = HttpAnswer{405, "text/plain; charset=utf-8", "method not allowed\n"};
    } else {
      const std::string_view target(request.target().data(), request.target().size());
      answer = handler_(target.substr(0, target.find('?')));
    }
    http::response<http::string_body> response{static_cast<http::status>(answer.status),
                                               request.version()};
    response.set(http::field::content_type, answer.content_type);
    response.set(http::field::cache_control, "no-cache");
    response.keep_alive(false);
    response.body() = request.method() == http::verb::head ? std::string() : answer.body;
    response.prepare_payload();
    if (request.method() == http::verb::head) {
      response.content_length(answer.body.size());
    }
    http::write(socket, response, error);
  }

  const Handler handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mu_;
  std::mutex serving_mu_;
  int serving_fd_ = -1;  // guarded by serving_mu_: the connection being answered
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
                                                                    int port, Handler handler) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("http port: must be in [0, 65535], got ", port));
  }
  auto server = std::make_unique<BeastEndpoints>(std::move(handler));
  if (absl::Status status = server->Listen(address, port); !status.ok()) return status;
  return std::unique_ptr<HttpEndpoints>(std::move(server));
}

}  // namespace wavepool::controller::internal
