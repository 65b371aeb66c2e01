// Background pod placement (placement.h states the policy).
#include <optional>
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "wavepool/controller/placement.h"

namespace wavepool::controller {
namespace {

using Gpu = Inventory::Gpu;

struct Tally {
  int excluded = 0;
  int not_schedulable = 0;
  int background_disallowed = 0;
  int background_full = 0;
  int too_little_memory = 0;
  std::optional<Bytes> best_headroom;
  std::string best_headroom_gpu;
};

// The fg pod on `gpu`, if any (at most one: Inventory rejects two).
const GpuAssignment* ForegroundOn(const Inventory& inv, const Gpu& gpu) {
  for (std::size_t h : gpu.holders) {
    if (inv.assignment(h).role == api::Role::kForeground) return &inv.assignment(h);
  }
  return nullptr;
}

// Whether `gpu` may take the bg pod of `request`; counts the reason when not.
bool Admits(const Inventory& inv, const Gpu& gpu, const BackgroundRequest& request, Tally& tally) {
  if (request.excluded_nodes.count(gpu.node) > 0) {
    ++tally.excluded;
    return false;
  }
  if (!gpu.schedulable) {
    ++tally.not_schedulable;
    return false;
  }
  const GpuAssignment* fg = ForegroundOn(inv, gpu);
  if (fg != nullptr && !AdmitsBackground(*fg)) {
    ++tally.background_disallowed;
    return false;
  }
  const auto background = static_cast<int>(gpu.holders.size()) - (fg != nullptr ? 1 : 0);
  if (background >= inv.options().max_background_per_gpu) {
    ++tally.background_full;
    return false;
  }
  const Bytes headroom = inv.HeadroomBytes(gpu);
  if (request.memory_bytes > headroom) {
    ++tally.too_little_memory;
    if (!tally.best_headroom || headroom > *tally.best_headroom) {
      tally.best_headroom = headroom;
      tally.best_headroom_gpu = absl::StrFormat("%s GPU %d", gpu.node, gpu.index);
    }
    return false;
  }
  return true;
}

std::string GiB(Bytes bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / static_cast<double>(1LL << 30));
}

}  // namespace

bool AdmitsBackground(const GpuAssignment& fg) {
  return fg.allow_background && fg.max_foreground_slowdown > 1.0;
}

// Ranks the admitting GPUs: shared with a fg job first (when preferred), then the fg plan's idle
// share of GPU time (an empty GPU is all idle), then memory headroom, then node name and index
// (the inventory's order, kept by taking only strictly better GPUs).
absl::StatusOr<BackgroundPlacement> PlaceBackground(const BackgroundRequest& request,
                                                    const Inventory& inventory) {
  if (request.memory_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("request.memory_bytes: must be >= 0, got %d", request.memory_bytes));
  }
  Tally tally;
  const Gpu* best = nullptr;
  std::tuple<bool, double, Bytes> best_score;
  for (const Gpu& gpu : inventory.gpus()) {
    if (!Admits(inventory, gpu, request, tally)) continue;
    const GpuAssignment* fg = ForegroundOn(inventory, gpu);
    const bool shared = fg != nullptr && inventory.options().prefer_shared_gpus;
    const double idle = fg != nullptr ? fg->idle_fraction : 1.0;
    auto score = std::make_tuple(shared, idle, inventory.HeadroomBytes(gpu));
    if (best == nullptr || score > best_score) {
      best = &gpu;
      best_score = score;
    }
  }
  if (best == nullptr) {
    std::string headroom = tally.best_headroom
                               ? absl::StrFormat(" (most headroom: %s on %s)",
                                                 GiB(*tally.best_headroom), tally.best_headroom_gpu)
                               : "";
    const std::string excluded =
        tally.excluded == 0
            ? ""
            : absl::StrFormat(", %d on nodes where it used the GPU outside its launch gate",
                              tally.excluded);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s needs 1 GPU with %s free; no GPU takes it: %d on nodes not ready, unmanaged or "
        "without a fresh heartbeat, %d whose foreground job disallows background, %d already "
        "running %d background pod(s), %d with too little memory%s%s",
        request.job.empty() ? "job" : request.job, GiB(request.memory_bytes), tally.not_schedulable,
        tally.background_disallowed, tally.background_full,
        inventory.options().max_background_per_gpu, tally.too_little_memory, excluded, headroom));
  }
  const GpuAssignment* fg = ForegroundOn(inventory, *best);
  return BackgroundPlacement{best->node, best->index, best->uuid, fg != nullptr ? fg->job : ""};
}

}  // namespace wavepool::controller
