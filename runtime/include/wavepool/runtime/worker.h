// wavepool-worker: one process per rank. It reads its Plan, builds the model from the planner's
// graph, meets the other ranks, trains the plan's steps with the executor the plan names, paces
// every launch through the node agent when there is one, checkpoints, and resumes from the last
// checkpoint when it starts again.
//
// Settings come from the environment the controller gives a pod (controller/src/pod_builder.cpp)
// and, for use by hand, from flags of the same meaning, which win:
//   --plan FILE             WAVEPOOL_PLAN               the Plan (JSON or YAML)
//   --rank R                WAVEPOOL_RANK               this process's rank, in [0, world size)
//   --world-size N          WAVEPOOL_WORLD_SIZE         must equal the plan's gpus
//   --store URL             WAVEPOOL_STORE              tcp://HOST:PORT or file://PATH; not needed
//                                                       for a world of one
//   --steps K               (the plan's training.steps) optimizer steps in all
//   --checkpoint-dir DIR    WAVEPOOL_CHECKPOINT_PATH    where checkpoints live; none when unset
//   --agent-dir DIR         WAVEPOOL_AGENT_DIR          the node agent's directory; unpaced when
//   unset
//   --data SOURCE           WAVEPOOL_DATA               synthetic (default), cifar10:DIR, mnist:DIR,
//                                                       imagefolder:DIR
//   --log-every N           (10)                        a progress line every N steps; 0: none
//   --threads N             (LibTorch's default)        intra-op threads
//   --rendezvous-timeout S  (300)                       seconds to wait for every rank
//   --agent-timeout S       (30)                        seconds to wait for the node agent
// and for the agent's registration: WAVEPOOL_NAMESPACE, WAVEPOOL_JOB, WAVEPOOL_POD_NAME (else
// HOSTNAME), WAVEPOOL_ROLE (Foreground | Background), WAVEPOOL_GPU_INDEX,
// WAVEPOOL_MAX_FOREGROUND_SLOWDOWN.
#ifndef WAVEPOOL_RUNTIME_WORKER_H_
#define WAVEPOOL_RUNTIME_WORKER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/enums.h"

namespace wavepool::runtime {

// What the worker's exit status says (docs/runtime.md).
enum class WorkerExit : int {
  kDone = 0,        // every step trained
  kFailed = 1,      // an error inside training (a layer, the optimizer, I/O)
  kUsage = 2,       // a bad flag or environment variable
  kBadInput = 3,    // the plan, model, data or checkpoint cannot be used
  kGangBroken = 4,  // a rank never arrived or a peer was lost: the gang must restart
  kStopped = 143,   // stopped by SIGTERM/SIGINT after checkpointing (128 + SIGTERM)
};

struct WorkerOptions {
  std::string plan_path;
  int rank = 0;
  int world_size = 1;
  std::string store;  // empty: a world of one
  std::optional<std::int64_t> steps;
  std::string checkpoint_dir;
  std::string agent_dir;
  std::string data = "synthetic";
  std::int64_t log_every = 10;
  int threads = 0;
  // Where to train: cpu, cuda, cuda:N or auto (the GPU when LibTorch sees one: in a pod, the one
  // the device plugin gave it).
  std::string device = "auto";
  std::chrono::milliseconds rendezvous_timeout{std::chrono::seconds(300)};
  std::chrono::milliseconds agent_timeout{std::chrono::seconds(30)};
  // Registration with the node agent.
  std::string namespace_name = "default";
  std::string job;
  std::string pod;
  api::Role role = api::Role::kForeground;
  std::uint32_t gpu_index = 0;
  double max_foreground_slowdown = 0;  // 0: the agent's default
};

using Getenv = std::function<std::optional<std::string>(std::string_view name)>;

// Reads the environment, then the flags. InvalidArgument naming the flag or variable and what is
// valid ("--rank: 'x' is not an integer"; "WAVEPOOL_ROLE: 'fg' is not Foreground or
// Background"); --help is NotFound with the usage text as its message.
absl::StatusOr<WorkerOptions> ParseWorkerOptions(const std::vector<std::string>& args,
                                                 const Getenv& getenv);

// Keeps the memory training frees in the process (glibc's malloc otherwise returns every large
// block to the kernel and page-faults it back in at the next step: a fifth of a small model's
// step on the CPU). Process-wide; wavepool-worker calls it first.
void KeepFreedMemoryForReuse();

// Makes SIGTERM and SIGINT ask the worker to stop (instead of killing it): call it first thing,
// so that a stop that comes while the worker starts is not lost. RunWorker installs them too.
void InstallStopHandlers();

// Trains; returns the exit status. Progress lines go to `out` ("step 10/100 loss 2.3012 ..."),
// the one-line reason of a failure to `err`. Installs SIGTERM/SIGINT handlers that stop after
// the current step and checkpoint.
WorkerExit RunWorker(const WorkerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_WORKER_H_
