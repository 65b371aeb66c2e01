// One HTTP GET to a server of the test on the loopback interface, over a fresh connection, as a
// probe or a Prometheus scrape makes it: a health endpoint, /metrics, a query API.
//
//   ASSERT_OK_AND_ASSIGN(HttpResponse scrape, HttpGet(port, "/metrics"));
//   EXPECT_EQ(scrape.status, 200);
//
// Thread-safe: each call has its own socket.
#ifndef WAVEPOOL_TESTS_SUPPORT_HTTP_GET_H_
#define WAVEPOOL_TESTS_SUPPORT_HTTP_GET_H_

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace wavepool::testing {

struct HttpResponse {
  int status = 0;    // the status code, 200, 404, 503, ...
  std::string body;  // de-chunked when the server sent Transfer-Encoding: chunked
};

// GET http://127.0.0.1:<port><target> (HTTP/1.1, Connection: close), reading until the server
// closes. Unavailable naming the target when nothing listens, the connection breaks or `timeout`
// passes without a byte (for each send and receive); Internal when the answer is not HTTP.
// REQUIRES: `target` starts with '/'.
absl::StatusOr<HttpResponse> HttpGet(int port, std::string_view target,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_HTTP_GET_H_
