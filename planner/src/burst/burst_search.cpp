#include "wavepool/planner/burst_search.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "burst/burst_steps.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

using burst::Matrix;
using burst::StepTable;

// One way to run a branch inside a block (its GPU cap), ready to price any fork count.
struct BranchVariant {
  const SpSeries* branch = nullptr;
  int cap = 0;
  std::vector<StepTable> tables;  // a plain branch: one per element, then one into the join
  Matrix full;                    // a branch holding a nested fork: its whole matrix
  bool has_full = false;
};

// Vectors left behind by one pass over a branch from a single fork count, for backtracking.
struct RowPass {
  std::vector<std::vector<Nanos>> after;  // after[i]: times after element i, by its count
  std::vector<Nanos> at_join;             // arriving at the join, by the join's count
};

class BurstSearch {
 public:
  explicit BurstSearch(const BurstProblem& problem) : p_(problem) {}

  absl::StatusOr<BurstSearchResult> Run();

 private:
  int CountsUpTo(int cap) const { return p_.CountsUpTo(cap); }
  StepTable Table(LayerId producer, LayerId layer, int n_in, int n_out,
                  bool relocated = false) const {
    return burst::MakeStepTable(p_, producer, layer, n_in, n_out, relocated);
  }
  // Which branches of `block` run on ranks other than the fork's when side by side: every
  // non-empty branch after the first non-empty one (the evaluator packs branches after the ranks
  // the earlier ones use, which moves exactly the same branches).
  static std::vector<bool> Relocated(const SpElement& block, const std::vector<int>& caps) {
    std::vector<bool> relocated(caps.size(), false);
    int offset = 0;
    for (size_t b = 0; b < caps.size(); ++b) {
      relocated[b] = offset > 0 && !block.branches[b].elements.empty();
      offset += caps[b];
    }
    return relocated;
  }
  static LayerId ProducerOf(const SpSeries& series, size_t i, LayerId fork) {
    return i == 0 ? fork : series.elements[i - 1].layer;
  }

  Matrix BlockMatrix(const SpElement& block, LayerId fork, int cap, const Nanos* live_rows);
  const Matrix& NestedBlockMatrix(const SpElement& block, LayerId fork, int cap);
  BranchVariant MakeVariant(const SpSeries& branch, LayerId fork, int n_c, int cap_b,
                            bool relocated);
  void VariantRow(const BranchVariant& variant, LayerId fork, int g, int n_c, Nanos* out);
  Matrix BranchMatrixAroundNested(const SpSeries& branch, LayerId fork, int n_c, int cap_b,
                                  size_t last_nested, bool relocated);
  void ForwardThrough(const SpSeries& branch, size_t from, int n_b, int n_c, std::vector<Nanos> in,
                      bool relocated, Nanos* out);

  RowPass PassRow(const SpSeries& branch, LayerId fork, int g, int n_c, int cap_b, bool relocated);
  absl::Status ExtractBlock(const SpElement& block, LayerId fork, int g, int h, int cap,
                            BurstAssignment* out);
  absl::Status ExtractBranch(const SpSeries& branch, LayerId fork, int g, int h, int n_c, int cap_b,
                             bool relocated, const RowPass& pass, BurstAssignment* out);

  const BurstProblem& p_;
  std::map<std::pair<LayerId, int>, Matrix> nested_;
  burst::StepScratch scratch_;
  std::vector<Nanos> ping_, pong_;
};

std::vector<Nanos> Delta(int n, int at) {
  std::vector<Nanos> v(static_cast<size_t>(n), kInfeasible);
  v[at] = 0;
  return v;
}

// The smallest k with pred(k), or -1.
template <typename Pred>
int FirstIndex(int n, Pred pred) {
  for (int k = 0; k < n; ++k) {
    if (pred(k)) return k;
  }
  return -1;
}

absl::Status Inconsistent(const std::string& what) {
  return absl::InternalError(absl::StrCat("burst search could not reconstruct ", what));
}

Matrix BurstSearch::BlockMatrix(const SpElement& block, LayerId fork, int cap,
                                const Nanos* live_rows) {
  const int n_c = CountsUpTo(cap);
  const size_t n = block.branches.size();
  // Variants: every branch on the whole group (one after another), and, when allowed, every
  // branch on its share (side by side); a share equal to the group reuses the first variant.
  std::vector<BranchVariant> variants;
  for (const SpSeries& branch : block.branches) {
    variants.push_back(MakeVariant(branch, fork, n_c, cap, false));
  }
  const std::vector<int> caps =
      p_.options.parallel_branches ? p_.ParallelCaps(block, cap) : std::vector<int>{};
  const std::vector<bool> relocated = Relocated(block, caps);
  std::vector<size_t> side_by_side;
  for (size_t b = 0; b < caps.size(); ++b) {
    if (!relocated[b] && (caps[b] == cap || block.branches[b].elements.empty())) {
      side_by_side.push_back(b);
    } else {
      side_by_side.push_back(variants.size());
      variants.push_back(MakeVariant(block.branches[b], fork, n_c, caps[b], relocated[b]));
    }
  }
  const LayerId join = block.layer;
  std::vector<Nanos> join_work(static_cast<size_t>(n_c));
  for (int h = 0; h < n_c; ++h) {
    join_work[h] =
        p_.AmplificationOkWithIngress(join, h, 0) ? p_.layers[join].work[h] : kInfeasible;
  }
  Matrix best(n_c, n_c);
  std::vector<std::vector<Nanos>> rows(variants.size(),
                                       std::vector<Nanos>(static_cast<size_t>(n_c)));
  for (int g = 0; g < n_c; ++g) {
    if (live_rows != nullptr && live_rows[g] >= kInfeasible) continue;
    for (size_t v = 0; v < variants.size(); ++v)
      VariantRow(variants[v], fork, g, n_c, rows[v].data());
    Nanos* out = best.Row(g);
    for (int h = 0; h < n_c; ++h) {
      Nanos serial = 0;
      for (size_t b = 0; b < n; ++b) serial = burst::SaturatingAdd(serial, rows[b][h]);
      Nanos slowest = side_by_side.empty() ? kInfeasible : 0;
      for (size_t v : side_by_side) slowest = std::max(slowest, rows[v][h]);
      out[h] = burst::SaturatingAdd(std::min(serial, slowest), join_work[h]);
    }
  }
  return best;
}

const Matrix& BurstSearch::NestedBlockMatrix(const SpElement& block, LayerId fork, int cap) {
  const auto key = std::make_pair(block.layer, cap);
  auto it = nested_.find(key);
  if (it == nested_.end()) {
    it = nested_.emplace(key, BlockMatrix(block, fork, cap, nullptr)).first;
  }
  return it->second;
}

BranchVariant BurstSearch::MakeVariant(const SpSeries& branch, LayerId fork, int n_c, int cap_b,
                                       bool relocated) {
  BranchVariant variant;
  variant.branch = &branch;
  variant.cap = cap_b;
  if (branch.elements.empty()) return variant;
  for (size_t i = branch.elements.size(); i-- > 0;) {
    if (!branch.elements[i].is_block) continue;
    variant.full = BranchMatrixAroundNested(branch, fork, n_c, cap_b, i, relocated);
    variant.has_full = true;
    return variant;
  }
  const int n_b = CountsUpTo(cap_b);
  for (size_t i = 0; i < branch.elements.size(); ++i) {
    variant.tables.push_back(Table(ProducerOf(branch, i, fork), branch.elements[i].layer,
                                   i == 0 ? n_c : n_b, n_b, relocated && i == 0));
  }
  variant.tables.push_back(Table(branch.elements.back().layer, -1, n_b, n_c, relocated));
  return variant;
}

void BurstSearch::VariantRow(const BranchVariant& variant, LayerId fork, int g, int n_c,
                             Nanos* out) {
  if (variant.has_full) {
    std::copy(variant.full.Row(g), variant.full.Row(g) + n_c, out);
    return;
  }
  if (variant.tables.empty()) {  // straight from the fork to the join
    for (int h = 0; h < n_c; ++h) out[h] = p_.Transfer(fork, g, h);
    return;
  }
  ping_.resize(static_cast<size_t>(p_.counts.size()));
  pong_.resize(ping_.size());
  burst::ForwardStepFrom(variant.tables.front(), g, ping_.data());
  for (size_t i = 1; i + 1 < variant.tables.size(); ++i) {
    burst::ForwardStep(variant.tables[i], ping_.data(), pong_.data(), &scratch_);
    ping_.swap(pong_);
  }
  burst::ForwardStep(variant.tables.back(), ping_.data(), out, &scratch_);
}

// Forward, row by row, through branch elements [from, end) (layers only) and into the join.
void BurstSearch::ForwardThrough(const SpSeries& branch, size_t from, int n_b, int n_c,
                                 std::vector<Nanos> in, bool relocated, Nanos* out) {
  std::vector<Nanos> next(static_cast<size_t>(n_b));
  for (size_t i = from; i < branch.elements.size(); ++i) {
    const LayerId layer = branch.elements[i].layer;
    const StepTable t = Table(branch.elements[i - 1].layer, layer, n_b, n_b);
    burst::ForwardStep(t, in.data(), next.data(), &scratch_);
    in.swap(next);
  }
  const StepTable to_join = Table(branch.elements.back().layer, -1, n_b, n_c, relocated);
  burst::ForwardStep(to_join, in.data(), out, &scratch_);
}

// A branch with a nested fork at `last_nested` (the last one): the part after it is priced row
// by row from the nested block's matrix, the part before it by left steps (burst_steps.h), so that
// no cubic matrix product is needed unless the branch holds a second nested fork.
Matrix BurstSearch::BranchMatrixAroundNested(const SpSeries& branch, LayerId fork, int n_c,
                                             int cap_b, size_t last_nested, bool relocated) {
  const int n_b = CountsUpTo(cap_b);
  const Matrix& nested = NestedBlockMatrix(branch.elements[last_nested],
                                           branch.elements[last_nested - 1].layer, cap_b);
  Matrix tail(n_b, n_c);
  for (int y = 0; y < n_b; ++y) {
    std::vector<Nanos> in(nested.Row(y), nested.Row(y) + n_b);
    ForwardThrough(branch, last_nested + 1, n_b, n_c, std::move(in), relocated, tail.Row(y));
  }
  for (size_t j = last_nested; j-- > 0;) {
    const SpElement& element = branch.elements[j];
    if (element.is_block) {
      tail = burst::MinPlus(NestedBlockMatrix(element, branch.elements[j - 1].layer, cap_b), tail);
      continue;
    }
    const StepTable t = Table(ProducerOf(branch, j, fork), element.layer, j == 0 ? n_c : n_b, n_b,
                              relocated && j == 0);
    burst::AddWorkToRows(t, &tail);
    tail = burst::LeftStep(t, tail);
  }
  return tail;
}

RowPass BurstSearch::PassRow(const SpSeries& branch, LayerId fork, int g, int n_c, int cap_b,
                             bool relocated) {
  RowPass pass;
  if (branch.elements.empty()) {
    for (int h = 0; h < n_c; ++h) pass.at_join.push_back(p_.Transfer(fork, g, h));
    return pass;
  }
  const int n_b = CountsUpTo(cap_b);
  std::vector<Nanos> in = Delta(n_c, g);
  for (size_t i = 0; i < branch.elements.size(); ++i) {
    const SpElement& element = branch.elements[i];
    std::vector<Nanos> out(static_cast<size_t>(n_b), kInfeasible);
    if (element.is_block) {
      const Matrix& nested = NestedBlockMatrix(element, branch.elements[i - 1].layer, cap_b);
      for (int z = 0; z < n_b; ++z) {
        for (int y = 0; y < n_b; ++y) {
          out[y] = std::min(out[y], burst::SaturatingAdd(in[z], nested.At(z, y)));
        }
      }
    } else {
      const StepTable t = Table(ProducerOf(branch, i, fork), element.layer,
                                static_cast<int>(in.size()), n_b, relocated && i == 0);
      burst::ForwardStep(t, in.data(), out.data(), &scratch_);
    }
    pass.after.push_back(out);
    in = std::move(out);
  }
  pass.at_join.assign(static_cast<size_t>(n_c), kInfeasible);
  const StepTable to_join = Table(branch.elements.back().layer, -1, n_b, n_c, relocated);
  burst::ForwardStep(to_join, in.data(), pass.at_join.data(), &scratch_);
  return pass;
}

absl::Status BurstSearch::ExtractBlock(const SpElement& block, LayerId fork, int g, int h, int cap,
                                       BurstAssignment* out) {
  const int n_c = CountsUpTo(cap);
  const size_t n = block.branches.size();
  std::vector<RowPass> serial;
  Nanos serial_time = 0;
  for (const SpSeries& branch : block.branches) {
    serial.push_back(PassRow(branch, fork, g, n_c, cap, false));
    serial_time = burst::SaturatingAdd(serial_time, serial.back().at_join[h]);
  }
  const std::vector<int> caps =
      p_.options.parallel_branches ? p_.ParallelCaps(block, cap) : std::vector<int>{};
  const std::vector<bool> relocated = Relocated(block, caps);
  std::vector<RowPass> parallel;
  Nanos parallel_time = kInfeasible;
  if (!caps.empty()) {
    parallel_time = 0;
    for (size_t b = 0; b < n; ++b) {
      parallel.push_back(PassRow(block.branches[b], fork, g, n_c, caps[b], relocated[b]));
      parallel_time = std::max(parallel_time, parallel.back().at_join[h]);
    }
  }
  const bool side_by_side = parallel_time < serial_time;
  if (std::min(parallel_time, serial_time) >= kInfeasible) {
    return Inconsistent(absl::StrCat("the branches of join ", p_.layer_names[block.layer]));
  }
  out->mode[block.layer] = side_by_side ? BranchMode::kParallel : BranchMode::kSerial;
  out->count[block.layer] = h;
  for (size_t b = 0; b < n; ++b) {
    WAVEPOOL_RETURN_IF_ERROR(
        ExtractBranch(block.branches[b], fork, g, h, n_c, side_by_side ? caps[b] : cap,
                      side_by_side && relocated[b], side_by_side ? parallel[b] : serial[b], out));
  }
  return absl::OkStatus();
}

absl::Status BurstSearch::ExtractBranch(const SpSeries& branch, LayerId fork, int g, int h, int n_c,
                                        int cap_b, bool relocated, const RowPass& pass,
                                        BurstAssignment* out) {
  if (branch.elements.empty()) return absl::OkStatus();
  const int n_b = CountsUpTo(cap_b);
  const LayerId last = branch.elements.back().layer;
  int y = FirstIndex(n_b, [&](int k) {
    return burst::SaturatingAdd(pass.after.back()[k], p_.Transfer(last, k, h, relocated)) ==
           pass.at_join[h];
  });
  for (size_t i = branch.elements.size(); i-- > 0;) {
    if (y < 0) return Inconsistent(absl::StrCat("a branch of fork ", p_.layer_names[fork]));
    const SpElement& element = branch.elements[i];
    const LayerId producer = ProducerOf(branch, i, fork);
    const std::vector<Nanos> delta = i == 0 ? Delta(n_c, g) : std::vector<Nanos>{};
    const std::vector<Nanos>& before = i == 0 ? delta : pass.after[i - 1];
    const Nanos target = pass.after[i][y];
    out->count[element.layer] = y;
    int z = -1;
    if (element.is_block) {
      const Matrix& nested = NestedBlockMatrix(element, producer, cap_b);
      z = FirstIndex(
          n_b, [&](int k) { return burst::SaturatingAdd(before[k], nested.At(k, y)) == target; });
      if (z >= 0) {
        WAVEPOOL_RETURN_IF_ERROR(ExtractBlock(element, producer, z, y, cap_b, out));
      }
    } else {
      const Nanos work = p_.layers[element.layer].work[y];
      const bool moved = relocated && i == 0;
      z = FirstIndex(static_cast<int>(before.size()), [&](int k) {
        return before[k] < kInfeasible && p_.EdgeAllowed(element.layer, producer, k, y, moved) &&
               before[k] + p_.Transfer(producer, k, y, moved) + work == target;
      });
    }
    y = z;
  }
  return y == g ? absl::OkStatus()
                : Inconsistent(absl::StrCat("a branch of fork ", p_.layer_names[fork]));
}

absl::StatusOr<BurstSearchResult> BurstSearch::Run() {
  const std::vector<SpElement>& elements = p_.tree.elements;
  const int n = p_.counts.size();
  const int cap = p_.options.max_gpus;
  std::vector<std::vector<Nanos>> after(elements.size(),
                                        std::vector<Nanos>(static_cast<size_t>(n)));
  std::vector<std::vector<int>> block_source(elements.size());
  const LayerId first = elements.front().layer;
  for (int x = 0; x < n; ++x) {
    after[0][x] = p_.EdgeAllowed(first, -1, x, x) ? p_.layers[first].work[x] : kInfeasible;
  }
  for (size_t i = 1; i < elements.size(); ++i) {
    const LayerId producer = elements[i - 1].layer;
    if (!elements[i].is_block) {
      burst::ForwardStep(Table(producer, elements[i].layer, n, n), after[i - 1].data(),
                         after[i].data(), &scratch_);
      continue;
    }
    const Matrix m = BlockMatrix(elements[i], producer, cap, after[i - 1].data());
    block_source[i].assign(static_cast<size_t>(n), 0);
    for (int h = 0; h < n; ++h) {
      Nanos best = kInfeasible;
      for (int g = 0; g < n; ++g) {
        const Nanos t = burst::SaturatingAdd(after[i - 1][g], m.At(g, h));
        if (t < best) best = t, block_source[i][h] = g;
      }
      after[i][h] = best;
    }
  }
  const std::vector<Nanos>& final_times = after.back();
  int x = static_cast<int>(std::min_element(final_times.begin(), final_times.end()) -
                           final_times.begin());
  BurstSearchResult result;
  result.iteration = final_times[x];
  if (result.iteration >= kInfeasible) {
    // Only a lower bound on the counts (min_count) can exclude every plan: one GPU per layer
    // always meets the amplification limit.
    return absl::FailedPreconditionError(
        absl::StrCat("burst search: no plan with every layer on at least ",
                     p_.counts.gpus[std::min(p_.min_count, n - 1)],
                     " GPUs meets the amplification limit of ", p_.options.amplification_limit));
  }
  result.assignment.count.assign(p_.layers.size(), 0);
  result.assignment.mode.assign(p_.layers.size(), BranchMode::kSerial);
  for (size_t i = elements.size(); i-- > 0;) {
    const SpElement& element = elements[i];
    result.assignment.count[element.layer] = x;
    if (i == 0) break;
    const LayerId producer = elements[i - 1].layer;
    if (element.is_block) {
      const int g = block_source[i][x];
      WAVEPOOL_RETURN_IF_ERROR(ExtractBlock(element, producer, g, x, cap, &result.assignment));
      x = g;
      continue;
    }
    const Nanos work = p_.layers[element.layer].work[x];
    x = FirstIndex(n, [&](int g) {
      return after[i - 1][g] < kInfeasible && p_.EdgeAllowed(element.layer, producer, g, x) &&
             after[i - 1][g] + p_.Transfer(producer, g, x) + work == after[i][x];
    });
    if (x < 0) return Inconsistent(absl::StrCat("layer ", p_.layer_names[element.layer]));
  }
  absl::StatusOr<BurstEvaluation> check = EvaluateAssignment(p_, result.assignment);
  if (!check.ok() || check->iteration != result.iteration) {
    return Inconsistent(
        absl::StrCat("a plan matching the optimum (evaluated: ",
                     check.ok() ? absl::StrCat(check->iteration) : check.status().ToString(),
                     ", searched: ", result.iteration, ")"));
  }
  return result;
}

}  // namespace

absl::StatusOr<BurstSearchResult> SearchBurstAssignment(const BurstProblem& problem) {
  if (problem.tree.elements.empty() || problem.counts.size() == 0) {
    return absl::InvalidArgumentError("burst search: empty problem");
  }
  return BurstSearch(problem).Run();
}

}  // namespace wavepool::planner
