// A small HTTP/1.1 server on Boost.Beast for the test API server: keep-alive connections, a thread
// per connection, plain answers and chunked streams (watches), and a stop that closes every
// connection, open streams included. It knows nothing about Kubernetes; api_handler.h does the
// routing.
//
// HttpServer is safe for concurrent use; Stop() (and the destructor) waits until no handler runs.
// A handler runs on its connection's thread and may block (a watch does, until it ends).
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_HTTP_SERVER_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_HTTP_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::testing::apiserver {

struct HttpRequest {
  std::string method;                          // "GET", "PATCH", ...
  std::string target;                          // as sent: "/api/v1/pods?limit=1"
  std::string path;                            // percent-decoded path: "/api/v1/pods"
  std::map<std::string, std::string> query;    // decoded; a repeated key keeps its last value
  std::map<std::string, std::string> headers;  // lower-case names; repeats joined with ","
  std::string body;

  // The header's value, "" when absent. `name` in lower case.
  std::string Header(const std::string& name) const;
  // The query parameter's value, "" when absent.
  std::string Query(const std::string& name) const;
  bool HasQuery(const std::string& name) const { return query.count(name) != 0; }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Warning, ...)
  std::string body;
};

// The way back to the client for one request: Send once, or StartStream, chunks and then
// EndStream or Abort. Used only on the handler's thread.
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;

  virtual void Send(const HttpResponse& response) = 0;

  // A chunked answer with `head`'s status and headers (its body is ignored). The writes return
  // false once the client is gone; the handler should then return.
  virtual bool StartStream(const HttpResponse& head) = 0;
  virtual bool WriteChunk(std::string_view data) = 0;
  // The terminating chunk: the client sees a complete answer.
  virtual void EndStream() = 0;
  // Closes the connection mid-stream, without the terminating chunk (a broken connection).
  virtual void Abort() = 0;

  // True once the server is stopping or the client has closed its side of the connection.
  virtual bool Cancelled() = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;

class HttpServer {
 public:
  // Listens on `address`:`port` (0: any free port) and serves every request with `handler`.
  // The port is bound with SO_REUSEADDR, so a restarted server can take it back at once.
  // InvalidArgument for an address that is not an IP address or a port outside [0, 65535];
  // Unavailable when the port cannot be bound (wavepool/net/tcp_listen.h).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& address, int port,
                                                           HttpHandler handler);

  virtual ~HttpServer() = default;

  // The bound port.
  virtual int port() const = 0;

  // Stops accepting, closes every connection (streams break) and waits for the handlers.
  // Idempotent.
  virtual void Stop() = 0;
};

// Percent-decoding of a URL component ('+' stays '+' in paths, becomes ' ' in queries).
std::string UrlDecode(std::string_view text, bool plus_is_space);

// "a=1&b=x%20y" -> {a: 1, b: "x y"}.
std::map<std::string, std::string> ParseQueryString(std::string_view query);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_HTTP_SERVER_H_
