// Parsing --store / WAVEPOOL_STORE.
#include <charconv>
#include <string>

#include "absl/strings/str_cat.h"
#include "wavepool/runtime/rendezvous.h"

namespace wavepool::runtime {
namespace {

constexpr std::string_view kForms = "(tcp://HOST:PORT or file://PATH)";

absl::Status Bad(std::string_view text, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--store: '", std::string(text), "' ",
                                                 std::string(problem), " ", std::string(kForms)));
}

absl::StatusOr<StoreAddress> ParseTcp(std::string_view text, std::string_view rest) {
  StoreAddress address;
  address.kind = StoreAddress::Kind::kTcp;
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]:port
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) return Bad(text, "has an unclosed '['");
    address.host = std::string(rest.substr(1, close - 1));
    if (close + 1 >= rest.size() || rest[close + 1] != ':') return Bad(text, "has no port");
    port_text = rest.substr(close + 2);
  } else {
    const std::size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return Bad(text, "has no port");
    address.host = std::string(rest.substr(0, colon));
    port_text = rest.substr(colon + 1);
  }
  if (address.host.empty()) return Bad(text, "has no host");
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return Bad(text,
               absl::StrCat("has port '", std::string(port_text), "', which is not in [1, 65535]"));
  }
  address.port = static_cast<std::uint16_t>(port);
  return address;
}

}  // namespace

std::string StoreAddress::ToString() const {
  if (kind == Kind::kFile) return absl::StrCat("file://", path);
  const bool ipv6 = host.find(':') != std::string::npos;
  return absl::StrCat("tcp://", ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", port);
}

absl::StatusOr<StoreAddress> ParseStoreAddress(std::string_view text) {
  if (text.substr(0, 6) == "tcp://") return ParseTcp(text, text.substr(6));
  if (text.substr(0, 7) == "file://") {
    StoreAddress address;
    address.kind = StoreAddress::Kind::kFile;
    address.path = std::string(text.substr(7));
    if (address.path.empty() || address.path.front() != '/') {
      return Bad(text, "does not name an absolute path");
    }
    return address;
  }
  return Bad(text, "is neither");
}

}  // namespace wavepool::runtime
