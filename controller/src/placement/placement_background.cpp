// Background pod placement (placement.h states the policy).
#include <limits>
#include <optional>
#include <string>

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

// Counts why `gpu` does not take the bg pod of `request`, for a request no GPU takes.
void CountRefusal(const Inventory& inv, const Gpu& gpu, const BackgroundRequest& request,
                  Tally& tally) {
  if (request.excluded_nodes.count(gpu.node) > 0) {
    ++tally.excluded;
    return;
  }
  if (!gpu.schedulable) {
    ++tally.not_schedulable;
    return;
  }
  const GpuAssignment* fg = inv.ForegroundOn(gpu);
  if (fg != nullptr && !AdmitsBackground(*fg)) {
    ++tally.background_disallowed;
    return;
  }
  const auto background = static_cast<int>(gpu.holders.size()) - (fg != nullptr ? 1 : 0);
  if (background >= inv.options().max_background_per_gpu) {
    ++tally.background_full;
    return;
  }
  const Bytes headroom = inv.HeadroomBytes(gpu);
  if (request.memory_bytes > headroom) {
    ++tally.too_little_memory;
    if (!tally.best_headroom || headroom > *tally.best_headroom) {
      tally.best_headroom = headroom;
      tally.best_headroom_gpu = absl::StrFormat("%s GPU %d", gpu.node, gpu.index);
    }
  }
}

std::string GiB(Bytes bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / static_cast<double>(1LL << 30));
}

}  // namespace

bool AdmitsBackground(const GpuAssignment& fg) {
  return fg.allow_background && fg.max_foreground_slowdown > 1.0;
}

std::optional<BackgroundPlacement> FindBackgroundGpu(const BackgroundRequest& request,
                                                     const Inventory& inventory) {
  const Inventory::BackgroundRanking& ranking = inventory.background_ranking();
  for (auto it = ranking.begin(); it != ranking.end();) {
    if (it->headroom < request.memory_bytes) {
      // The rest of its (shared, idle) group has less headroom still: on to the next group.
      it = ranking.upper_bound({it->shared, it->idle, std::numeric_limits<Bytes>::lowest(),
                                std::numeric_limits<std::size_t>::max()});
      continue;
    }
    const Gpu& gpu = inventory.gpus()[it->gpu];
    if (request.excluded_nodes.count(gpu.node) == 0) {
      const GpuAssignment* fg = inventory.ForegroundOn(gpu);
      return BackgroundPlacement{gpu.node, gpu.index, gpu.uuid, fg != nullptr ? fg->job : ""};
    }
    ++it;
  }
  return std::nullopt;
}

absl::StatusOr<BackgroundPlacement> PlaceBackground(const BackgroundRequest& request,
                                                    const Inventory& inventory) {
  if (request.memory_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("request.memory_bytes: must be >= 0, got %d", request.memory_bytes));
  }
  if (std::optional<BackgroundPlacement> found = FindBackgroundGpu(request, inventory)) {
    return *std::move(found);
  }
  // Nothing takes it: every GPU is visited, to say why.
  Tally tally;
  for (const Gpu& gpu : inventory.gpus()) CountRefusal(inventory, gpu, request, tally);
  const std::string headroom =
      tally.best_headroom ? absl::StrFormat(" (most headroom: %s on %s)", GiB(*tally.best_headroom),
                                            tally.best_headroom_gpu)
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

}  // namespace wavepool::controller
