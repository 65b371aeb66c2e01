// How much a background job slows a foreground job on one GPU, and what each of DeepPool's
// multiplexing mechanisms (deeppool-burst-parallel §5, Figure 11) takes back: stream priorities,
// launch pacing through wavepool's launch gate, and pausing the background around sensitive
// groups. Needs a CUDA GPU; built only with the CUDA toolkit. Figures: docs/performance.md.
//
//   gate_pacing_bench [--groups N] [--fg-us U] [--bg-us U] [--dir DIR]
//
// The foreground runs op groups of 4 short kernels (each a full wave of blocks spinning --fg-us
// microseconds); the background runs kernels (--bg-us) whose blocks fill every SM's thread slots.
// Both run in one process on separate streams, each through its own slot of a real gate file, the
// way two processes under MPS would. Kernel durations are set by spinning on the SM clock, so they
// do not depend on memory bandwidth or data.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gate_segment.h"
#include "wavepool/agent/launch_policy.h"

namespace {

#define CHECK_CUDA(call)                                                 \
  do {                                                                   \
    cudaError_t err_ = (call);                                           \
    if (err_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

__global__ void Spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

struct Options {
  int groups = 400;
  int fg_us = 20;
  int bg_us = 500;
  std::string dir = "/tmp";
};

enum class Mode { kAlone, kShared, kPriorities, kPacing, kPause };
const char* Name(Mode m) {
  switch (m) {
    case Mode::kAlone:
      return "foreground alone";
    case Mode::kShared:
      return "+ background, same priority, unpaced";
    case Mode::kPriorities:
      return "+ stream priorities";
    case Mode::kPacing:
      return "+ launch pacing (fg 2, bg 1 credits)";
    case Mode::kPause:
      return "+ pause around sensitive groups";
  }
  return "";
}

struct Result {
  double fg_median_us = 0;
  double fg_p95_us = 0;
  double bg_kernels_per_s = 0;
};

Result Run(Mode mode, const Options& opt, int sms, long long cycles_per_us) {
  using namespace wavepool::agent;
  auto segment = GateSegment::Create(opt.dir, 0, 2, static_cast<std::uint64_t>(getpid()));
  if (!segment.ok()) {
    std::fprintf(stderr, "%s\n", std::string(segment.status().message()).c_str());
    std::exit(1);
  }
  const bool paced = mode >= Mode::kPacing;
  const int unpaced = static_cast<int>(kMaxCreditLimit);
  // Each worker's own segment, as AgentConnection creates it before Register.
  auto fg_own = LaunchGate::CreateWorkerSegment();
  auto bg_own = LaunchGate::CreateWorkerSegment();
  if (!fg_own.ok() || !bg_own.ok()) {
    std::fprintf(stderr, "worker segments: %s\n",
                 std::string((fg_own.ok() ? bg_own.status() : fg_own.status()).message()).c_str());
    std::exit(1);
  }
  auto fg_slot = (*segment)->Allocate(Role::kForeground, getpid(), paced ? 2 : unpaced, fg_own->fd);
  auto bg_slot = (*segment)->Allocate(Role::kBackground, getpid(), paced ? 1 : unpaced, bg_own->fd);
  if (!fg_slot.ok() || !bg_slot.ok()) {
    std::fprintf(stderr, "allocate failed\n");
    std::exit(1);
  }
  auto registered = [&](const SlotGrant& grant, const OwnSegment& own, Role role) {
    Registered r;
    r.slot = grant.slot;
    r.gate_path = (*segment)->path();
    r.gate_epoch = (*segment)->epoch();
    r.gate_generation = grant.generation;
    r.gate = (*segment)->descriptor();
    if (role == Role::kBackground) r.foregrounds = (*segment)->Foregrounds();
    r.own_segment = own.mapping;
    return r;
  };
  auto fg_gate =
      LaunchGate::Attach(registered(*fg_slot, *fg_own, Role::kForeground), Role::kForeground);
  auto bg_gate =
      LaunchGate::Attach(registered(*bg_slot, *bg_own, Role::kBackground), Role::kBackground);
  if (!fg_gate.ok() || !bg_gate.ok()) {
    std::fprintf(stderr, "attach failed\n");
    std::exit(1);
  }
  int least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const bool priorities = mode >= Mode::kPriorities;
  cudaStream_t fg_stream, bg_stream;
  CHECK_CUDA(cudaStreamCreateWithPriority(&fg_stream, cudaStreamNonBlocking,
                                          priorities ? greatest : least));
  CHECK_CUDA(cudaStreamCreateWithPriority(&bg_stream, cudaStreamNonBlocking, least));

  std::atomic<bool> stop{false};
  std::atomic<long> bg_done{0};
  std::thread background;
  if (mode != Mode::kAlone) {
    background = std::thread([&] {
      // Completion events of the kernels in flight; a credit returns when its event fires.
      std::vector<cudaEvent_t> pending;
      while (!stop.load()) {
        for (auto it = pending.begin(); it != pending.end();) {
          if (cudaEventQuery(*it) == cudaSuccess) {
            cudaEventDestroy(*it);
            it = pending.erase(it);
            (*bg_gate)->Release();
            bg_done.fetch_add(1);
          } else {
            ++it;
          }
        }
        if (!(*bg_gate)->TryAcquire()) {
          std::this_thread::yield();
          continue;
        }
        // Two 1024-thread blocks per SM fill every SM's thread slots: a foreground block can only
        // start where a background block has finished (the scheduler does not preempt).
        Spin<<<sms * 2, 1024, 0, bg_stream>>>(opt.bg_us * cycles_per_us);
        cudaEvent_t done;
        CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        CHECK_CUDA(cudaEventRecord(done, bg_stream));
        pending.push_back(done);
      }
      CHECK_CUDA(cudaStreamSynchronize(bg_stream));
      for (cudaEvent_t e : pending) {
        cudaEventDestroy(e);
        (*bg_gate)->Release();
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the background fill up
  std::vector<double> latencies;
  const auto t0 = std::chrono::steady_clock::now();
  cudaEvent_t start, end;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&end));
  for (int g = 0; g < opt.groups; ++g) {
    const bool sensitive = mode == Mode::kPause;  // the feedback loop marked every group
    while (!(*fg_gate)->TryAcquire()) std::this_thread::yield();
    if (sensitive) (*fg_gate)->RaisePause();
    CHECK_CUDA(cudaEventRecord(start, fg_stream));
    for (int k = 0; k < 4; ++k) Spin<<<sms, 128, 0, fg_stream>>>(opt.fg_us * cycles_per_us);
    CHECK_CUDA(cudaEventRecord(end, fg_stream));
    CHECK_CUDA(cudaEventSynchronize(end));
    if (sensitive) (*fg_gate)->LowerPause();
    (*fg_gate)->Release();
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
    latencies.push_back(ms * 1e3);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop.store(true);
  if (background.joinable()) background.join();
  std::sort(latencies.begin(), latencies.end());
  Result r;
  r.fg_median_us = latencies[latencies.size() / 2];
  r.fg_p95_us = latencies[latencies.size() * 95 / 100];
  r.bg_kernels_per_s = static_cast<double>(bg_done.load()) / seconds;
  cudaStreamDestroy(fg_stream);
  cudaStreamDestroy(bg_stream);
  return r;
}

// The SM clock rate, measured: one block spinning a known number of cycles, timed by events.
long long CyclesPerMicrosecond() {
  const long long cycles = 20'000'000;
  cudaEvent_t start, end;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&end));
  Spin<<<1, 32>>>(cycles);  // warm-up
  CHECK_CUDA(cudaEventRecord(start));
  Spin<<<1, 32>>>(cycles);
  CHECK_CUDA(cudaEventRecord(end));
  CHECK_CUDA(cudaEventSynchronize(end));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
  return static_cast<long long>(static_cast<double>(cycles) / (ms * 1e3));
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--groups")
      opt.groups = std::atoi(argv[i + 1]);
    else if (flag == "--fg-us")
      opt.fg_us = std::atoi(argv[i + 1]);
    else if (flag == "--bg-us")
      opt.bg_us = std::atoi(argv[i + 1]);
    else if (flag == "--dir")
      opt.dir = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const long long cycles = CyclesPerMicrosecond();
  std::printf(
      "%s, %d SMs, %lld cycles/us; foreground groups of 4 x %d us kernels, background "
      "%d us kernels\n",
      prop.name, prop.multiProcessorCount, cycles, opt.fg_us, opt.bg_us);
  std::printf("%-42s %12s %12s %10s %14s\n", "mode", "fg p50 us", "fg p95 us", "slowdown",
              "bg kernels/s");
  double alone = 0;
  for (Mode mode : {Mode::kAlone, Mode::kShared, Mode::kPriorities, Mode::kPacing, Mode::kPause}) {
    const Result r = Run(mode, opt, prop.multiProcessorCount, cycles);
    if (mode == Mode::kAlone) alone = r.fg_median_us;
    std::printf("%-42s %12.1f %12.1f %9.2fx %14.1f\n", Name(mode), r.fg_median_us, r.fg_p95_us,
                r.fg_median_us / alone, r.bg_kernels_per_s);
  }
  return 0;
}
