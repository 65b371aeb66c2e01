// How the client reaches the API server: one request and answer, or an answer streamed line by
// line (watches). Behind an interface so that the HTTP stack can be replaced; NewHttpTransport
// (http_transport.h) is the cpprestsdk implementation.
#ifndef WAVEPOOL_KUBE_TRANSPORT_H_
#define WAVEPOOL_KUBE_TRANSPORT_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace wavepool::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // path and query, already percent-encoded: "/api/v1/pods?limit=5"
  std::string content_type;  // of `body`; empty when there is none
  std::string accept = "application/json";
  std::string body;
  std::chrono::milliseconds timeout{0};  // 0: the transport's default
};

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// A streamed answer body, read a line at a time (watch streams are newline-delimited JSON).
// NextLine is called from one thread at a time; Cancel from any thread.
class LineReader {
 public:
  virtual ~LineReader() = default;

  // The next line without its "\n". nullopt: the server ended the stream. Unavailable: the
  // connection broke. Cancelled: Cancel() was called.
  virtual absl::StatusOr<std::optional<std::string>> NextLine() = 0;

  // Makes a blocked or later NextLine return Cancelled and releases the connection.
  virtual void Cancel() = 0;
};

// Implementations are safe for concurrent use.
class Transport {
 public:
  virtual ~Transport() = default;

  // Sends `request` and reads the whole answer. Any HTTP status is an answer (the caller maps
  // errors); a status only when no answer came (Unavailable: refused, reset, TLS failure;
  // DeadlineExceeded: timed out).
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;

  // Sends `request` and returns its body as a stream once a 2xx status arrives. Any other status
  // is returned as ApiErrorFromResponse (api_error.h) builds it.
  virtual absl::StatusOr<std::unique_ptr<LineReader>> Stream(const HttpRequest& request) = 0;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_TRANSPORT_H_
