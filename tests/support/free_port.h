// A free loopback TCP port for a program that takes its port on the command line and cannot report
// one it chose: the store a gang of wavepool-worker processes meets over, an agent's or
// Prometheus's metrics, the test API server of a benchmark.
#ifndef WAVEPOOL_TESTS_SUPPORT_FREE_PORT_H_
#define WAVEPOOL_TESTS_SUPPORT_FREE_PORT_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace wavepool::testing {

// A TCP port on 127.0.0.1 that nothing listens on now, or 0 when none could be had. Bound and
// released: another process could take it in between, which on a test machine does not happen in
// practice.
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_FREE_PORT_H_
