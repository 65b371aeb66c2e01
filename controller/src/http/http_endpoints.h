// The controller's small HTTP server for /healthz, /readyz and /metrics: the routing of a
// net::ShortRequestServer (wavepool/net/short_request_server.h), one request per connection
// (probes and Prometheus scrapes open a connection each), answered by a callback. Internal to the
// controller library.
//
// Thread-safe. One thread accepts and serves every connection concurrently, up to
// HttpLimits::max_connections at once; each has HttpLimits::request_deadline to send its request
// and receive the answer, and when max_connections are open a new connection closes the oldest
// one instead of being turned away. A client that connects and sends nothing (or trickles bytes,
// or never reads its answer) thus holds one connection for at most the deadline, and however
// many such connections it keeps opening, a kubelet probe or a scrape, which sends its request
// at once, is answered. Stop (and the destructor) closes every connection and joins the
// thread.
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

class HttpEndpoints {
 public:
  // Answers GET (and HEAD) of a path; the path comes without the query string. Runs on the
  // server's thread.
  using Handler = std::function<HttpAnswer(std::string_view path)>;

  // Listens on `address`:`port` (0: any free port). InvalidArgument for an address that is not
  // an IP address, a port outside [0, 65535] or limits that are not positive; Unavailable when
  // the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpEndpoints>> Start(const std::string& address, int port,
                                                              Handler handler,
                                                              HttpLimits limits = HttpLimits());
  virtual ~HttpEndpoints() = default;

  virtual int port() const = 0;
  // Stops accepting, closes every connection and joins the thread. Idempotent.
  virtual void Stop() = 0;
};

// The process's own metrics in the Prometheus text format, as client libraries' process
// collectors name them: process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_start_time_seconds. Read from /proc;
// empty where /proc is unreadable.
std::string ProcessMetricsText();

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_HTTP_HTTP_ENDPOINTS_H_
