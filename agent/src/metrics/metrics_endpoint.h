// The agent's HTTP endpoint for /metrics: only its routing, on net::ShortRequestServer
// (wavepool/net/short_request_server.h), which holds the connections. The port is reachable from
// every pod of the cluster network and the kubelet's liveness probe asks /metrics too, so the
// server's deadline per connection and its bound on open connections (the oldest closed at the
// limit) are what keep silent or trickling clients from holding off scrapes and the probe.
//
// Internal to the agent library.
#ifndef WAVEPOOL_AGENT_SRC_METRICS_METRICS_ENDPOINT_H_
#define WAVEPOOL_AGENT_SRC_METRICS_METRICS_ENDPOINT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "wavepool/net/short_request_server.h"

namespace wavepool::agent::internal {

struct MetricsEndpointLimits {
  // From accepting a connection to the end of writing its answer.
  std::chrono::milliseconds request_deadline{5000};
  // Connections open at once; one more closes the oldest.
  int max_connections = 32;
};

// The exposition text (the Prometheus text format); runs on the server's thread.
using RenderMetrics = std::function<std::string()>;

// Listens on `address`:`port` (0: any free port) and answers GET and HEAD of /metrics with
// `render`'s text, other paths with 404 and other methods with 405. Errors as
// net::ShortRequestServer::Start's, each naming "metrics": InvalidArgument for an address that is
// not an IP address, a port outside [0, 65535] or limits that are not positive; Unavailable when
// the port cannot be bound.
absl::StatusOr<std::unique_ptr<net::ShortRequestServer>> StartMetricsEndpoint(
    const std::string& address, int port, RenderMetrics render, MetricsEndpointLimits limits);

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_SRC_METRICS_METRICS_ENDPOINT_H_
