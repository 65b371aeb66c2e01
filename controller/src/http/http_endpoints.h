// The controller's HTTP endpoints, /healthz, /readyz and /metrics: the routing of a
// net::ShortRequestServer (wavepool/net/short_request_server.h: one request per connection within
// a deadline, the oldest connection closed at the limit, so that silent clients cannot shut the
// kubelet's probes out), answered by a callback. Internal to the controller library.
#ifndef WAVEPOOL_CONTROLLER_SRC_HTTP_HTTP_ENDPOINTS_H_
#define WAVEPOOL_CONTROLLER_SRC_HTTP_HTTP_ENDPOINTS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "wavepool/net/short_request_server.h"

namespace wavepool::controller::internal {

// A status code, a content type (plain text unless set) and a body.
using HttpAnswer = net::ShortAnswer;

struct HttpLimits {
  // From accepting a connection to the end of writing its answer.
  std::chrono::milliseconds request_deadline{5000};
  // Connections open at once (kubelet probes and a scrape need a handful); one more closes the
  // oldest.
  int max_connections = 64;
};

// Answers GET (and HEAD) of a path, without its query string; runs on the server's thread.
using HttpHandler = std::function<HttpAnswer(std::string_view path)>;

// Serves `handler` on `address`:`port` (0: any free port), other methods with 405, until the
// server's Stop. ShortRequestServer::Start's errors, naming the server "http": InvalidArgument
// for an address that is not an IP address, a port outside [0, 65535] or limits that are not
// positive; Unavailable when the port cannot be bound.
absl::StatusOr<std::unique_ptr<net::ShortRequestServer>> StartHttpEndpoints(
    const std::string& address, int port, HttpHandler handler, HttpLimits limits = HttpLimits());

// The process's own metrics in the Prometheus text format, as client libraries' process
// collectors name them: process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_start_time_seconds. Read from /proc;
// empty where /proc is unreadable.
std::string ProcessMetricsText();

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_HTTP_HTTP_ENDPOINTS_H_
