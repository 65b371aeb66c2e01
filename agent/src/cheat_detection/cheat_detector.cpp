#include "wavepool/agent/cheat_detector.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/seconds.h"

namespace wavepool::agent {

absl::Status Validate(const CheatDetectorOptions& o) {
  if (!(o.sm_threshold >= 0 && o.sm_threshold < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cheat sm_threshold: must be in [0, 1), got ", o.sm_threshold));
  }
  if (o.flag_after < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cheat flag_after: must be >= 1, got ", o.flag_after));
  }
  if (o.quiet_period.count() <= 0 || o.drain.count() < 0 || o.history < o.drain) {
    return absl::InvalidArgumentError(
        "cheat quiet_period: must be > 0; drain: >= 0 and no longer than history");
  }
  return absl::OkStatus();
}

CheatDetector::CheatDetector(CheatDetectorOptions options) : options_(std::move(options)) {}

void CheatDetector::ObserveGate(std::int32_t pid, const GateView& view) {
  Process& process = processes_[pid];
  if (!process.gate.empty() && view.time < process.gate.back().time) return;
  process.gate.push_back(view);
  Prune(process);
}

void CheatDetector::Prune(Process& process) const {
  // The next interval starts at the last sample and looks `drain` further back: keep the newest
  // reading at or before that, and never more than `history` (samples that stopped coming, a GPU
  // that fell off, must not grow the readings without bound).
  const MonotonicTime newest = process.gate.back().time;
  MonotonicTime keep_from = newest - options_.history;
  if (process.last_sample) keep_from = std::max(keep_from, *process.last_sample - options_.drain);
  while (process.gate.size() > 1 && process.gate[1].time <= keep_from) process.gate.pop_front();
}

CheatKind CheatDetector::Judge(const Process& process, MonotonicTime from, MonotonicTime to) const {
  const MonotonicTime start = from - options_.drain;
  // The reading in force at `start`: the newest at or before it. Without one the gate's state
  // over the interval is unknown, and unknown is never suspicious.
  auto first_after =
      std::upper_bound(process.gate.begin(), process.gate.end(), start,
                       [](MonotonicTime t, const GateView& view) { return t < view.time; });
  if (first_after == process.gate.begin()) return CheatKind::kNone;
  auto last_in =
      std::upper_bound(process.gate.begin(), process.gate.end(), to,
                       [](MonotonicTime t, const GateView& view) { return t < view.time; });
  const GateView& at_start = *std::prev(first_after);
  bool paused = true, no_credit = true;
  for (auto it = std::prev(first_after); it != last_in; ++it) {
    paused = paused && it->paused;
    no_credit = no_credit && (it->credit_limit <= 0 || it->in_flight == 0);
  }
  const GateView& at_end = *std::prev(last_in);
  // A credit granted since the interval (and its drain) began: the gate let it launch. A hold
  // raised at every reading may still have had gaps between readings, in which an honest worker
  // acquires credits; so a pause alone is not proof.
  if (at_end.acquired_total != at_start.acquired_total) return CheatKind::kNone;
  if (paused) return CheatKind::kWhilePaused;
  // None held either: every launch of the interval went around the gate.
  if (no_credit) return CheatKind::kWithoutCredits;
  return CheatKind::kNone;
}

CheatTransition CheatDetector::ObserveUtilization(MonotonicTime time, std::int32_t pid, Role role,
                                                  double sm_utilization) {
  if (role != Role::kBackground) {
    processes_.erase(pid);
    return CheatTransition::kNone;
  }
  Process& process = processes_[pid];
  const std::optional<MonotonicTime> from = process.last_sample;
  if (from && time <= *from) return CheatTransition::kNone;
  process.last_sample = time;
  if (!from) return CheatTransition::kNone;
  const CheatKind kind =
      sm_utilization > options_.sm_threshold ? Judge(process, *from, time) : CheatKind::kNone;
  if (!process.gate.empty()) Prune(process);
  CheatVerdict& verdict = process.verdict;
  if (kind != CheatKind::kNone) {
    ++process.consecutive;
    process.last_suspicious = time;
    verdict.kind = kind;
    verdict.reason = absl::StrFormat(
        "SM utilisation %.2f over %.1f s %s", sm_utilization, Seconds(time - *from).count(),
        kind == CheatKind::kWhilePaused ? "while the launch gate held it paused"
                                        : "with no launch credit granted by the gate");
    if (!verdict.cheating && process.consecutive >= options_.flag_after) {
      verdict.cheating = true;
      ++verdict.detections;
      return CheatTransition::kFlagged;
    }
    return CheatTransition::kNone;
  }
  process.consecutive = 0;
  if (verdict.cheating &&
      (!process.last_suspicious || time - *process.last_suspicious >= options_.quiet_period)) {
    verdict.cheating = false;
    return CheatTransition::kCleared;
  }
  return CheatTransition::kNone;
}

void CheatDetector::Forget(std::int32_t pid) { processes_.erase(pid); }

bool CheatDetector::Cheating(std::int32_t pid) const {
  auto it = processes_.find(pid);
  return it != processes_.end() && it->second.verdict.cheating;
}

std::optional<CheatVerdict> CheatDetector::Verdict(std::int32_t pid) const {
  auto it = processes_.find(pid);
  if (it == processes_.end() || !it->second.last_sample) return std::nullopt;
  return it->second.verdict;
}

}  // namespace wavepool::agent
