#include "wavepool/net/tcp_listen.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/ip/address.hpp"
#include "boost/asio/socket_base.hpp"

namespace wavepool::net {

absl::StatusOr<int> ListenTcp(boost::asio::ip::tcp::acceptor& acceptor, std::string_view server,
                              const std::string& address, int port) {
  namespace asio = boost::asio;
  const absl::string_view name(server.data(), server.size());  // abseil's own string_view here
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " port: must be in [0, 65535], got ", port));
  }
  boost::system::error_code error;
  const asio::ip::address ip = asio::ip::make_address(address, error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " address: must be an IPv4 or IPv6 address, got \"", address, "\""));
  }
  const asio::ip::tcp::endpoint endpoint{ip, static_cast<unsigned short>(port)};
  acceptor.open(endpoint.protocol(), error);
  if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(endpoint, error);
  if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (!error) {
    const asio::ip::tcp::endpoint bound = acceptor.local_endpoint(error);
    if (!error) return static_cast<int>(bound.port());
  }
  boost::system::error_code ignored;
  acceptor.close(ignored);
  return absl::UnavailableError(
      absl::StrCat(name, ": cannot listen on ", address, ":", port, ": ", error.message()));
}

}  // namespace wavepool::net
