// The TLS relay: OpenSSL for the handshake and records, one thread per connection moving bytes
// both ways with poll(2).
#include "tests/support/apiserver/tls_front.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace wavepool::testing::apiserver {
namespace {

std::string OpenSslError(const std::string& what) {
  const unsigned long code = ERR_get_error();
  char text[256] = {};
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  return absl::StrCat(what, ": ", code != 0 ? text : "unknown OpenSSL error");
}

bool AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (extension == nullptr) return false;
  const bool added = X509_add_ext(cert, extension, -1) == 1;
  X509_EXTENSION_free(extension);
  return added;
}

// A P-256 key and a self-signed certificate for IP `address` that is its own CA.
absl::Status MakeIdentity(const std::string& address, EVP_PKEY** key_out, X509** cert_out) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  if (key == nullptr) return absl::InternalError(OpenSslError("generating the TLS key"));
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), static_cast<long>(::time(nullptr)));
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("wavepool-test-apiserver"), -1,
                             -1, 0);
  X509_set_issuer_name(cert, name);
  const std::string san = absl::StrCat("IP:", address);
  const bool extended =
      AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE") &&
      AddExtension(cert, NID_key_usage, "critical,digitalSignature,keyEncipherment,keyCertSign") &&
      AddExtension(cert, NID_ext_key_usage, "serverAuth") &&
      AddExtension(cert, NID_subject_alt_name, san.c_str());
  if (!extended || X509_sign(cert, key, EVP_sha256()) == 0) {
    X509_free(cert);
    EVP_PKEY_free(key);
    return absl::InternalError(OpenSslError("making the TLS certificate"));
  }
  *key_out = key;
  *cert_out = cert;
  return absl::OkStatus();
}

std::string PemOf(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return pem;
}

bool SendAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool SslWriteAll(SSL* ssl, const char* data, std::size_t size) {
  while (size > 0) {
    const int n = SSL_write(ssl, data, static_cast<int>(size));
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

class TlsFrontImpl final : public TlsFront {
 public:
  TlsFrontImpl(std::string address, int backend_port)
      : address_(std::move(address)), backend_port_(backend_port) {}

  ~TlsFrontImpl() override {
    stopping_.store(true);
    if (listener_ >= 0) ::shutdown(listener_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();
    std::map<std::thread::id, std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
      threads.swap(threads_);
    }
    for (auto& [id, thread] : threads) thread.join();
    if (listener_ >= 0) ::close(listener_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }

  absl::Status Begin(int port) {
    ::signal(SIGPIPE, SIG_IGN);
    EVP_PKEY* key = nullptr;
    X509* cert = nullptr;
    if (absl::Status s = MakeIdentity(address_, &key, &cert); !s.ok()) return s;
    ca_pem_ = PemOf(cert);
    ctx_ = SSL_CTX_new(TLS_server_method());
    const bool loaded = ctx_ != nullptr && SSL_CTX_use_certificate(ctx_, cert) == 1 &&
                        SSL_CTX_use_PrivateKey(ctx_, key) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!loaded) return absl::InternalError(OpenSslError("loading the TLS certificate"));

    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in where{};
    where.sin_family = AF_INET;
    where.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, address_.c_str(), &where.sin_addr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS address ", address_, ": not an IPv4 address"));
    }
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&where), sizeof(where)) != 0 ||
        ::listen(listener_, 64) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", address_, ":", port, " for TLS: ", strerror(errno)));
    }
    socklen_t length = sizeof(where);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&where), &length);
    port_ = ntohs(where.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return absl::OkStatus();
  }

  int port() const override { return port_; }
  const std::string& ca_pem() const override { return ca_pem_; }

 private:
  void AcceptLoop() {
    while (!stopping_.load()) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) {
        if (stopping_.load()) return;
        continue;
      }
      std::vector<std::thread> finished;
      {
        absl::MutexLock lock(&mu_);
        if (stopping_.load()) {
          ::close(fd);
          return;
        }
        open_fds_.insert(fd);
        std::thread thread([this, fd] { Relay(fd); });
        const std::thread::id id = thread.get_id();
        threads_.emplace(id, std::move(thread));
        // Threads whose connection ended, joined here so that a long-running server does not
        // keep them.
        for (const std::thread::id done : finished_) {
          const auto it = threads_.find(done);
          if (it == threads_.end()) continue;
          finished.push_back(std::move(it->second));
          threads_.erase(it);
        }
        finished_.clear();
      }
      for (std::thread& thread : finished) thread.join();
    }
  }

  int ConnectBackend() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in where{};
    where.sin_family = AF_INET;
    where.sin_port = htons(static_cast<std::uint16_t>(backend_port_));
    ::inet_pton(AF_INET, address_.c_str(), &where.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof(where)) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  // One client: the handshake, then bytes both ways until either side closes.
  void Relay(int client) {
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, client);
    int backend = -1;
    if (SSL_accept(ssl) == 1) backend = ConnectBackend();
    if (backend >= 0) {
      {
        absl::MutexLock lock(&mu_);
        open_fds_.insert(backend);
        if (stopping_.load()) ::shutdown(backend, SHUT_RDWR);
      }
      Pump(ssl, client, backend);
    }
    SSL_free(ssl);
    absl::MutexLock lock(&mu_);
    for (int fd : {client, backend}) {
      if (fd < 0) continue;
      open_fds_.erase(fd);
      ::close(fd);
    }
  }

  void Pump(SSL* ssl, int client, int backend) {
    char buffer[16384];
    while (!stopping_.load()) {
      pollfd fds[2] = {{client, POLLIN, 0}, {backend, POLLIN, 0}};
      if (SSL_pending(ssl) == 0 && ::poll(fds, 2, 200) <= 0) continue;
      if (SSL_pending(ssl) > 0 || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const int n = SSL_read(ssl, buffer, sizeof(buffer));
        if (n <= 0) {
          const int error = SSL_get_error(ssl, n);
          if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) continue;
          return;
        }
        if (!SendAll(backend, buffer, static_cast<std::size_t>(n))) return;
      }
      if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = ::recv(backend, buffer, sizeof(buffer), 0);
        if (n <= 0) return;
        if (!SslWriteAll(ssl, buffer, static_cast<std::size_t>(n))) return;
      }
    }
  }

  // Constant after construction.
  const std::string address_;
  const int backend_port_;
  // Constant once Begin() returned.
  std::string ca_pem_;
  SSL_CTX* ctx_ = nullptr;
  int listener_ = -1;
  int port_ = 0;
  std::thread acceptor_;

  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  std::set<int> open_fds_ ABSL_GUARDED_BY(mu_);  // client and backend sockets of live relays
  std::map<std::thread::id, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> finished_ ABSL_GUARDED_BY(mu_);  // relays that have ended
};

}  // namespace

absl::StatusOr<std::unique_ptr<TlsFront>> TlsFront::Start(const std::string& address, int port,
                                                          int backend_port) {
  auto front = std::make_unique<TlsFrontImpl>(address, backend_port);
  if (absl::Status status = front->Begin(port); !status.ok()) return status;
  return front;
}

}  // namespace wavepool::testing::apiserver
