// A minimal HTTP/1.1 client over POSIX sockets for the test API server's tests: plain requests
// on a kept-alive connection, and watch streams read event by event, telling a complete stream
// (terminating chunk) from a broken one. Reads give up after a generous timeout, so that a
// failing test fails instead of hanging. Not thread-safe; one per test thread.
#ifndef WAVEPOOL_TESTS_APISERVER_HTTP_TEST_CLIENT_H_
#define WAVEPOOL_TESTS_APISERVER_HTTP_TEST_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

struct ClientResponse {
  int status = 0;                                   // 0: no answer (connection failed or closed)
  std::multimap<std::string, std::string> headers;  // lower-case names
  std::string body;

  nlohmann::json Json() const {
    return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  }
  std::string Header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::vector<std::string> AllHeaders(const std::string& name) const {
    std::vector<std::string> values;
    for (auto [it, end] = headers.equal_range(name); it != end; ++it) values.push_back(it->second);
    return values;
  }
};

// One TCP connection with a read buffer.
class TestConnection {
 public:
  // `url`: "http://127.0.0.1:<port>".
  explicit TestConnection(const std::string& url, int read_timeout_seconds = 30) {
    const std::size_t colon = url.rfind(':');
    const std::size_t host_start = url.find("//") + 2;
    host_ = url.substr(host_start, colon - host_start);
    port_ = std::atoi(url.c_str() + colon + 1);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{read_timeout_seconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    ::inet_pton(AF_INET, host_.c_str(), &address.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~TestConnection() { ::close(fd_); }
  TestConnection(const TestConnection&) = delete;
  TestConnection& operator=(const TestConnection&) = delete;

  bool connected() const { return connected_; }
  const std::string& host() const { return host_; }
  int port() const { return port_; }

  bool Write(const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // A line without its CRLF; nullopt at end of stream, error or timeout.
  std::optional<std::string> ReadLine() {
    while (true) {
      const std::size_t end = buffer_.find("\r\n");
      if (end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return line;
      }
      if (!Fill()) return std::nullopt;
    }
  }

  std::optional<std::string> ReadExactly(std::size_t size) {
    while (buffer_.size() < size) {
      if (!Fill()) return std::nullopt;
    }
    std::string data = buffer_.substr(0, size);
    buffer_.erase(0, size);
    return data;
  }

  // Status line and headers; false when the connection ended first.
  bool ReadHead(ClientResponse& response) {
    std::optional<std::string> status_line = ReadLine();
    if (!status_line.has_value() || status_line->size() < 12) return false;
    response.status = std::atoi(status_line->c_str() + 9);
    while (true) {
      std::optional<std::string> line = ReadLine();
      if (!line.has_value()) return false;
      if (line->empty()) return true;
      const std::size_t colon = line->find(':');
      std::string name = line->substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::size_t value_start = colon + 1;
      while (value_start < line->size() && (*line)[value_start] == ' ') ++value_start;
      response.headers.emplace(std::move(name), line->substr(value_start));
    }
  }

  // The next chunk's data; "" for the terminating chunk; nullopt when the connection broke.
  std::optional<std::string> ReadChunk() {
    std::optional<std::string> size_line = ReadLine();
    if (!size_line.has_value()) return std::nullopt;
    const std::size_t size = std::strtoul(size_line->c_str(), nullptr, 16);
    std::optional<std::string> data = ReadExactly(size + 2);  // the data and its CRLF
    if (!data.has_value()) return std::nullopt;
    data->resize(size);
    return data;
  }

 private:
  bool Fill() {
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  std::string host_;
  int port_ = 0;
  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

inline std::string RequestText(const std::string& method, const std::string& target,
                               const std::string& host, const std::string& body,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string text = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n";
  for (const auto& [name, value] : headers) text += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    text += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return text + "\r\n" + body;
}

// Plain requests, on one kept-alive connection (reopened when the server closed it).
class HttpTestClient {
 public:
  explicit HttpTestClient(std::string url) : url_(std::move(url)) {}

  ClientResponse Request(const std::string& method, const std::string& target,
                         const std::string& body = "",
                         const std::string& content_type = "application/json",
                         std::vector<std::pair<std::string, std::string>> headers = {}) {
    if (!content_type.empty() && !body.empty()) headers.emplace_back("Content-Type", content_type);
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (connection_ == nullptr) connection_ = std::make_unique<TestConnection>(url_);
      ClientResponse response;
      if (connection_->Write(RequestText(method, target, connection_->host(), body, headers)) &&
          connection_->ReadHead(response) && ReadBody(response)) {
        ++requests_on_connection_;
        if (response.Header("connection") == "close") Reset();
        return response;
      }
      Reset();  // a kept-alive connection the server closed meanwhile: try once more
    }
    return ClientResponse{};
  }

  ClientResponse Get(const std::string& target) { return Request("GET", target); }
  ClientResponse Post(const std::string& target, const nlohmann::json& body) {
    return Request("POST", target, body.dump());
  }
  ClientResponse Put(const std::string& target, const nlohmann::json& body) {
    return Request("PUT", target, body.dump());
  }
  ClientResponse Patch(const std::string& target, const std::string& content_type,
                       const nlohmann::json& body) {
    return Request("PATCH", target, body.dump(), content_type);
  }
  ClientResponse Delete(const std::string& target, const std::string& body = "") {
    return Request("DELETE", target, body);
  }

  // How many answers the current connection has carried (keep-alive).
  int requests_on_connection() const { return requests_on_connection_; }

 private:
  bool ReadBody(ClientResponse& response) {
    if (response.Header("transfer-encoding") == "chunked") {
      while (true) {
        std::optional<std::string> chunk = connection_->ReadChunk();
        if (!chunk.has_value()) return false;
        if (chunk->empty()) return true;
        response.body += *chunk;
      }
    }
    const std::size_t length = std::strtoul(response.Header("content-length").c_str(), nullptr, 10);
    std::optional<std::string> body = connection_->ReadExactly(length);
    if (!body.has_value()) return false;
    response.body = *std::move(body);
    return true;
  }

  void Reset() {
    connection_.reset();
    requests_on_connection_ = 0;
  }

  const std::string url_;
  std::unique_ptr<TestConnection> connection_;
  int requests_on_connection_ = 0;
};

// A watch read event by event.
class WatchReader {
 public:
  enum class End { kOpen, kComplete, kBroken };

  WatchReader(const std::string& url, const std::string& target,
              std::vector<std::pair<std::string, std::string>> headers = {})
      : connection_(url) {
    if (!connection_.Write(RequestText("GET", target, connection_.host(), "", headers)) ||
        !connection_.ReadHead(head_)) {
      end_ = End::kBroken;
    }
  }

  const ClientResponse& head() const { return head_; }
  End end() const { return end_; }

  // The next event; nullopt once the stream ended (end() says how).
  std::optional<nlohmann::json> Next() {
    while (true) {
      const std::size_t newline = pending_.find('\n');
      if (newline != std::string::npos) {
        nlohmann::json event = nlohmann::json::parse(pending_.substr(0, newline), nullptr, false);
        pending_.erase(0, newline + 1);
        return event;
      }
      if (end_ != End::kOpen) return std::nullopt;
      std::optional<std::string> chunk = connection_.ReadChunk();
      if (!chunk.has_value()) {
        end_ = End::kBroken;
      } else if (chunk->empty()) {
        end_ = End::kComplete;
      } else {
        pending_ += *chunk;
      }
    }
  }

  // Reads events until one of `type` (skipping others); nullopt when the stream ends first.
  std::optional<nlohmann::json> NextOfType(const std::string& type) {
    while (std::optional<nlohmann::json> event = Next()) {
      if ((*event)["type"] == type) return event;
    }
    return std::nullopt;
  }

 private:
  TestConnection connection_;
  ClientResponse head_;
  End end_ = End::kOpen;
  std::string pending_;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_APISERVER_HTTP_TEST_CLIENT_H_
