// ListenTcp: a port of 0 yields a port a client can connect to; a bad address or port and a taken
// port fail with the code that says what to do next, naming the server and the value, and leave
// the acceptor closed.
#include "wavepool/net/tcp_listen.h"

#include <string>

#include "absl/status/status.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::net {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;
using tcp = boost::asio::ip::tcp;

TEST(ListenTcp, PortZeroBindsAFreePortThatAcceptsConnections) {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io);
  ASSERT_OK_AND_ASSIGN(const int port, ListenTcp(acceptor, "probe", "127.0.0.1", 0));
  EXPECT_GT(port, 0);
  EXPECT_EQ(acceptor.local_endpoint().port(), port);

  tcp::socket client(io);
  boost::system::error_code error;
  client.connect(
      tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)),
      error);
  ASSERT_FALSE(error) << error.message();
  tcp::socket served(io);
  acceptor.accept(served, error);
  EXPECT_FALSE(error) << error.message();
}

TEST(ListenTcp, ListensOnIpv6Loopback) {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io);
  const absl::StatusOr<int> port = ListenTcp(acceptor, "probe", "::1", 0);
  if (!port.ok() && absl::IsUnavailable(port.status())) {
    GTEST_SKIP() << "no IPv6 loopback here: " << port.status();
  }
  ASSERT_OK(port.status());
  EXPECT_TRUE(acceptor.local_endpoint().address().is_v6());
}

TEST(ListenTcp, RefusesAnAddressThatIsNotAnIpAddress) {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io);
  for (const char* address : {"localhost", "not-an-ip", "", "127.0.0.256"}) {
    EXPECT_THAT(
        ListenTcp(acceptor, "probe", address, 0),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("probe address"), HasSubstr(std::string("\"") + address + "\""))))
        << address;
    EXPECT_FALSE(acceptor.is_open());
  }
}

TEST(ListenTcp, RefusesAPortOutsideTheRange) {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io);
  for (const int port : {-1, 65536, 70000}) {
    EXPECT_THAT(ListenTcp(acceptor, "probe", "127.0.0.1", port),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("probe port: must be in [0, 65535]"),
                               HasSubstr(std::to_string(port)))))
        << port;
    EXPECT_FALSE(acceptor.is_open());
  }
}

TEST(ListenTcp, ATakenPortIsUnavailableAndLeavesTheAcceptorClosed) {
  boost::asio::io_context io;
  tcp::acceptor first(io);
  ASSERT_OK_AND_ASSIGN(const int port, ListenTcp(first, "probe", "127.0.0.1", 0));
  tcp::acceptor second(io);
  EXPECT_THAT(ListenTcp(second, "probe", "127.0.0.1", port),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("probe: cannot listen on 127.0.0.1:" + std::to_string(port))));
  EXPECT_FALSE(second.is_open());
}

TEST(ListenTcp, APortIsTakenBackAtOnceAfterItsListenerCloses) {
  boost::asio::io_context io;
  int port = 0;
  {
    tcp::acceptor first(io);
    ASSERT_OK_AND_ASSIGN(port, ListenTcp(first, "probe", "127.0.0.1", 0));
    tcp::socket client(io);
    client.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                 static_cast<unsigned short>(port)));
    tcp::socket served(io);
    first.accept(served);
    served.close();  // the server closes first: its side of the connection is in TIME_WAIT
  }
  tcp::acceptor again(io);
  ASSERT_OK_AND_ASSIGN(const int bound, ListenTcp(again, "probe", "127.0.0.1", port));
  EXPECT_EQ(bound, port);
}

}  // namespace
}  // namespace wavepool::net
