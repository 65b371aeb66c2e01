// The slowdown feedback loop (deeppool-burst-parallel §5; the artifact's rule in ARTIFACTS.md):
// for each op group of a foreground task, learn its solo duration, follow its duration with the
// background present with an average that rises at once and decays slowly, and mark the group
// sensitive while that average exceeds the job's allowed slowdown. The foreground worker raises
// the gate's pause while it runs a sensitive group, so the background holds its launches; all-reduce
// groups are always sensitive (NCCL slows down more than 2x under collocation); a long blocking
// receive is never sensitive (the background may use the GPU while the foreground waits).
//
// The loop settles into DeepPool's dynamic equilibrium: a sensitive group runs alone, its average
// decays back towards its solo time, the mark is lifted, the background returns, the average jumps
// and the mark comes back. A group whose average stays above the limit with the background paused
// is one the background's long kernels still reach; BackgroundAdvisor turns that into a smaller
// recommended background batch.
//
// Not thread-safe: the agent feeds one task's reports on one thread.
#ifndef WAVEPOOL_AGENT_SLOWDOWN_FEEDBACK_H_
#define WAVEPOOL_AGENT_SLOWDOWN_FEEDBACK_H_

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

struct FeedbackConfig {
  double default_max_slowdown = 1.10;  // when the job does not say
  double decay_weight = 0.1;           // of a new duration at or below the limit
  double solo_weight = 0.2;            // of a new solo duration in the solo average
  int min_solo_samples = 3;            // before a group is judged
  std::uint64_t long_receive_ns = 500'000;  // receives longer than this never pause the background
  double ratio_forgetting = 0.99;      // per observation, for the task's slowdown ratio
};

// InvalidArgument naming the field for weights outside (0, 1], a limit below 1, etc.
absl::Status Validate(const FeedbackConfig& config);

struct SensitivityChange {
  std::uint32_t op_group = 0;
  bool sensitive = false;

  bool operator==(const SensitivityChange& o) const {
    return op_group == o.op_group && sensitive == o.sensitive;
  }
};

class SlowdownFeedback {
 public:
  // REQUIRES: Validate(config).ok(); max_slowdown == 0 (the default) or >= 1.
  SlowdownFeedback(double max_slowdown, const FeedbackConfig& config = {});

  // One completed op group of the foreground task. `background_present`: a background task shared
  // the GPU while it ran (false: the duration is a solo sample). Appends the groups whose
  // sensitivity changed to `changes`.
  void Observe(const OpGroupReport& report, bool background_present,
               std::vector<SensitivityChange>* changes);

  bool IsSensitive(std::uint32_t op_group) const;
  std::size_t SensitiveCount() const;
  double max_slowdown() const { return max_slowdown_; }
  // The learned solo duration of a group (solo samples, or the fastest duration seen while there
  // were too few), nullopt before any sample.
  std::optional<double> SoloNanos(std::uint32_t op_group) const;
  // Recent duration over solo duration, time-weighted over the task's recent groups (1 when
  // nothing is known yet). This is the foreground slowdown the SLO bounds.
  double SlowdownRatio() const;
  // The median solo duration of the task's groups (0 when none is known).
  double MedianSoloNanos() const;

 private:
  struct Group {
    OpKind kind = OpKind::kCompute;
    double solo = 0;  // average of solo samples
    int solo_samples = 0;
    double fastest = 0;  // fastest duration seen (a lower bound on solo)
    double average = 0;  // rises at once, decays slowly
    bool sensitive = false;
  };
  double Solo(const Group& group) const;
  bool Judge(const Group& group, std::uint64_t duration_ns) const;

  double max_slowdown_;
  FeedbackConfig config_;
  std::unordered_map<std::uint32_t, Group> groups_;
  std::size_t sensitive_count_ = 0;
  double ratio_observed_ = 0;  // forgetting sums of durations and of their solo estimates
  double ratio_solo_ = 0;
};

// Recommends a smaller batch for the background tasks of a GPU whose foreground stays above its
// slowdown limit although the feedback loop pauses the background around every sensitive group:
// the background's kernels are then too long for the non-preemptive scheduler (deeppool §5,
// Figure 12). After `patience` consecutive over-limit checks it halves the batch (never below 1)
// and waits another `patience` checks before halving again.
class BackgroundAdvisor {
 public:
  explicit BackgroundAdvisor(int patience = 5) : patience_(patience) {}

  // One periodic check. Returns the batch to recommend, or 0 to keep the current one.
  std::uint32_t Check(double foreground_slowdown, double max_slowdown,
                      std::uint32_t background_batch);

 private:
  int patience_;
  int over_ = 0;
  std::uint32_t recommended_ = 0;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_SLOWDOWN_FEEDBACK_H_
