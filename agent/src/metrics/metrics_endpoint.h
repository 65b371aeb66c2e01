// The agent's HTTP endpoint for /metrics: its routing on net::ShortRequestServer
// (wavepool/net/short_request_server.h), which answers one request per connection (Prometheus
// scrapes and the kubelet's liveness probe open one each) on one thread with asynchronous I/O.
// The port is reachable from every pod of the cluster network, so no client may hold it: each
// connection has MetricsEndpointLimits::request_deadline to send its request and receive the
// answer, and when max_connections are open a new connection closes the oldest one instead of
// waiting behind it. A client that connects and sends nothing (or trickles bytes, or never reads
// its answer) thus holds one connection for at most the deadline, and a scrape, which sends its
// request at once, is answered however many such connections there are.
//
// Thread-safe. Stop (and the destructor) joins the thread. Internal to the agent library.
#ifndef WAVEPOOL_AGENT_SRC_METRICS_METRICS_ENDPOINT_H_
#define WAVEPOOL_AGENT_SRC_METRICS_METRICS_ENDPOINT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace wavepool::agent::internal {

struct MetricsEndpointLimits {
  // From accepting a connection to the end of writing its answer.
  std::chrono::milliseconds request_deadline{5000};
  // Connections open at once; one more closes the oldest.
  int max_connections = 32;
};

class MetricsEndpoint {
 public:
  // The exposition text (the Prometheus text format); runs on the endpoint's thread.
  using Render = std::function<std::string()>;

  // Listens on `address`:`port` (0: any free port) and answers GET and HEAD of /metrics with
  // Render's text, other paths with 404 and other methods with 405. InvalidArgument for an
  // address that is not an IP address, a port outside [0, 65535] or limits that are not
  // positive; Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& address, int port, Render render,
      MetricsEndpointLimits limits = MetricsEndpointLimits());
  virtual ~MetricsEndpoint() = default;

  virtual int port() const = 0;
  // Stops accepting, closes every connection and joins the thread. Idempotent.
  virtual void Stop() = 0;
};

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_SRC_METRICS_METRICS_ENDPOINT_H_
