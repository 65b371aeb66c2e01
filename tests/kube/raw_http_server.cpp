#include "tests/kube/raw_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>
#include <string>
#include <utility>

namespace wavepool::kube::testing {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Reads one request (headers and a Content-Length body); false at EOF or on error.
bool ReadRequest(RawConnection& connection, std::string& buffer, RawRequest& request) {
  std::size_t header_end;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    char chunk[4096];
    const long n = connection.Receive(chunk, sizeof(chunk));
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  const std::string head = buffer.substr(0, header_end);
  buffer.erase(0, header_end + 4);
  std::size_t line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const std::size_t space1 = request_line.find(' ');
  const std::size_t space2 = request_line.find(' ', space1 + 1);
  request.method = request_line.substr(0, space1);
  request.target = request_line.substr(space1 + 1, space2 - space1 - 1);
  while (line_end != std::string::npos) {
    const std::size_t next = head.find("\r\n", line_end + 2);
    const std::string line = head.substr(line_end + 2, next - line_end - 2);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      request.headers[Lower(line.substr(0, colon))] = value;
    }
    line_end = next;
  }
  const auto length = request.headers.find("content-length");
  const std::size_t body_size = length == request.headers.end() ? 0 : std::stoul(length->second);
  while (buffer.size() < body_size) {
    char chunk[4096];
    const long n = connection.Receive(chunk, sizeof(chunk));
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  request.body = buffer.substr(0, body_size);
  buffer.erase(0, body_size);
  return true;
}

}  // namespace

long RawConnection::Receive(char* data, std::size_t size) {
  if (ssl_ != nullptr) return SSL_read(ssl_, data, static_cast<int>(size));
  return ::recv(fd_, data, size, 0);
}

bool RawConnection::Write(const std::string& bytes) {
  std::size_t sent = 0;
  while (!closed_ && sent < bytes.size()) {
    const long n = ssl_ != nullptr
                       ? SSL_write(ssl_, bytes.data() + sent, static_cast<int>(bytes.size() - sent))
                       : ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return !closed_;
}

bool RawConnection::Answer(int status, const std::string& body, const std::string& content_type) {
  return Write("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type +
               "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

void RawConnection::Close() {
  if (!closed_) ::shutdown(fd_, SHUT_RDWR);
  closed_ = true;
}

RawHttpServer::RawHttpServer(Handler handler, const RawTlsOptions* tls)
    : handler_(std::move(handler)) {
  if (tls != nullptr) {
    // OpenSSL writes with write(2), which raises SIGPIPE when a client hangs up first (the
    // plain path sends with MSG_NOSIGNAL instead).
    std::signal(SIGPIPE, SIG_IGN);
    tls_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate_chain_file(tls_, tls->certificate_file.c_str());
    SSL_CTX_use_PrivateKey_file(tls_, tls->key_file.c_str(), SSL_FILETYPE_PEM);
    if (!tls->client_ca_file.empty()) {
      SSL_CTX_load_verify_locations(tls_, tls->client_ca_file.c_str(), nullptr);
      SSL_CTX_set_verify(tls_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  ::listen(listen_fd_, 16);
  socklen_t size = sizeof(address);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size);
  port_ = ntohs(address.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

RawHttpServer::~RawHttpServer() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    for (const int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  accept_thread_.join();
  for (std::thread& thread : threads) thread.join();
  ::close(listen_fd_);
  for (const int fd : fds_) ::close(fd);
  if (tls_ != nullptr) SSL_CTX_free(tls_);
}

std::vector<RawRequest> RawHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void RawHttpServer::AcceptLoop() {
  while (true) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    std::lock_guard<std::mutex> lock(mu_);
    if (fd < 0 || stopping_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void RawHttpServer::Serve(int fd) {
  SSL* ssl = nullptr;
  std::string common_name;
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) {  // the client refused us, or we refused it
      SSL_free(ssl);
      return;
    }
    if (X509* peer = SSL_get_peer_certificate(ssl)) {
      char name[256] = {};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, name, sizeof(name));
      common_name = name;
      X509_free(peer);
    }
  }
  std::string buffer;
  RawConnection connection(fd, ssl);
  RawRequest request;
  while (!connection.closed() && ReadRequest(connection, buffer, request)) {
    request.client_common_name = common_name;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    handler_(request, connection);
    request = RawRequest{};
  }
  if (ssl != nullptr) SSL_free(ssl);
}

}  // namespace wavepool::kube::testing
