#include "start_order.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace wavepool::local {
namespace {

bool HasGpu(const std::vector<std::uint32_t>& gpus, std::uint32_t gpu) {
  return std::find(gpus.begin(), gpus.end(), gpu) != gpus.end();
}

// Whether the agent lists a foreground task of process `pid` on GPU `gpu`.
bool RegisteredForeground(const agent::AgentStatus& status, std::uint32_t gpu, pid_t pid) {
  for (const agent::GpuStatus& g : status.gpus) {
    if (g.info.index != gpu) continue;
    for (const agent::TaskStatus& t : g.tasks) {
      if (t.role == agent::Role::kForeground && t.pid == pid) return true;
    }
  }
  return false;
}

// Whether every rank of `foreground` on one of `gpus` is registered.
bool RanksRegistered(const LocalJob& foreground, const JobWorkers& workers,
                     const std::vector<std::uint32_t>& gpus, const agent::AgentStatus& status) {
  for (std::size_t rank = 0; rank < foreground.gpus.size(); ++rank) {
    const std::uint32_t gpu = foreground.gpus[rank];
    if (!HasGpu(gpus, gpu)) continue;
    if (rank >= workers.pids.size() || !RegisteredForeground(status, gpu, workers.pids[rank])) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<std::size_t> ForegroundsSharingGpus(const std::vector<LocalJob>& jobs,
                                                std::size_t background) {
  std::vector<std::size_t> sharing;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].background()) continue;
    const bool shares = std::any_of(jobs[background].gpus.begin(), jobs[background].gpus.end(),
                                    [&](std::uint32_t gpu) { return HasGpu(jobs[i].gpus, gpu); });
    if (shares) sharing.push_back(i);
  }
  return sharing;
}

std::vector<AwaitedForeground> AwaitForegrounds(const std::vector<LocalJob>& jobs,
                                                const std::vector<JobWorkers>& workers,
                                                std::size_t background,
                                                const agent::AgentStatus& status) {
  std::vector<AwaitedForeground> awaited;
  for (const std::size_t i : ForegroundsSharingGpus(jobs, background)) {
    AwaitedForeground f;
    f.job = i;
    // Registered first: a worker that just exited may still be listed, and it did train.
    if (RanksRegistered(jobs[i], workers[i], jobs[background].gpus, status)) {
      f.progress = ForegroundProgress::kRegistered;
    } else if (workers[i].exited) {
      f.progress = ForegroundProgress::kExited;
    }
    awaited.push_back(f);
  }
  return awaited;
}

bool MayStart(const std::vector<AwaitedForeground>& awaited) {
  return std::none_of(awaited.begin(), awaited.end(), [](const AwaitedForeground& f) {
    return f.progress == ForegroundProgress::kNotRegistered;
  });
}

std::string StartNote(const std::vector<LocalJob>& jobs, const std::vector<JobWorkers>& workers,
                      std::size_t background, const std::vector<AwaitedForeground>& awaited) {
  const std::vector<std::uint32_t>& gpus = jobs[background].gpus;
  std::vector<std::string> clauses;
  for (const AwaitedForeground& f : awaited) {
    const std::string& name = jobs[f.job].key;
    if (f.progress == ForegroundProgress::kRegistered) {
      clauses.push_back(absl::StrCat(name, " registered with the agent"));
    } else if (workers[f.job].failed) {
      clauses.push_back(absl::StrCat(name,
                                     " failed before it registered with the agent; the "
                                     "background trains without it"));
    } else {
      clauses.push_back(absl::StrCat(name, " finished before it was seen registered"));
    }
  }
  return absl::StrCat(jobs[background].key, " starts after waiting for the foreground on ",
                      gpus.size() == 1 ? "GPU " : "GPUs ", absl::StrJoin(gpus, ", "), ": ",
                      absl::StrJoin(clauses, "; "));
}

}  // namespace wavepool::local
