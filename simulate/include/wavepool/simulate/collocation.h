// A foreground GPU shared with a background job, in steady state: how much the foreground slows
// down and how fast the background trains. Built from the node agent's own code, not a copy:
//  - the simulated GPU's interference model (agent/simulated_gpu.h: ForegroundSlowdown,
//    BackgroundSlowdown) gives the slowdown of a foreground op group that runs beside the
//    background, S_f, and the background's, S_b, from the two jobs' kernel lengths (their plans'
//    mean layer times) and SM shares;
//  - the slowdown feedback loop (agent/slowdown_feedback.h, SlowdownFeedback) is run on a stream
//    of such groups until it settles into DeepPool's dynamic equilibrium (deeppool-burst-parallel
//    §5): while a group's average exceeds the SLO it is sensitive and the background pauses
//    around it; the share of groups that still run beside the background is what the loop lets
//    through.
//
// On one GPU of a gang whose solo iteration is T and whose plan keeps the GPU busy a share u of
// it, with the gang's iteration stretched by sigma (>= this GPU's group slowdown sigma_g):
//   foreground busy time   sigma_g * u * T, of which a share c_t runs beside the background;
//   background progress    (sigma * T - sigma_g * u * T) alone at rate 1, plus
//                          c_t * sigma_g * u * T at rate 1 / (1 + S_b),
// per stretched iteration sigma * T. A gang runs as fast as its slowest GPU (every rank meets at
// the gradient all-reduce and the stage transfers), so sigma is the largest sigma_g of its GPUs.
//
// A CollocationModel is not thread-safe (it caches equilibria); a plain value otherwise.
#ifndef WAVEPOOL_SIMULATE_COLLOCATION_H_
#define WAVEPOOL_SIMULATE_COLLOCATION_H_

#include <map>
#include <tuple>

#include "absl/status/status.h"
#include "wavepool/agent/simulated_gpu.h"
#include "wavepool/agent/slowdown_feedback.h"
#include "wavepool/simulate/job_costs.h"

namespace wavepool::simulate {

struct CollocationOptions {
  agent::InterferenceModel interference;  // the simulated GPU's defaults
  agent::FeedbackConfig feedback;         // the agent's defaults
  // Share of the SMs each role's kernels hold (the simulated GPU's `intensity`), in (0, 1]. 1:
  // kernels fill the GPU, the case where sharing costs the most.
  double foreground_intensity = 1.0;
  double background_intensity = 1.0;
};

// InvalidArgument naming the field for intensities outside (0, 1], negative model parameters, a
// priority factor outside [0, 1], or a FeedbackConfig agent::Validate rejects.
absl::Status Validate(const CollocationOptions& options);

// The feedback loop's steady state for one op group slowed by `unprotected` (S_f) beside the
// background under the SLO `max_slowdown`.
struct FeedbackEquilibrium {
  double collocated_share = 0;       // of the groups, those run beside the background
  double collocated_time_share = 0;  // of the foreground's busy time
  double group_slowdown = 1;         // sigma_g: busy time over solo busy time (>= 1)
};

// The steady state of one shared GPU.
struct SharedGpu {
  double foreground_group_slowdown = 0;  // S_f
  double background_group_slowdown = 0;  // S_b
  FeedbackEquilibrium equilibrium;
};

class CollocationModel {
 public:
  // REQUIRES: Validate(options).ok().
  explicit CollocationModel(const CollocationOptions& options);

  // Runs agent::SlowdownFeedback on a stream of one group: its solo samples, then, beside the
  // background, a duration of solo x (1 + unprotected) whenever the group is not sensitive and of
  // solo when it is (the background paused), until the loop repeats itself; the shares are
  // measured over whole cycles. Cached by argument.
  // REQUIRES: unprotected >= 0, max_slowdown >= 1.
  const FeedbackEquilibrium& Equilibrium(double unprotected, double max_slowdown);

  // Foreground `fg` and background `bg` sharing one GPU, the foreground under `max_slowdown`.
  // S_f = ForegroundSlowdown(B = background intensity, k_f = fg.layer_seconds,
  // k_b = bg.layer_seconds, high priority), S_b = BackgroundSlowdown(F = foreground intensity).
  SharedGpu Share(const JobCost& fg, const JobCost& bg, double max_slowdown);

  // The background's progress as a share of its solo rate on a GPU whose foreground plan keeps it
  // busy `busy_fraction` of a solo iteration, when the gang runs `gang_slowdown` (sigma) slower.
  // REQUIRES: gang_slowdown >= shared.equilibrium.group_slowdown.
  static double BackgroundRate(const SharedGpu& shared, double busy_fraction, double gang_slowdown);

 private:
  CollocationOptions options_;
  std::map<std::pair<double, double>, FeedbackEquilibrium> equilibria_;
};

}  // namespace wavepool::simulate

#endif  // WAVEPOOL_SIMULATE_COLLOCATION_H_
