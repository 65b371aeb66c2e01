// Percent-encoding for the URL pieces the client builds (RFC 3986 §2.1): everything but the
// unreserved characters is escaped, so a name, selector or continue token can never change the
// shape of a path or a query.
#ifndef WAVEPOOL_KUBE_SRC_URL_ENCODING_H_
#define WAVEPOOL_KUBE_SRC_URL_ENCODING_H_

#include <string>
#include <string_view>

namespace wavepool::kube::internal {

// "app=x,tier!=db" -> "app%3Dx%2Ctier%21%3Ddb".
std::string PercentEncode(std::string_view text);

}  // namespace wavepool::kube::internal

#endif  // WAVEPOOL_KUBE_SRC_URL_ENCODING_H_
