#include "wavepool/agent/client/log_sink.h"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace wavepool::agent {

void LogToStderr(std::string_view line) {
  std::string text(line);
  text.push_back('\n');
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(STDERR_FILENO, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report a failing stderr
    written += static_cast<std::size_t>(n);
  }
}

}  // namespace wavepool::agent
