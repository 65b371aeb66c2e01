// A blocking TCP client on the loopback interface that sends exactly the bytes a test gives it,
// for the tests of wavepool::net's short-request server and of its users (the agent's /metrics,
// the controller's endpoints): a client that connects and stays silent, trickles a request, or
// asks with a method or a body no HTTP client of the tests sends.
//
//   RawTcpClient post(server->port());
//   ASSERT_TRUE(post.Send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
//   EXPECT_THAT(post.ReadToEnd(3s), Optional(StartsWith("HTTP/1.1 405")));
//
// Thread-compatible; owns its descriptor, closed by the destructor.
#ifndef WAVEPOOL_TESTS_SUPPORT_RAW_TCP_CLIENT_H_
#define WAVEPOOL_TESTS_SUPPORT_RAW_TCP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wavepool::testing {

class RawTcpClient {
 public:
  // Connects to 127.0.0.1:`port`; connected() says whether it did.
  explicit RawTcpClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 &&
                 ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawTcpClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawTcpClient(const RawTcpClient&) = delete;
  RawTcpClient& operator=(const RawTcpClient&) = delete;

  bool connected() const { return connected_; }

  // False when not all of `bytes` could be sent (the server closed or reset the connection).
  bool Send(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // Everything the server writes until it closes the connection; nullopt when `timeout` passes
  // first.
  std::optional<std::string> ReadToEnd(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string received;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !Readable(left)) return std::nullopt;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return received;  // EOF, or a reset: the server closed it
      received.append(buffer, static_cast<std::size_t>(n));
    }
  }

  // True when the server has closed the connection (or written to it) within `wait`.
  bool Readable(std::chrono::milliseconds wait) {
    pollfd entry{fd_, POLLIN, 0};
    return ::poll(&entry, 1, static_cast<int>(wait.count())) == 1;
  }

 private:
  int fd_;
  bool connected_ = false;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_RAW_TCP_CLIENT_H_
