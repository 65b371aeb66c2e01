// The order in which a local run starts its jobs' workers. The cluster's controller places
// foreground jobs first and a background job beside a foreground that already trains; a local run
// does the same: every foreground job starts at once, and a background job's workers start once
// every foreground job with a rank on one of its GPUs has registered that rank with the agent, or
// has no worker left (it failed or finished: a background job never waits for ever). A background
// job that shares no GPU with a foreground job starts at once.
//
// Pure functions of the jobs, what the run knows of their workers and the agent's status.
#ifndef WAVEPOOL_LOCAL_SRC_START_ORDER_H_
#define WAVEPOOL_LOCAL_SRC_START_ORDER_H_

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "local_jobs.h"
#include "wavepool/agent/agent.h"

namespace wavepool::local {

// What the run knows of one job's workers.
struct JobWorkers {
  std::vector<pid_t> pids;  // by rank; empty until they started
  bool exited = false;      // they started and every one has exited
  bool failed = false;      // exited, and a rank exited non-zero
};

// How far a foreground job that a background job waits for got.
enum class ForegroundProgress {
  kNotRegistered,  // a rank on a shared GPU is not a foreground task of the agent there yet
  kRegistered,     // every rank on a shared GPU is: it trains, the background may join it
  kExited,         // every worker exited before all of them were seen registered
};

// A foreground job that a background job waits for.
struct AwaitedForeground {
  std::size_t job = 0;  // index into the run's jobs
  ForegroundProgress progress = ForegroundProgress::kNotRegistered;
};

// The foreground jobs with a rank on one of `jobs[background]`'s GPUs, in the jobs' order.
// REQUIRES: jobs[background].background().
std::vector<std::size_t> ForegroundsSharingGpus(const std::vector<LocalJob>& jobs,
                                                std::size_t background);

// Those foreground jobs, each with how far it got: a rank is registered when `status` lists a
// foreground task on the rank's GPU whose pid is the rank's worker's. `workers` is by job index.
// REQUIRES: jobs[background].background(); workers.size() == jobs.size().
std::vector<AwaitedForeground> AwaitForegrounds(const std::vector<LocalJob>& jobs,
                                                const std::vector<JobWorkers>& workers,
                                                std::size_t background,
                                                const agent::AgentStatus& status);

// True when no foreground in `awaited` holds the background back (kNotRegistered); true for
// none.
bool MayStart(const std::vector<AwaitedForeground>& awaited);

// The line a run notes when `jobs[background]` starts after waiting for `awaited`, e.g.
// "team-a/sweep starts after waiting for the foreground on GPU 0: team-a/train registered with
// the agent", or, for a foreground that failed first, "... team-a/train failed before it
// registered with the agent; the background trains without it".
// REQUIRES: MayStart(awaited); awaited is not empty.
std::string StartNote(const std::vector<LocalJob>& jobs, const std::vector<JobWorkers>& workers,
                      std::size_t background, const std::vector<AwaitedForeground>& awaited);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_START_ORDER_H_
