#include "metrics/metrics_endpoint.h"

#include <cstdint>
#include <utility>

namespace wavepool::agent::internal {
namespace {

// Scrapes and probes send no body; anything larger is not one of them.
constexpr std::uint64_t kMaxBodyBytes = 4 * 1024;
constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

net::ShortAnswer AnswerFor(const RenderMetrics& render, const net::ShortRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  if (request.path != "/metrics") {
    return {404, "text/plain; charset=utf-8", "not found: try /metrics\n"};
  }
  return {200, kExpositionType, render()};
}

}  // namespace

absl::StatusOr<std::unique_ptr<net::ShortRequestServer>> StartMetricsEndpoint(
    const std::string& address, int port, RenderMetrics render, MetricsEndpointLimits limits) {
  const net::ShortRequestSettings settings{"metrics", limits.request_deadline,
                                           limits.max_connections, kMaxBodyBytes};
  return net::ShortRequestServer::Start(
      address, port, settings, [render = std::move(render)](const net::ShortRequest& request) {
        return AnswerFor(render, request);
      });
}

}  // namespace wavepool::agent::internal
