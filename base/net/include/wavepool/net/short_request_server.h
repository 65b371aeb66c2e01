// An HTTP server for short requests from clients it cannot trust: probes and Prometheus scrapes,
// which open a connection, send one small request at once and read one answer. The agent's
// /metrics and the controller's /healthz, /readyz and /metrics are served by it; each gives only
// its routing, as a Handler.
//
// Its port is reachable by any pod of the cluster network, so no client may hold it. Boost.Beast
// with asynchronous I/O on one thread serves every connection concurrently: each connection
// carries one request and its answer, then is closed, and has
// ShortRequestSettings::request_deadline from being accepted to the end of its answer being
// written. When max_connections are open, a new connection closes the oldest one instead of
// being turned away or waiting behind it. A client that connects and sends nothing, trickles
// bytes or never reads its answer thus holds one connection for at most the deadline, and however
// many such connections it keeps opening, a probe or a scrape, which sends its request at once,
// is answered.
//
// Thread-safe: port and Stop may be called from any thread. The Handler runs on the server's own
// thread, one request at a time, and is destroyed with the server. Stop (and the destructor)
// closes every connection and joins the thread.
//
// Part of wavepool::net (base/net/); it listens through ListenTcp (tcp_listen.h).
#ifndef WAVEPOOL_NET_SHORT_REQUEST_SERVER_H_
#define WAVEPOOL_NET_SHORT_REQUEST_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace wavepool::net {

struct ShortRequestSettings {
  // Names the server in every error: "metrics port: ...", "http limits: ...".
  std::string name = "http";
  // From accepting a connection to the end of writing its answer. Must be > 0.
  std::chrono::milliseconds request_deadline{5000};
  // Connections open at once; one more closes the oldest. Must be >= 1.
  int max_connections = 64;
  // A request whose body is larger is closed unanswered: probes and scrapes send none.
  std::uint64_t max_body_bytes = 4 * 1024;
};

// What the Handler sees of a request; valid only during the call.
struct ShortRequest {
  std::string_view method;  // as sent: "GET", "HEAD", "POST", ...
  std::string_view path;    // the target without its query string: "/healthz"
};

struct ShortAnswer {
  int status = 200;  // an HTTP status code
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class ShortRequestServer {
 public:
  // Answers every request, whatever its method. For a HEAD request the server sends the answer
  // without its body but with the body's Content-Length, as RFC 9110 §9.3.2 asks, so a Handler
  // answers HEAD as it answers GET.
  using Handler = std::function<ShortAnswer(const ShortRequest& request)>;

  // Listens on `address`:`port` (0: any free port) and serves until Stop. Errors, each naming
  // settings.name: InvalidArgument for a request_deadline that is not positive or a
  // max_connections below 1 ("<name> limits: ..."), and ListenTcp's: InvalidArgument for an
  // address that is not an IP address or a port outside [0, 65535], Unavailable when the port
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<ShortRequestServer>> Start(const std::string& address,
                                                                   int port,
                                                                   ShortRequestSettings settings,
                                                                   Handler handler);

  ShortRequestServer(const ShortRequestServer&) = delete;
  ShortRequestServer& operator=(const ShortRequestServer&) = delete;
  ~ShortRequestServer();

  // The bound port (the one the system picked when Start was given 0).
  int port() const;
  // Stops accepting, closes every connection and joins the thread. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit ShortRequestServer(std::unique_ptr<Impl> impl);

  const std::unique_ptr<Impl> impl_;
};

}  // namespace wavepool::net

#endif  // WAVEPOOL_NET_SHORT_REQUEST_SERVER_H_
