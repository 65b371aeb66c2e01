// wavepool-gpus: what the agent's telemetry sees on this machine. Opens NVML the way the agent
// does, prints each GPU and its limitations, then a few samples some milliseconds apart.
//   wavepool-gpus [--samples 5] [--interval-ms 100] [--library libnvidia-ml.so.1]
// Exit status: 0 when NVML opened, 1 when it did not (the reason goes to stderr), 2 for bad flags.
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/base/clock.h"
#include "wavepool/base/seconds.h"

namespace {

std::string Gib(std::uint64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
}

std::string Ratio(const std::optional<double>& value) {
  return value.has_value() ? absl::StrFormat("%.1f%%", 100 * *value) : std::string("n/a");
}

void PrintSample(const wavepool::agent::GpuSample& s, wavepool::MonotonicTime start) {
  std::cout << absl::StrFormat("  t=+%7.3f s  used %s  util %s  sm_occupancy %s  processes:",
                               wavepool::Seconds(s.time - start).count(), Gib(s.memory_used_bytes),
                               Ratio(s.utilization), Ratio(s.sm_occupancy));
  if (s.processes.empty()) std::cout << " none";
  for (const auto& p : s.processes) {
    std::cout << absl::StrFormat(" %d:%.1f%%", p.pid, 100 * p.sm_utilization);
  }
  std::cout << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wavepool-gpus: the GPUs and samples the node agent's NVML telemetry sees"};
  app.set_version_flag("--version", "wavepool-gpus " WAVEPOOL_VERSION);
  int samples = 5;
  int interval_ms = 100;
  wavepool::agent::NvmlOptions options;
  app.add_option("--samples", samples, "samples per GPU")->check(CLI::Range(0, 100000));
  app.add_option("--interval-ms", interval_ms, "milliseconds between samples")
      ->check(CLI::Range(1, 600000));
  app.add_option("--library", options.library, "the NVML library to dlopen");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }

  wavepool::ClockPtr clock = wavepool::MakeRealClock();
  options.clock = clock.get();
  auto devices = wavepool::agent::OpenNvmlDevices(options);
  if (!devices.ok()) {
    std::cerr << "wavepool-gpus: " << devices.status() << "\n";
    return 1;
  }
  std::cout << (*devices)->Describe() << "\n";
  for (const auto& gpu : (*devices)->gpus()) {
    std::cout << absl::StrFormat("GPU %u  %s  %s  %s\n", gpu.index, gpu.uuid, gpu.name,
                                 Gib(gpu.memory_total_bytes));
    for (const std::string& limitation : gpu.limitations) {
      std::cout << "  limitation: " << limitation << "\n";
    }
  }
  const wavepool::MonotonicTime start = clock->Now();
  for (int i = 0; i < samples; ++i) {
    if (i > 0) clock->SleepFor(std::chrono::milliseconds(interval_ms));
    for (const auto& gpu : (*devices)->gpus()) {
      auto sample = (*devices)->Sample(gpu.index);
      if (!sample.ok()) {
        std::cout << "  GPU " << gpu.index << ": " << sample.status() << "\n";
        continue;
      }
      std::cout << "GPU " << gpu.index;
      PrintSample(*sample, start);
    }
  }
  return 0;
}
