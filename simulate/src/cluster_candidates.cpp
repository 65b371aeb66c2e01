// The nodes a placement decision needs to see (cluster.h, "Scale"). Each function follows the
// order controller/src/placement.cpp and placement_background.cpp decide by, so that the node
// holding the whole inventory's answer is always among the candidates; placement itself still
// makes the decision.
#include <algorithm>
#include <array>
#include <tuple>
#include <vector>

#include "wavepool/simulate/cluster.h"

namespace wavepool::simulate {

// A node's GPUs without a foreground job, for one foreground request, by what taking each costs
// (placement's FgCandidate order: preempted pods, then background pods left beside, then index).
struct SimulatedCluster::NodeFit {
  int clean = 0;     // no background pod
  int cotenant = 0;  // a background pod that stays (it fits beside the foreground)
  int preempt = 0;   // a background pod that must go (exclusive request, or memory)
  int free() const { return clean + cotenant + preempt; }
  // placement's NodeCandidates::Cost(n) (with no progress at risk) and the node's size: the
  // order in which ChooseNodes' best fit compares nodes.
  std::tuple<int, int, int> Key(int n) const {
    const int from_clean = std::min(n, clean);
    const int beside = std::min(n - from_clean, cotenant);
    return {n - from_clean - beside, beside, free()};
  }
};

SimulatedCluster::NodeFit SimulatedCluster::FitOf(int node, planner::Bytes memory,
                                                  bool exclusive) const {
  const planner::Bytes available = shape_.gpu_memory_bytes - margin_bytes_;
  NodeFit fit;
  for (int i = 0; i < shape_.gpus_per_node; ++i) {
    const GpuId g = node * shape_.gpus_per_node + i;
    if (foreground_[g] != kNoJob || memory > available) continue;
    if (background_[g] == kNoJob) {
      ++fit.clean;
    } else if (exclusive || memory + background_bytes_[g] > available) {
      ++fit.preempt;
    } else {
      ++fit.cotenant;
    }
  }
  return fit;
}

std::vector<int> SimulatedCluster::ForegroundCandidates(std::int64_t gpus, planner::Bytes memory,
                                                        bool exclusive) const {
  if (gpus < 1 || gpus > free_for_foreground_) return {};
  const int n = static_cast<int>(gpus);
  std::vector<NodeFit> fits(shape_.nodes);
  for (int node = 0; node < shape_.nodes; ++node) {
    if (node_free_[node] > 0) fits[node] = FitOf(node, memory, exclusive);
  }
  // The best nodes for `need` GPUs among those not excluded, best first: (key, node).
  using Ranked = std::pair<std::tuple<int, int, int>, int>;
  auto best_fits = [&](int need, const std::vector<char>& excluded, std::size_t keep) {
    std::vector<Ranked> best;
    for (int node = 0; node < shape_.nodes; ++node) {
      if (fits[node].free() < need || excluded[node]) continue;
      const Ranked r{fits[node].Key(need), node};
      if (best.size() == keep && !(r < best.back())) continue;
      best.insert(std::upper_bound(best.begin(), best.end(), r), r);
      if (best.size() > keep) best.pop_back();
    }
    return best;
  };
  std::vector<char> taken(shape_.nodes, 0);
  std::vector<int> nodes;
  for (const Ranked& r : best_fits(n, taken, 4)) nodes.push_back(r.second);
  if (nodes.empty()) {
    // Several nodes: the largest first (ties by name) while they do not finish the gang, then the
    // node where that run stops and the best fit for what is left.
    std::vector<std::vector<int>> by_free(shape_.gpus_per_node + 1);
    for (int node = 0; node < shape_.nodes; ++node) by_free[fits[node].free()].push_back(node);
    int placed = 0;
    for (int free = shape_.gpus_per_node; free >= 1 && nodes.empty(); --free) {
      for (int node : by_free[free]) {
        if (placed + free >= n) {
          nodes.push_back(node);
          break;
        }
        taken[node] = 1;
        placed += free;
      }
    }
    if (nodes.empty()) return {};  // fewer usable GPUs than free ones (memory)
    for (const Ranked& r : best_fits(n - placed, taken, 1)) nodes.push_back(r.second);
    for (int node = 0; node < shape_.nodes; ++node) {
      if (taken[node]) nodes.push_back(node);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

std::vector<int> SimulatedCluster::BackgroundCandidates(planner::Bytes memory) const {
  if (open_for_background_ == 0) return {};
  // placement_background.cpp's score: shared with a foreground (when preferred), the foreground's
  // idle share (1 on an empty GPU), memory headroom; the first best GPU in (node, index) order.
  using Score = std::tuple<bool, double, planner::Bytes>;
  GpuId best = -1, second = -1;  // second: the best GPU on another node than `best`
  Score best_score, second_score;
  for (GpuId g = 0; g < gpu_count(); ++g) {
    if (!Admits(g)) continue;
    const bool shared = foreground_[g] != kNoJob;
    const planner::Bytes headroom =
        shape_.gpu_memory_bytes - (shared ? terms_[g].memory_per_gpu_bytes : 0) - margin_bytes_;
    if (memory > headroom) continue;
    const Score score{shared && options_.prefer_shared_gpus, shared ? terms_[g].idle_fraction : 1.0,
                      headroom};
    if (best < 0 || score > best_score) {
      if (best >= 0 && NodeOf(best) != NodeOf(g)) {
        second = best;
        second_score = best_score;
      }
      best = g;
      best_score = score;
    } else if (NodeOf(g) != NodeOf(best) && (second < 0 || score > second_score)) {
      second = g;
      second_score = score;
    }
  }
  if (best < 0) return {};
  std::vector<int> nodes = {NodeOf(best)};
  if (second >= 0 && NodeOf(second) != NodeOf(best)) nodes.push_back(NodeOf(second));
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

}  // namespace wavepool::simulate
