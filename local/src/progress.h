// What local mode shows while jobs train: the workers' progress lines parsed, one bar per job on
// a terminal, timestamped lines otherwise, and warnings as they happen.
#ifndef WAVEPOOL_LOCAL_SRC_PROGRESS_H_
#define WAVEPOOL_LOCAL_SRC_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "wavepool/agent/agent.h"
#include "wavepool/base/clock.h"

namespace wavepool::local {

// One progress line of wavepool-worker (docs/runtime.md, "The worker"):
//   step 10/100 loss 2.34336019 samples/s 2314.2 iteration 0.0138 s (compute 0.0119, transfer
//   0.0000, all-reduce 0.0003, data 0.0005)[ tick| tock]
struct StepLine {
  std::int64_t step = 0;  // 1-based, as printed
  std::int64_t steps = 0;
  double loss = 0;
  double samples_per_second = 0;
  double iteration_seconds = 0;
  double compute_seconds = 0, transfer_seconds = 0, allreduce_seconds = 0, data_seconds = 0;
  std::string wave;  // "tick", "tock" or empty
};

// nullopt for any other line.
std::optional<StepLine> ParseStepLine(std::string_view line);

// A job as the display shows it.
struct JobView {
  std::string name;
  bool background = false;
  std::int64_t steps = 0;
  std::int64_t step = 0;
  double loss = 0;
  double samples_per_second = 0;
  double eta_seconds = -1;    // unknown: -1
  double slowdown = 0;        // foreground: the agent's measured slowdown; 0 unknown
  double slowdown_limit = 0;  // foreground: the SLO
  // starting, training, done, failed, stopped; a background job waits first, "waiting for the
  // foreground", until the foreground on its GPUs trains (start_order.h).
  std::string state = "starting";
};

// The agent's measured slowdown of each foreground job in `status`, by "namespace/job": the
// greatest over the job's ranks. Its SLO binds every rank, and only a rank beside a background
// task slows down, so the job's other ranks must not hide it.
std::map<std::string, double> ForegroundSlowdowns(const agent::AgentStatus& status);

// Not synchronised: one thread updates it. Borrows `out` and `clock`, which must outlive it.
class ProgressDisplay {
 public:
  // `clock` paces the redraws and gives the lines their wall-clock timestamps.
  ProgressDisplay(std::ostream& out, bool tty, const Clock& clock);

  // Redraws the bars (at most 10 times a second), or prints a line for a job whose state
  // changed, that passed another tenth of its steps, or was last shown 10 s ago (by `clock`).
  void Update(const std::vector<JobView>& jobs);
  // A line of its own, above the bars.
  void Note(const std::string& line);
  // The final state of every job, drawn once more.
  void Finish(const std::vector<JobView>& jobs);

 private:
  void Redraw(const std::vector<JobView>& jobs);
  std::string Bar(const JobView& job) const;
  std::string Line(const JobView& job) const;
  std::string Timestamp() const;

  std::ostream& out_;
  const bool tty_;
  const Clock& clock_;
  int drawn_lines_ = 0;
  // nullopt: the bars are not on the screen as last drawn (none yet, or a note moved them).
  std::optional<MonotonicTime> last_redraw_;
  struct Shown {
    std::string state;
    std::int64_t step = 0;
    MonotonicTime at{};
  };
  std::map<std::string, Shown> shown_;
};

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_PROGRESS_H_
