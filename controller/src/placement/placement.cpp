// Foreground gang and background pod placement (placement.h states the policy).
#include "wavepool/controller/placement.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "wavepool/base/plural.h"

namespace wavepool::controller {
namespace {

using Gpu = Inventory::Gpu;

std::string GiB(Bytes bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / static_cast<double>(1LL << 30));
}

// Why a GPU cannot take a fg rank; counted for the Placed=False message.
enum class Unusable { kNodeNotSchedulable, kForegroundHolder, kMemory };

// A GPU that can take a fg rank and the bg pods that must leave it first.
struct FgCandidate {
  std::size_t gpu = 0;
  std::vector<std::size_t> preempt;  // Indexes for Inventory::assignment().
  double loss_seconds = 0;           // Progress the preempted pods lose.
  std::size_t cotenants = 0;         // Bg pods that stay and share the GPU.
};

// Ordering of GPUs for a fg rank: fewest pods preempted, then least progress lost, then fewest bg
// pods left beside it (each one slows the fg job a little, deeppool-burst-parallel §5), then index
// (then the inventory's order, which makes the order total).
bool CheaperThan(const FgCandidate& a, const FgCandidate& b, const Inventory& inv) {
  return std::make_tuple(a.preempt.size(), a.loss_seconds, a.cotenants, inv.gpus()[a.gpu].index,
                         a.gpu) < std::make_tuple(b.preempt.size(), b.loss_seconds, b.cotenants,
                                                  inv.gpus()[b.gpu].index, b.gpu);
}

// The bg pods on `gpu` to stop so that `need` bytes fit: all of them for an exclusive job,
// otherwise the subset with the fewest pods, then the least progress at risk (exhaustive: a GPU
// holds PlacementOptions::max_background_per_gpu pods, one by default; greedy beyond 12).
std::optional<std::vector<std::size_t>> ChooseVictims(const Inventory& inv, const Gpu& gpu,
                                                      Bytes need, bool exclusive) {
  Bytes declared = 0;
  for (std::size_t h : gpu.holders) declared += inv.assignment(h).memory_per_gpu_bytes;
  // Usage the agent saw beyond what the pods declared stays after any preemption.
  const Bytes undeclared = std::max<Bytes>(0, gpu.observed_peak_bytes - declared);
  const Bytes available = gpu.memory_bytes - inv.MarginBytes(gpu) - undeclared;
  if (need > available) return std::nullopt;
  // Stopping none is the cheapest choice when the job fits beside them all.
  if (gpu.holders.empty() || (!exclusive && need + declared <= available)) {
    return std::vector<std::size_t>{};
  }
  // By pod name, so that equal-cost choices do not depend on the order pods were recorded in.
  std::vector<std::size_t> bg = gpu.holders;
  std::sort(bg.begin(), bg.end(), [&](std::size_t x, std::size_t y) {
    return inv.assignment(x).pod < inv.assignment(y).pod;
  });
  if (exclusive) return bg;
  auto mem = [&](std::size_t h) { return inv.assignment(h).memory_per_gpu_bytes; };
  auto loss = [&](std::size_t h) { return inv.assignment(h).progress_at_risk.count(); };
  if (bg.size() > 12) {  // Largest first frees the memory with the fewest pods.
    std::sort(bg.begin(), bg.end(), [&](std::size_t a, std::size_t b) {
      return std::make_tuple(-mem(a), loss(a), a) < std::make_tuple(-mem(b), loss(b), b);
    });
    std::vector<std::size_t> victims;
    Bytes kept = declared;
    for (std::size_t h : bg) {
      if (need + kept <= available) break;
      victims.push_back(h);
      kept -= mem(h);
    }
    return victims;
  }
  std::optional<std::vector<std::size_t>> best;
  double best_loss = 0;
  for (unsigned mask = 0; mask < (1U << bg.size()); ++mask) {
    std::vector<std::size_t> victims;
    Bytes kept = declared;
    double lost = 0;
    for (std::size_t i = 0; i < bg.size(); ++i) {
      if ((mask & (1U << i)) == 0) continue;
      victims.push_back(bg[i]);
      kept -= mem(bg[i]);
      lost += loss(bg[i]);
    }
    if (need + kept > available) continue;
    if (!best || std::make_pair(victims.size(), lost) < std::make_pair(best->size(), best_loss)) {
      best = std::move(victims);
      best_loss = lost;
    }
  }
  return best;
}

struct NodeCandidates {
  std::string_view node;               // The inventory's.
  absl::Span<const FgCandidate> gpus;  // Cheapest first; in Survey::candidates.
  // Preempted pods, lost progress and bg co-tenants if the first `n` GPUs are taken.
  std::tuple<std::size_t, double, std::size_t> Cost(std::size_t n) const {
    std::tuple<std::size_t, double, std::size_t> cost{0, 0, 0};
    for (std::size_t i = 0; i < n && i < gpus.size(); ++i) {
      std::get<0>(cost) += gpus[i].preempt.size();
      std::get<1>(cost) += gpus[i].loss_seconds;
      std::get<2>(cost) += gpus[i].cotenants;
    }
    return cost;
  }
};

struct Survey {
  std::vector<FgCandidate> candidates;  // Node after node, in the inventory's order.
  std::vector<NodeCandidates> nodes;    // Nodes with at least one usable GPU, by name.
  std::map<Unusable, int> unusable;
};

// Looks at the open GPUs alone: the others hold a fg pod (never preempted; one fg job per GPU)
// or are not schedulable, and are only counted.
Survey SurveyForeground(const ForegroundRequest& request, const Inventory& inv) {
  Survey survey;
  survey.unusable[Unusable::kNodeNotSchedulable] = static_cast<int>(inv.unschedulable_gpus());
  survey.unusable[Unusable::kForegroundHolder] = static_cast<int>(inv.foreground_held_gpus());
  int too_little_memory = 0;
  std::vector<std::size_t> node_starts;  // Into candidates.
  for (std::size_t i = 0; i < inv.gpus().size(); ++i) {
    if (!inv.IsOpen(i)) continue;
    const Gpu& gpu = inv.gpus()[i];
    std::optional<std::vector<std::size_t>> victims =
        ChooseVictims(inv, gpu, request.memory_per_gpu_bytes, request.exclusive);
    if (!victims.has_value()) {
      ++too_little_memory;
      continue;
    }
    FgCandidate candidate{i, std::move(*victims), 0, 0};
    candidate.cotenants = gpu.holders.size() - candidate.preempt.size();
    for (std::size_t v : candidate.preempt) {
      candidate.loss_seconds += inv.assignment(v).progress_at_risk.count();
    }
    if (survey.nodes.empty() || survey.nodes.back().node != gpu.node) {
      survey.nodes.push_back({gpu.node, {}});
      node_starts.push_back(survey.candidates.size());
    }
    survey.candidates.push_back(std::move(candidate));
  }
  survey.unusable[Unusable::kMemory] = too_little_memory;
  node_starts.push_back(survey.candidates.size());
  for (std::size_t n = 0; n < survey.nodes.size(); ++n) {
    const auto first = survey.candidates.begin() + static_cast<std::ptrdiff_t>(node_starts[n]);
    const auto last = survey.candidates.begin() + static_cast<std::ptrdiff_t>(node_starts[n + 1]);
    std::sort(first, last,
              [&](const FgCandidate& a, const FgCandidate& b) { return CheaperThan(a, b, inv); });
    survey.nodes[n].gpus = absl::MakeConstSpan(&*first, node_starts[n + 1] - node_starts[n]);
  }
  return survey;
}

absl::Status NotPlaceable(const ForegroundRequest& request, const Survey& survey) {
  std::string limit =
      request.max_nodes > 0 ? absl::StrCat(" on at most ", Plural(request.max_nodes, "node")) : "";
  std::size_t usable = 0;
  const NodeCandidates* largest = nullptr;
  for (const NodeCandidates& node : survey.nodes) {
    usable += node.gpus.size();
    if (largest == nullptr || node.gpus.size() > largest->gpus.size()) largest = &node;
  }
  std::string fit = largest == nullptr ? "no GPU is usable"
                                       : absl::StrFormat("largest fit: %d on %s; usable: %s on %s",
                                                         largest->gpus.size(), largest->node,
                                                         Plural(usable, "GPU"),
                                                         Plural(survey.nodes.size(), "node"));
  // Only the reasons that hold GPUs back, so the message says what the job is waiting for.
  std::vector<std::string> unusable;
  for (const auto& [reason, what] :
       {std::pair{Unusable::kNodeNotSchedulable,
                  "on nodes not ready, unmanaged or without a fresh heartbeat"},
        std::pair{Unusable::kForegroundHolder, "held by foreground jobs"},
        std::pair{Unusable::kMemory, "with too little memory"}}) {
    auto it = survey.unusable.find(reason);
    if (it != survey.unusable.end() && it->second > 0) {
      unusable.push_back(absl::StrCat(it->second, " ", what));
    }
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s needs %s with %s free each%s%s; %s%s", request.job.empty() ? "job" : request.job,
      Plural(request.gpus, "GPU"), GiB(request.memory_per_gpu_bytes),
      request.exclusive ? " (exclusive)" : "", limit, fit,
      unusable.empty() ? "" : absl::StrCat("; unusable GPUs: ", absl::StrJoin(unusable, ", "))));
}

// The nodes to use and how many GPUs from each: fewest nodes; ties (and the last node of a
// multi-node gang) go to the fewest preemptions, then the tightest fit, which keeps large nodes
// whole for later gangs, then the node name.
std::vector<std::pair<const NodeCandidates*, std::size_t>> ChooseNodes(std::int64_t gpus,
                                                                       const Survey& survey) {
  const auto n = static_cast<std::size_t>(gpus);
  auto best_fit = [&](std::size_t need, const std::set<std::string_view>& taken) {
    const NodeCandidates* best = nullptr;
    for (const NodeCandidates& node : survey.nodes) {
      if (node.gpus.size() < need || taken.count(node.node) > 0) continue;
      if (best == nullptr || std::make_tuple(node.Cost(need), node.gpus.size()) <
                                 std::make_tuple(best->Cost(need), best->gpus.size())) {
        best = &node;
      }
    }
    return best;
  };
  if (const NodeCandidates* one = best_fit(n, {})) return {{one, n}};
  // No single node: the largest nodes first give the fewest nodes (greedy is optimal here).
  std::vector<const NodeCandidates*> by_size;
  for (const NodeCandidates& node : survey.nodes) by_size.push_back(&node);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const NodeCandidates* a, const NodeCandidates* b) {
                     return a->gpus.size() > b->gpus.size();
                   });
  std::vector<std::pair<const NodeCandidates*, std::size_t>> chosen;
  std::set<std::string_view> taken;
  std::size_t placed = 0;
  for (const NodeCandidates* node : by_size) {
    if (placed + node->gpus.size() >= n) {
      chosen.emplace_back(best_fit(n - placed, taken), n - placed);
      return chosen;
    }
    chosen.emplace_back(node, node->gpus.size());
    taken.insert(node->node);
    placed += node->gpus.size();
  }
  return {};
}

}  // namespace

absl::StatusOr<ForegroundPlacement> PlaceForeground(const ForegroundRequest& request,
                                                    const Inventory& inventory) {
  if (request.gpus < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("request.gpus: must be >= 1, got %d", request.gpus));
  }
  if (request.memory_per_gpu_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "request.memory_per_gpu_bytes: must be >= 0, got %d", request.memory_per_gpu_bytes));
  }
  if (request.max_nodes < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "request.max_nodes: must be >= 0 (0: no limit), got %d", request.max_nodes));
  }
  const Survey survey = SurveyForeground(request, inventory);
  auto chosen = ChooseNodes(request.gpus, survey);
  if (chosen.empty() ||
      (request.max_nodes > 0 && static_cast<std::int64_t>(chosen.size()) > request.max_nodes)) {
    return NotPlaceable(request, survey);
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const auto& a, const auto& b) { return a.first->node < b.first->node; });
  ForegroundPlacement placement;
  std::map<std::string, Preemption> preemptions;  // By pod: sorted, each pod once.
  for (const auto& [node, count] : chosen) {
    std::vector<FgCandidate> taken(node->gpus.begin(), node->gpus.begin() + count);
    std::sort(taken.begin(), taken.end(), [&](const FgCandidate& a, const FgCandidate& b) {
      return inventory.gpus()[a.gpu].index < inventory.gpus()[b.gpu].index;
    });
    placement.nodes.emplace_back(node->node);
    for (const FgCandidate& candidate : taken) {
      const Gpu& gpu = inventory.gpus()[candidate.gpu];
      placement.ranks.push_back(
          {static_cast<std::int64_t>(placement.ranks.size()), gpu.node, gpu.index, gpu.uuid});
      for (std::size_t v : candidate.preempt) {
        const GpuAssignment& victim = inventory.assignment(v);
        preemptions.emplace(
            victim.pod,
            Preemption{
                victim.job, victim.pod, gpu.node, gpu.uuid,
                absl::StrFormat("GPU %s on %s is needed by foreground job %s%s", gpu.uuid, gpu.node,
                                request.job, request.exclusive ? " exclusively" : " (memory)")});
      }
    }
  }
  for (auto& [pod, preemption] : preemptions) placement.preemptions.push_back(preemption);
  return placement;
}

bool IsNotPlaceable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted;
}

double IdleFraction(const api::PlanPredictions& predictions, std::int64_t gpus) {
  const double total = predictions.iteration_seconds * static_cast<double>(gpus);
  if (!(total > 0) || !(predictions.background_idle_gpu_seconds >= 0)) return 0;
  return std::clamp(predictions.background_idle_gpu_seconds / total, 0.0, 1.0);
}

}  // namespace wavepool::controller
