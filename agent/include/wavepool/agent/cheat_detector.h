// Detects a background worker that launches GPU work the launch gate did not allow. The gate is
// cooperative (wavepool/agent/client/gate_layout.h): a process can launch kernels without asking
// it, so the agent checks what each background process did (NVML per-process SM utilisation)
// against what the gate let it do over the same interval, from `drain` before it began (kernels
// launched just before a pause may still run):
//   * paused: the gate held it paused at every reading of the span (its slot paused, a
//     foreground hold raised or the background stop set) and granted it no credit (its
//     acquired_total did not grow: readings are 100 ms apart, and an honest worker may launch
//     in a short gap of the hold between two of them), yet it used the SMs;
//   * without credits: not paused, but the gate granted it no credit and it held none (nothing
//     in flight, or a credit limit of 0), yet it used the SMs.
// Either makes a utilisation sample suspicious when its SM share exceeds `sm_threshold`.
// Hysteresis: `flag_after` consecutive suspicious samples flag the process; it is cleared once no
// suspicious sample was seen for `quiet_period`. Foreground processes are never judged (the gate
// never pauses them, and they may run unpaced when the agent is gone).
//
// A pure class fed by the agent's loops: gate readings (ObserveGate, at the control rate) and
// utilisation samples (ObserveUtilization, at the telemetry rate), both stamped with the agent's
// monotonic clock; unit-testable without NVML. Not thread-safe: the agent calls it under its lock.
#ifndef WAVEPOOL_AGENT_CHEAT_DETECTOR_H_
#define WAVEPOOL_AGENT_CHEAT_DETECTOR_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/base/clock.h"

namespace wavepool::agent {

struct CheatDetectorOptions {
  double sm_threshold = 0.05;  // SM share (0..1) above which use counts; NVML noise is below
  int flag_after = 3;          // consecutive suspicious samples before flagging, >= 1
  std::chrono::nanoseconds quiet_period = std::chrono::seconds(10);  // to clear a flag, > 0
  // How long work launched before a pause may keep running (one kernel's length, generously).
  std::chrono::nanoseconds drain = std::chrono::milliseconds(200);
  // At most this much of a process's gate readings is kept (>= drain).
  std::chrono::nanoseconds history = std::chrono::seconds(30);
};
// InvalidArgument naming the option.
absl::Status Validate(const CheatDetectorOptions& options);

// What the gate said about one process's slot at one moment (the control segment's state and the
// slot's counters; the counters are the worker's, clamped, and only ever used to clear it).
struct GateView {
  MonotonicTime time;
  // Slot paused, a foreground hold raised or the background stop set.
  bool paused = false;
  std::int32_t credit_limit = 0;
  std::int32_t in_flight = 0;
  std::uint64_t acquired_total = 0;
};

enum class CheatKind { kNone, kWhilePaused, kWithoutCredits };

struct CheatVerdict {
  bool cheating = false;
  CheatKind kind = CheatKind::kNone;  // of the last suspicious sample
  std::string reason;                 // e.g. "SM utilisation 0.62 while the gate held it paused"
  std::int64_t detections = 0;        // times this process was flagged
};

// What one utilisation sample changed.
enum class CheatTransition { kNone, kFlagged, kCleared };

class CheatDetector {
 public:
  // REQUIRES: Validate(options).ok().
  explicit CheatDetector(CheatDetectorOptions options);

  // Records the gate's view of background process `pid` at view.time. Readings of one pid
  // arrive in time order; an older one is ignored.
  void ObserveGate(std::int32_t pid, const GateView& view);
  // Judges `pid`'s SM share over (its previous sample, time]. The first sample of a pid only
  // starts its interval. A foreground role forgets the pid and is never flagged.
  CheatTransition ObserveUtilization(MonotonicTime time, std::int32_t pid, Role role,
                                     double sm_utilization);
  // The process ended or left its slot: its state goes.
  void Forget(std::int32_t pid);

  bool Cheating(std::int32_t pid) const;
  // nullopt for a pid the detector has never judged.
  std::optional<CheatVerdict> Verdict(std::int32_t pid) const;

 private:
  struct Process {
    std::deque<GateView> gate;  // time ascending
    std::optional<MonotonicTime> last_sample;
    int consecutive = 0;
    std::optional<MonotonicTime> last_suspicious;
    CheatVerdict verdict;
  };
  // Why the interval (from, to] was not allowed to use the SMs, or kNone.
  CheatKind Judge(const Process& process, MonotonicTime from, MonotonicTime to) const;
  void Prune(Process& process) const;

  const CheatDetectorOptions options_;
  std::map<std::int32_t, Process> processes_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CHEAT_DETECTOR_H_
