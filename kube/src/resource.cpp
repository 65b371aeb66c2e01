#include "wavepool/kube/resource.h"

#include <string>
#include <string_view>

#include "url_encoding.h"

namespace wavepool::kube {
namespace internal {

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                            (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' ||
                            byte == '_' || byte == '~';
    if (unreserved) {
      encoded.push_back(c);
    } else {
      encoded.push_back('%');
      encoded.push_back(kHex[byte >> 4]);
      encoded.push_back(kHex[byte & 0x0F]);
    }
  }
  return encoded;
}

}  // namespace internal

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceType::CollectionPath(std::string_view ns) const {
  // The core group lives under /api, every named group under /apis (API conventions).
  std::string path = group.empty() ? "/api/" + internal::PercentEncode(version)
                                   : "/apis/" + internal::PercentEncode(group) + "/" +
                                         internal::PercentEncode(version);
  if (namespaced && !ns.empty()) {
    path += "/namespaces/" + internal::PercentEncode(ns);
  }
  return path + "/" + internal::PercentEncode(plural);
}

std::string ResourceType::ObjectPath(std::string_view ns, std::string_view name) const {
  return CollectionPath(ns) + "/" + internal::PercentEncode(name);
}

}  // namespace wavepool::kube
