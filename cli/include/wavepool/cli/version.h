// The project version, as `wavepool version` prints it.
#ifndef WAVEPOOL_CLI_VERSION_H_
#define WAVEPOOL_CLI_VERSION_H_

#include <string_view>

namespace wavepool::cli {

std::string_view Version();

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_VERSION_H_
