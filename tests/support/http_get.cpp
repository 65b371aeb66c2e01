#include "tests/support/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavepool::testing {
namespace {

// The body of a chunked answer: hex size, CRLF, data, CRLF, ..., a zero-size chunk.
absl::StatusOr<std::string> Dechunk(const std::string& text, const std::string& what) {
  std::string joined;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t eol = text.find("\r\n", at);
    if (eol == std::string::npos) break;
    char* end = nullptr;
    const std::string size_text = text.substr(at, eol - at);
    const unsigned long size = std::strtoul(size_text.c_str(), &end, 16);
    if (end == size_text.c_str()) {
      return absl::InternalError(absl::StrCat(what, ": bad chunk size '", size_text, "'"));
    }
    if (size == 0) return joined;
    joined += text.substr(eol + 2, size);
    at = eol + 2 + size + 2;
  }
  return absl::InternalError(absl::StrCat(what, ": chunked body ends without its last chunk"));
}

// Reads until the peer closes; Unavailable on an error or a timeout.
absl::StatusOr<std::string> ReadAll(int fd, const std::string& what) {
  std::string answer;
  char buffer[16384];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) return answer;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(what, ": recv: ", std::strerror(errno)));
    }
    answer.append(buffer, static_cast<std::size_t>(n));
  }
}

absl::StatusOr<HttpResponse> Parse(const std::string& answer, const std::string& what) {
  const std::size_t head_end = answer.find("\r\n\r\n");
  if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12 || head_end == std::string::npos) {
    return absl::InternalError(
        absl::StrCat(what, ": not an HTTP answer: '", answer.substr(0, 80), "'"));
  }
  HttpResponse response;
  response.status = std::atoi(answer.substr(9, 3).c_str());
  std::string head = answer.substr(0, head_end);
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  response.body = answer.substr(head_end + 4);
  if (head.find("transfer-encoding: chunked") != std::string::npos) {
    absl::StatusOr<std::string> body = Dechunk(response.body, what);
    if (!body.ok()) return body.status();
    response.body = *std::move(body);
  }
  return response;
}

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(int port, std::string_view target,
                                     std::chrono::milliseconds timeout) {
  const std::string what = absl::StrCat("GET http://127.0.0.1:", port, std::string(target));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat(what, ": socket: ", std::strerror(errno)));
  timeval limit{};
  limit.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  limit.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrCat(what, ": connect: ", std::strerror(error)));
  }
  const std::string request = absl::StrCat("GET ", std::string(target),
                                           " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           "Connection: close\r\n\r\n");
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrCat(what, ": send: ", std::strerror(error)));
  }
  absl::StatusOr<std::string> answer = ReadAll(fd, what);
  ::close(fd);
  if (!answer.ok()) return answer.status();
  return Parse(*answer, what);
}

}  // namespace wavepool::testing
