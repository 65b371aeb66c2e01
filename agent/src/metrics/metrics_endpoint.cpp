#include "metrics/metrics_endpoint.h"

#include <cstdint>
#include <memory>
#include <utility>

#include "wavepool/net/short_request_server.h"

namespace wavepool::agent::internal {
namespace {

// Scrapes and probes send no body; anything larger is not one of them.
constexpr std::uint64_t kMaxBodyBytes = 4 * 1024;
constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

net::ShortAnswer AnswerFor(const MetricsEndpoint::Render& render,
                           const net::ShortRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  if (request.path != "/metrics") {
    return {404, "text/plain; charset=utf-8", "not found: try /metrics\n"};
  }
  return {200, kExpositionType, render()};
}

class ServedMetricsEndpoint final : public MetricsEndpoint {
 public:
  explicit ServedMetricsEndpoint(std::unique_ptr<net::ShortRequestServer> server)
      : server_(std::move(server)) {}

  int port() const override { return server_->port(); }
  void Stop() override { server_->Stop(); }

 private:
  const std::unique_ptr<net::ShortRequestServer> server_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, int port, Render render, MetricsEndpointLimits limits) {
  const net::ShortRequestSettings settings{"metrics", limits.request_deadline,
                                           limits.max_connections, kMaxBodyBytes};
  absl::StatusOr<std::unique_ptr<net::ShortRequestServer>> server = net::ShortRequestServer::Start(
      address, port, settings, [render = std::move(render)](const net::ShortRequest& request) {
        return AnswerFor(render, request);
      });
  if (!server.ok()) return server.status();
  return std::make_unique<ServedMetricsEndpoint>(*std::move(server));
}

}  // namespace wavepool::agent::internal
