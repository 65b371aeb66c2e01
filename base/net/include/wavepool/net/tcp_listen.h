// A listening TCP socket from an address and a port, for the project's small Boost.Beast HTTP
// servers: ShortRequestServer (short_request_server.h: the agent's /metrics, the controller's
// /healthz, /readyz and /metrics) and the test API server. Each serves its connections its own
// way (one asynchronous request per connection; keep-alive connections, each on a thread, with
// chunked watch streams); this is the part they share, so that both read an address and a port
// alike and fail with the same codes.
//
// Part of wavepool::net (base/net/), not of wavepool::base: it brings Boost.Asio, which
// wavepool::base does not depend on.
#ifndef WAVEPOOL_NET_TCP_LISTEN_H_
#define WAVEPOOL_NET_TCP_LISTEN_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "boost/asio/ip/tcp.hpp"

namespace wavepool::net {

// Opens `acceptor` on `address`:`port` and listens with the system's largest backlog; returns the
// bound port (the one the system picked when `port` is 0, as a test's server asks). The socket has
// SO_REUSEADDR, so a restarted server takes its port back at once, past connections of the last
// one still in TIME_WAIT. `server` names the server in every message ("http", "test API server").
//
// Errors: InvalidArgument naming `address` when it is not an IPv4 or IPv6 address (no name is
// resolved: "localhost" is refused) and naming `port` when it is outside [0, 65535]; Unavailable,
// with the system's reason, when the socket cannot be opened, bound or listened on (the port is
// taken, or below 1024 without the privilege). On an error `acceptor` is left closed.
//
// Thread-compatible: it uses only `acceptor`, which the caller does not touch from another thread
// meanwhile (Asio's rule for a socket). The caller then accepts on it; closing it stops listening.
// REQUIRES: `acceptor` is not open.
absl::StatusOr<int> ListenTcp(boost::asio::ip::tcp::acceptor& acceptor, std::string_view server,
                              const std::string& address, int port);

}  // namespace wavepool::net

#endif  // WAVEPOOL_NET_TCP_LISTEN_H_
