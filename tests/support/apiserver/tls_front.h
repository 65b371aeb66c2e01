// HTTPS in front of the test API server's plain HTTP port: a loopback TLS listener whose
// connections are decrypted and relayed byte for byte to the HTTP server (keep-alive, chunked
// watch streams and all). kubectl and helm send a kubeconfig's bearer token only to an https://
// server (client-go drops credentials for plain http), so the server serves TLS whenever tokens
// must reach it from them.
//
// The certificate is made at start: self-signed (it is its own CA), for IP `address`, valid for a
// day; ca_pem() goes into kubeconfigs as certificate-authority-data.
//
// TlsFront is safe for concurrent use; the destructor stops listening, closes every connection
// and joins its threads. The relay ignores SIGPIPE process-wide (OpenSSL writes with write(2)).
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_TLS_FRONT_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_TLS_FRONT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace wavepool::testing::apiserver {

class TlsFront {
 public:
  // Listens on `address`:`port` (0: any free port) and relays to `address`:`backend_port`.
  static absl::StatusOr<std::unique_ptr<TlsFront>> Start(const std::string& address, int port,
                                                         int backend_port);
  virtual ~TlsFront() = default;

  virtual int port() const = 0;
  // The certificate (PEM), which is also its CA.
  virtual const std::string& ca_pem() const = 0;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_TLS_FRONT_H_
