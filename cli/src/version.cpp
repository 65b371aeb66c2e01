#include "wavepool/cli/version.h"

namespace wavepool::cli {

std::string_view Version() { return WAVEPOOL_VERSION; }

}  // namespace wavepool::cli
