#include "http/http_endpoints.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/net/short_request_server.h"

namespace wavepool::controller::internal {
namespace {

// Probes and scrapes send no body; anything larger is not one of them.
constexpr std::uint64_t kMaxBodyBytes = 64 * 1024;

HttpAnswer Answer(const HttpHandler& handler, const net::ShortRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") {
    return HttpAnswer{405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  return handler(request.path);
}

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

absl::StatusOr<std::unique_ptr<net::ShortRequestServer>> StartHttpEndpoints(
    const std::string& address, int port, HttpHandler handler, HttpLimits limits) {
  const net::ShortRequestSettings settings{"http", limits.request_deadline, limits.max_connections,
                                           kMaxBodyBytes};
  return net::ShortRequestServer::Start(
      address, port, settings, [handler = std::move(handler)](const net::ShortRequest& request) {
        return Answer(handler, request);
      });
}

}  // namespace wavepool::controller::internal
