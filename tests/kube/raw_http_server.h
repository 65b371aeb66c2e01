// A minimal HTTP/1.1 (or HTTPS) server on a loopback port for transport tests: each request goes to
// a handler that writes the raw answer bytes itself, so a test controls status lines, chunking,
// pauses and abrupt closes exactly.
//
// Safe for concurrent use; the destructor closes every connection and joins its threads.
#ifndef WAVEPOOL_TESTS_KUBE_RAW_HTTP_SERVER_H_
#define WAVEPOOL_TESTS_KUBE_RAW_HTTP_SERVER_H_

#include <openssl/ssl.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wavepool::kube::testing {

struct RawRequest {
  std::string client_common_name;  // HTTPS: the client certificate's CN; "" without one
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// One accepted connection, as the handler sees it (over TLS when the server has a certificate).
class RawConnection {
 public:
  RawConnection(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  // Up to `size` bytes; <= 0 at EOF or on error.
  long Receive(char* data, std::size_t size);
  // Writes every byte; false once the peer is gone.
  bool Write(const std::string& bytes);
  // A complete answer with Content-Length.
  bool Answer(int status, const std::string& body,
              const std::string& content_type = "application/json");
  // Closes the connection now (the handler's caller stops reading from it).
  void Close();
  bool closed() const { return closed_; }

 private:
  int fd_;
  SSL* ssl_;  // null for plain HTTP; owned by the server
  bool closed_ = false;
};

// HTTPS: the server's certificate and key (PEM files), and optionally the CA its clients'
// certificates must chain to (the connection is refused without one).
struct RawTlsOptions {
  std::string certificate_file;
  std::string key_file;
  std::string client_ca_file;
};

class RawHttpServer {
 public:
  using Handler = std::function<void(const RawRequest&, RawConnection&)>;

  // Listens on 127.0.0.1 on a free port.
  explicit RawHttpServer(Handler handler, const RawTlsOptions* tls = nullptr);
  ~RawHttpServer();

  std::string url() const {
    return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_);
  }
  std::vector<RawRequest> requests() const;

 private:
  void AcceptLoop();
  void Serve(int fd);

  Handler handler_;
  SSL_CTX* tls_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<RawRequest> requests_;  // guarded by mu_
  std::vector<int> fds_;              // guarded by mu_
  std::vector<std::thread> threads_;  // guarded by mu_
  bool stopping_ = false;             // guarded by mu_
  std::thread accept_thread_;
};

}  // namespace wavepool::kube::testing

#endif  // WAVEPOOL_TESTS_KUBE_RAW_HTTP_SERVER_H_
