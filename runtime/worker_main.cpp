// wavepool-worker: parses its settings and trains (runtime/include/wavepool/runtime/worker.h).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "wavepool/runtime/worker.h"

int main(int argc, char** argv) {
  wavepool::runtime::InstallStopHandlers();
  wavepool::runtime::KeepFreedMemoryForReuse();
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::cout << "wavepool-worker " WAVEPOOL_VERSION "\n";
    return 0;
  }
  absl::StatusOr<wavepool::runtime::WorkerOptions> options = wavepool::runtime::ParseWorkerOptions(
      args, [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        return value == nullptr ? std::nullopt : std::optional<std::string>(value);
      });
  if (absl::IsNotFound(options.status())) {  // --help
    std::cout << options.status().message() << "\n";
    return 0;
  }
  if (!options.ok()) {
    std::cerr << "wavepool-worker: " << options.status().message() << "\n";
    return static_cast<int>(wavepool::runtime::WorkerExit::kUsage);
  }
  return static_cast<int>(wavepool::runtime::RunWorker(*options, std::cout, std::cerr));
}
