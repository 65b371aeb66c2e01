// The Inventory's filing of its GPUs (IsOpen, the counts, background_ranking) kept through
// every kind of change, checked against the definitions recomputed from the GPUs and their
// holders, and PlaceBackground's lookup in it checked against a visit of every GPU.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "wavepool/controller/placement.h"

namespace wavepool::controller {
namespace {

constexpr Bytes kGiB = Bytes{1} << 30;

api::MemoryWave Peak(Bytes bytes) {
  api::MemoryWave wave;
  wave.peak_bytes = bytes;
  return wave;
}

// A small cluster whose every figure the random changes below move.
struct Scene {
  std::vector<api::GpuNode> nodes;
  std::map<std::string, NodeState> states;
};

Scene RandomScene(std::mt19937& rng, int node_count) {
  Scene scene;
  for (int n = 0; n < node_count; ++n) {
    api::GpuNode node;
    node.spec.node_name = node.metadata.name = "node-" + std::to_string(n);
    const int gpus = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < gpus; ++i) {
      api::GpuStatus gpu;
      gpu.index = i;
      gpu.uuid = "GPU-" + node.spec.node_name + "-" + std::to_string(i);
      gpu.memory_bytes = (rng() % 2 == 0 ? 40 : 80) * kGiB;
      if (rng() % 3 == 0) gpu.memory_wave = Peak((rng() % 30) * kGiB);
      node.status.gpus.push_back(gpu);
    }
    scene.states[node.spec.node_name] = {rng() % 5 != 0, true, rng() % 6 != 0};
    scene.nodes.push_back(node);
  }
  return scene;
}

// The same GPUs with other figures: memory peaks and node states.
void Drift(std::mt19937& rng, Scene& scene) {
  for (api::GpuNode& node : scene.nodes) {
    for (api::GpuStatus& gpu : node.status.gpus) {
      if (rng() % 2 == 0) gpu.memory_wave = Peak((rng() % 40) * kGiB);
    }
    scene.states[node.spec.node_name].heartbeat_fresh = rng() % 4 != 0;
  }
}

struct Filing {
  std::vector<bool> open;
  std::size_t unschedulable = 0;
  std::size_t foreground_held = 0;
  std::vector<std::tuple<bool, double, Bytes, std::size_t>> ranking;

  friend bool operator==(const Filing& a, const Filing& b) {
    return std::tie(a.open, a.unschedulable, a.foreground_held, a.ranking) ==
           std::tie(b.open, b.unschedulable, b.foreground_held, b.ranking);
  }
};

Filing Kept(const Inventory& inv) {
  Filing kept{{}, inv.unschedulable_gpus(), inv.foreground_held_gpus(), {}};
  for (std::size_t g = 0; g < inv.gpus().size(); ++g) kept.open.push_back(inv.IsOpen(g));
  for (const Inventory::BackgroundRank& r : inv.background_ranking()) {
    kept.ranking.emplace_back(r.shared, r.idle, r.headroom, r.gpu);
  }
  return kept;
}

const GpuAssignment* ForegroundOn(const Inventory& inv, const Inventory::Gpu& gpu) {
  for (std::size_t h : gpu.holders) {
    if (inv.assignment(h).role == api::Role::kForeground) return &inv.assignment(h);
  }
  return nullptr;
}

// What the filing must hold, from placement.h's definitions.
Filing Defined(const Inventory& inv) {
  Filing defined;
  for (std::size_t g = 0; g < inv.gpus().size(); ++g) {
    const Inventory::Gpu& gpu = inv.gpus()[g];
    const GpuAssignment* fg = ForegroundOn(inv, gpu);
    defined.open.push_back(gpu.schedulable && fg == nullptr);
    if (!gpu.schedulable) {
      ++defined.unschedulable;
      continue;
    }
    if (fg != nullptr) ++defined.foreground_held;
    const int background = static_cast<int>(gpu.holders.size()) - (fg != nullptr ? 1 : 0);
    if ((fg == nullptr || AdmitsBackground(*fg)) &&
        background < inv.options().max_background_per_gpu) {
      defined.ranking.emplace_back(fg != nullptr && inv.options().prefer_shared_gpus,
                                   fg != nullptr ? fg->idle_fraction : 1.0, inv.HeadroomBytes(gpu),
                                   g);
    }
  }
  std::sort(defined.ranking.begin(), defined.ranking.end(), [](const auto& a, const auto& b) {
    return Inventory::BestFirst{}({std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)},
                                  {std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b)});
  });
  return defined;
}

// PlaceBackground's policy by a visit of every GPU: the best (shared, idle, headroom) among the
// GPUs that take the pod, the first in gpus() order on a tie.
std::optional<std::string> BestBackgroundGpuByVisit(const Inventory& inv,
                                                    const BackgroundRequest& request) {
  std::optional<std::string> best;
  std::tuple<bool, double, Bytes> best_score;
  for (const Inventory::Gpu& gpu : inv.gpus()) {
    const GpuAssignment* fg = ForegroundOn(inv, gpu);
    const int background = static_cast<int>(gpu.holders.size()) - (fg != nullptr ? 1 : 0);
    if (request.excluded_nodes.count(gpu.node) > 0 || !gpu.schedulable ||
        (fg != nullptr && !AdmitsBackground(*fg)) ||
        background >= inv.options().max_background_per_gpu ||
        request.memory_bytes > inv.HeadroomBytes(gpu)) {
      continue;
    }
    const auto score =
        std::make_tuple(fg != nullptr && inv.options().prefer_shared_gpus,
                        fg != nullptr ? fg->idle_fraction : 1.0, inv.HeadroomBytes(gpu));
    if (!best.has_value() || score > best_score) {
      best = gpu.uuid;
      best_score = score;
    }
  }
  return best;
}

// One random change: a pod added (fg gangs may clash and be refused) or removed, the figures
// of the same GPUs moved, a node taken away and brought back, a trial started or undone.
void RandomChange(std::mt19937& rng, Scene& scene, Inventory& inv, std::set<std::string>& pods,
                  int& next_pod) {
  const std::vector<Inventory::Gpu>& gpus = inv.gpus();
  switch (rng() % 8) {
    case 0:
    case 1: {  // A fg pod on 1-3 random GPUs.
      GpuAssignment a;
      a.pod = a.job = "fg-" + std::to_string(next_pod++);
      a.role = api::Role::kForeground;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n && !gpus.empty(); ++i) {
        const std::string& uuid = gpus[rng() % gpus.size()].uuid;
        if (std::find(a.gpu_uuids.begin(), a.gpu_uuids.end(), uuid) == a.gpu_uuids.end()) {
          a.gpu_uuids.push_back(uuid);
        }
      }
      a.memory_per_gpu_bytes = (rng() % 30) * kGiB;
      a.idle_fraction = (rng() % 5) / 4.0;
      a.allow_background = rng() % 4 != 0;
      a.max_foreground_slowdown = rng() % 5 == 0 ? 1.0 : 1.2;
      if (!a.gpu_uuids.empty() && inv.Add(a).ok()) pods.insert(a.pod);
      break;
    }
    case 2:
    case 3: {  // A bg pod on a random GPU.
      if (gpus.empty()) break;
      GpuAssignment a;
      a.pod = a.job = "bg-" + std::to_string(next_pod++);
      a.role = api::Role::kBackground;
      a.gpu_uuids = {gpus[rng() % gpus.size()].uuid};
      a.memory_per_gpu_bytes = (rng() % 20) * kGiB;
      if (inv.Add(a).ok()) pods.insert(a.pod);
      break;
    }
    case 4: {  // A pod removed.
      if (pods.empty()) break;
      auto it = pods.begin();
      std::advance(it, rng() % pods.size());
      ASSERT_TRUE(inv.Remove(*it).ok());
      pods.erase(it);
      break;
    }
    case 5:  // The same GPUs, other figures.
      Drift(rng, scene);
      ASSERT_TRUE(inv.SetGpus(scene.nodes, scene.states).ok());
      break;
    case 6: {  // Another GPU table: a node leaves (its pods are orphaned), or all come back.
      std::vector<api::GpuNode> listed = scene.nodes;
      if (rng() % 2 == 0 && listed.size() > 1) listed.erase(listed.begin() + rng() % listed.size());
      ASSERT_TRUE(inv.SetGpus(listed, scene.states).ok());
      break;
    }
    default: {  // A trial: pods removed and added, then undone.
      const Filing before = Kept(inv);
      inv.StartTrial();
      std::set<std::string> trial_pods = pods;
      for (int i = 0; i < 4; ++i) {
        if (rng() % 2 == 0 && !trial_pods.empty()) {
          const std::string pod = *trial_pods.begin();
          ASSERT_TRUE(inv.Remove(pod).ok());
          trial_pods.erase(pod);
        } else if (!gpus.empty()) {
          GpuAssignment a;
          a.pod = a.job = "trial-" + std::to_string(next_pod++);
          a.role = api::Role::kBackground;
          a.gpu_uuids = {gpus[rng() % gpus.size()].uuid};
          if (inv.Add(a).ok()) trial_pods.insert(a.pod);
        }
        ASSERT_EQ(Kept(inv), Defined(inv)) << "during a trial";
      }
      inv.UndoTrial();
      ASSERT_EQ(Kept(inv), before) << "a trial undone leaves the filing as it found it";
    }
  }
}

class InventoryFiling : public ::testing::TestWithParam<int> {};

TEST_P(InventoryFiling, FollowsEveryChangeAndPlaceBackgroundFindsWhatAVisitFinds) {
  std::mt19937 rng(GetParam());
  Scene scene = RandomScene(rng, 2 + GetParam() % 5);
  PlacementOptions options;
  options.max_background_per_gpu = 1 + GetParam() % 2;
  options.prefer_shared_gpus = GetParam() % 3 != 0;
  absl::StatusOr<Inventory> inv = Inventory::Build(scene.nodes, scene.states, {}, options);
  ASSERT_TRUE(inv.ok()) << inv.status();
  std::set<std::string> pods;
  int next_pod = 0;
  for (int step = 0; step < 300; ++step) {
    RandomChange(rng, scene, *inv, pods, next_pod);
    if (HasFatalFailure()) return;
    ASSERT_EQ(Kept(*inv), Defined(*inv)) << "after step " << step;
    const Inventory copy = *inv;
    ASSERT_EQ(Kept(copy), Defined(copy)) << "a copy keeps its own filing";

    BackgroundRequest request("ns/bg", (rng() % 40) * kGiB);
    if (rng() % 4 == 0)
      request.excluded_nodes.insert(scene.nodes[rng() % scene.nodes.size()].metadata.name);
    const absl::StatusOr<BackgroundPlacement> placed = PlaceBackground(request, *inv);
    const std::optional<std::string> visited = BestBackgroundGpuByVisit(*inv, request);
    ASSERT_EQ(placed.ok(), visited.has_value()) << "step " << step << ": " << placed.status();
    if (visited.has_value()) {
      ASSERT_EQ(placed->gpu_uuid, *visited) << "step " << step;
    } else {
      ASSERT_TRUE(IsNotPlaceable(placed.status()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, InventoryFiling, ::testing::Range(1, 25));

}  // namespace
}  // namespace wavepool::controller
