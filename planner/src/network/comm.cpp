#include "wavepool/planner/comm.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/names.h"

namespace wavepool::planner {
namespace {

constexpr double kGBps = 1e9;

// ceil(log2 p) for p >= 1: the rounds of a binomial tree.
int CeilLog2(int p) {
  int rounds = 0;
  for (std::int64_t reach = 1; reach < p; reach *= 2) ++rounds;
  return rounds;
}

Link ClampLink(Link link) {
  if (!(link.alpha.count() >= 0) || std::isinf(link.alpha.count())) link.alpha = Seconds(0);
  if (!(link.beta_s_per_byte >= 0) || std::isinf(link.beta_s_per_byte)) link.beta_s_per_byte = 0;
  return link;
}

// Makes any NetworkModel satisfy what the collectives' guarantees rely on (see CommModel).
NetworkModel Normalize(NetworkModel network) {
  network.gpus_per_node = std::max(network.gpus_per_node, 1);
  network.nics_per_node = std::max(network.nics_per_node, 1);
  if (!(network.contention >= 1.0)) network.contention = 1.0;
  network.ring_threshold_bytes = std::max<Bytes>(network.ring_threshold_bytes, 0);
  network.intra_node = ClampLink(network.intra_node);
  network.inter_node = ClampLink(network.inter_node);
  auto& steps = network.inter_node_alpha_steps;
  std::stable_sort(steps.begin(), steps.end(), [](const AlphaStep& a, const AlphaStep& b) {
    return a.up_to_gpus < b.up_to_gpus;
  });
  Seconds floor(0);
  for (AlphaStep& step : steps) {
    floor = std::max(floor, step.alpha);
    step.alpha = floor;  // a larger scale never has a smaller latency
  }
  network.inter_node.alpha = std::max(network.inter_node.alpha, floor);
  return network;
}

absl::Status Invalid(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": ", std::string(problem)));
}

absl::Status ValidateLink(const Link& link, std::string_view field) {
  if (!(link.alpha.count() >= 0) || std::isinf(link.alpha.count())) {
    return Invalid(absl::StrCat(std::string(field), ".alphaSeconds"),
                   absl::StrCat("must be >= 0, got ", link.alpha.count()));
  }
  if (!(link.beta_s_per_byte > 0) || std::isinf(link.beta_s_per_byte)) {
    return Invalid(absl::StrCat(std::string(field), ".bytesPerSecond"),
                   absl::StrCat("must be > 0 and finite, got ", 1.0 / link.beta_s_per_byte));
  }
  return absl::OkStatus();
}

absl::Status ValidateSteps(const NetworkModel& network) {
  const auto& steps = network.inter_node_alpha_steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string at = absl::StrCat("interNodeAlphaSteps[", i, "]");
    if (steps[i].up_to_gpus < 1) {
      return Invalid(at + ".upToGpus", absl::StrCat("must be >= 1, got ", steps[i].up_to_gpus));
    }
    if (i > 0 && steps[i].up_to_gpus <= steps[i - 1].up_to_gpus) {
      return Invalid(at + ".upToGpus",
                     absl::StrCat("must be > the previous step's (", steps[i - 1].up_to_gpus,
                                  "), got ", steps[i].up_to_gpus));
    }
    if (!(steps[i].alpha.count() >= 0)) {
      return Invalid(at + ".alphaSeconds",
                     absl::StrCat("must be >= 0, got ", steps[i].alpha.count()));
    }
    if (i > 0 && steps[i].alpha < steps[i - 1].alpha) {
      return Invalid(
          at + ".alphaSeconds",
          absl::StrCat("must be >= the previous step's (", steps[i - 1].alpha.count(),
                       ") so that latency never falls with scale, got ", steps[i].alpha.count()));
    }
    if (steps[i].alpha > network.inter_node.alpha) {
      return Invalid(at + ".alphaSeconds", absl::StrCat("must be <= interNode.alphaSeconds (",
                                                        network.inter_node.alpha.count(),
                                                        ", the alpha beyond the last "
                                                        "step), got ",
                                                        steps[i].alpha.count()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateNetworkModel(const NetworkModel& network) {
  if (network.gpus_per_node < 1) {
    return Invalid("gpusPerNode", absl::StrCat("must be >= 1, got ", network.gpus_per_node));
  }
  if (network.nics_per_node < 1) {
    return Invalid("nicsPerNode", absl::StrCat("must be >= 1, got ", network.nics_per_node));
  }
  if (!(network.contention >= 1.0) || std::isinf(network.contention)) {
    return Invalid("contention", absl::StrCat("must be >= 1 and finite, got ", network.contention));
  }
  if (network.ring_threshold_bytes < 0) {
    return Invalid("ringThresholdBytes",
                   absl::StrCat("must be >= 0, got ", network.ring_threshold_bytes));
  }
  WAVEPOOL_RETURN_IF_ERROR(ValidateLink(network.intra_node, "intraNode"));
  WAVEPOOL_RETURN_IF_ERROR(ValidateLink(network.inter_node, "interNode"));
  return ValidateSteps(network);
}

CommModel::CommModel(NetworkModel network) : network_(Normalize(std::move(network))) {}

bool CommModel::CrossesNodes(int gpus, GroupLayout layout) const {
  if (gpus <= 1) return false;
  const std::int64_t span =
      static_cast<std::int64_t>(gpus - 1) * std::max(layout.stride, 1) + 1;  // ranks covered
  return span > network_.gpus_per_node;
}

Link CommModel::LinkFor(int gpus, GroupLayout layout) const {
  if (!CrossesNodes(gpus, layout)) return network_.intra_node;
  const std::int64_t span = static_cast<std::int64_t>(gpus - 1) * std::max(layout.stride, 1) + 1;
  Seconds alpha = network_.inter_node.alpha;
  for (const AlphaStep& step : network_.inter_node_alpha_steps) {
    if (span <= step.up_to_gpus) {
      alpha = step.alpha;
      break;
    }
  }
  // Flows of concurrent groups that leave a node share its NICs (paradl-oracle §4.3).
  const int flows = std::max(layout.flows_per_node, 1);
  const int sharing = (flows + network_.nics_per_node - 1) / network_.nics_per_node;
  const double beta = network_.inter_node.beta_s_per_byte * network_.contention * sharing;
  // The bottleneck link: a ring across nodes also takes the intra-node hops.
  return Link{std::max(alpha, network_.intra_node.alpha),
              std::max(beta, network_.intra_node.beta_s_per_byte)};
}

Seconds CommModel::PointToPoint(Bytes n, bool cross_node) const {
  if (n <= 0) return Seconds(0);
  if (!cross_node) return network_.intra_node.Time(n);
  // Two neighbouring nodes: the smallest cross-node group, one flow.
  return LinkFor(network_.gpus_per_node + 1).Time(n);
}

Seconds CommModel::RingAllReduce(Bytes n, int p, GroupLayout layout) const {
  if (p <= 1 || n <= 0) return Seconds(0);
  const Link link = LinkFor(p, layout);
  // 2 (p-1) steps, each moving one n/p segment (paradl-oracle §4.3).
  return 2.0 * (p - 1) * (link.alpha + Seconds(static_cast<double>(n) / p * link.beta_s_per_byte));
}

Seconds CommModel::TreeAllReduce(Bytes n, int p, GroupLayout layout) const {
  if (p <= 1 || n <= 0) return Seconds(0);
  // Reduce up a binomial tree and broadcast back down, the whole message per round.
  return 2.0 * CeilLog2(p) * LinkFor(p, layout).Time(n);
}

int CommModel::MembersPerNode(int p, GroupLayout layout) const {
  const int stride = std::max(layout.stride, 1);
  return std::max(1, std::min(p, (network_.gpus_per_node + stride - 1) / stride));
}

Seconds CommModel::HierarchicalAllReduce(Bytes n, int p, GroupLayout layout) const {
  const int g = MembersPerNode(p, layout);
  if (p <= 1 || n <= 0 || g < 2 || !CrossesNodes(p, layout)) return FlatAllReduce(n, p, layout);
  const Link& intra = network_.intra_node;
  const Seconds in_node =
      2.0 * (g - 1) * (intra.alpha + Seconds(static_cast<double>(n) / g * intra.beta_s_per_byte));
  // The g shares of a node cross at once: g flows per group through the node's NICs.
  GroupLayout across = layout;
  across.flows_per_node = std::max(layout.flows_per_node, 1) * g;
  const Link link = LinkFor(p, across);
  const int m = (p + g - 1) / g;
  const double share = static_cast<double>((n + g - 1) / g);
  const Seconds ring = 2.0 * (m - 1) * (link.alpha + Seconds(share / m * link.beta_s_per_byte));
  const Seconds tree = 2.0 * CeilLog2(m) * (link.alpha + Seconds(share * link.beta_s_per_byte));
  return in_node + std::min(ring, tree);
}

AllReduceAlgorithm CommModel::ChooseFlatAllReduce(Bytes n, int p, GroupLayout layout) const {
  if (n >= network_.ring_threshold_bytes) return AllReduceAlgorithm::kRing;
  return TreeAllReduce(n, p, layout) < RingAllReduce(n, p, layout) ? AllReduceAlgorithm::kTree
                                                                   : AllReduceAlgorithm::kRing;
}

Seconds CommModel::FlatAllReduce(Bytes n, int p, GroupLayout layout) const {
  return ChooseFlatAllReduce(n, p, layout) == AllReduceAlgorithm::kRing
             ? RingAllReduce(n, p, layout)
             : TreeAllReduce(n, p, layout);
}

AllReduceAlgorithm CommModel::ChooseAllReduce(Bytes n, int p, GroupLayout layout) const {
  const AllReduceAlgorithm flat = ChooseFlatAllReduce(n, p, layout);
  if (p <= 1 || n <= 0 || MembersPerNode(p, layout) < 2 || !CrossesNodes(p, layout)) return flat;
  return HierarchicalAllReduce(n, p, layout) < FlatAllReduce(n, p, layout)
             ? AllReduceAlgorithm::kHierarchical
             : flat;
}

Seconds CommModel::AllReduce(Bytes n, int p, GroupLayout layout) const {
  switch (ChooseAllReduce(n, p, layout)) {
    case AllReduceAlgorithm::kRing:
      return RingAllReduce(n, p, layout);
    case AllReduceAlgorithm::kTree:
      return TreeAllReduce(n, p, layout);
    case AllReduceAlgorithm::kHierarchical:
      break;
  }
  return HierarchicalAllReduce(n, p, layout);
}

std::string_view AllReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kRing:
      return "ring";
    case AllReduceAlgorithm::kTree:
      return "tree";
    case AllReduceAlgorithm::kHierarchical:
      break;
  }
  return "hierarchical";
}

Seconds CommModel::AllGather(Bytes n, int p, GroupLayout layout) const {
  if (p <= 1 || n <= 0) return Seconds(0);
  const Link link = LinkFor(p, layout);
  return static_cast<double>(p - 1) *
         (link.alpha + Seconds(static_cast<double>(n) / p * link.beta_s_per_byte));
}

Seconds CommModel::ReduceScatter(Bytes n, int p, GroupLayout layout) const {
  // The ring reduce-scatter is the all-gather run backwards: the same steps and segments.
  return AllGather(n, p, layout);
}

Seconds CommModel::Broadcast(Bytes n, int p, GroupLayout layout) const {
  if (p <= 1 || n <= 0) return Seconds(0);
  return static_cast<double>(CeilLog2(p)) * LinkFor(p, layout).Time(n);
}

NetworkModel DefaultNetworkModel(const DeviceSpec& device) {
  NetworkModel network;
  network.name = absl::StrCat(device.name, " default");
  network.gpus_per_node = std::max(device.gpus_per_node, 1);
  network.nics_per_node = network.gpus_per_node;  // the catalog's NIC figure is per GPU
  network.intra_node = Link{Microseconds(9), 1.0 / device.nvlink_bytes_per_second};
  network.inter_node = Link{Microseconds(40), 1.0 / device.network_bytes_per_second};
  return network;
}

NetworkModel AbciNetworkModel() {
  NetworkModel network;
  network.name = "abci";
  network.gpus_per_node = 4;
  network.nics_per_node = 2;  // two InfiniBand EDR per node (paradl-oracle §5.1)
  network.intra_node = Link{Microseconds(9), 1.0 / (50 * kGBps)};
  network.inter_node = Link{Microseconds(41), 1.0 / (12.5 * kGBps)};
  network.inter_node_alpha_steps = {{68, Microseconds(40.3)}, {136, Microseconds(40.5)}};
  return network;
}

std::vector<std::string> NetworkPresetNames() {
  std::vector<std::string> names = {"default", "abci"};
  for (const DeviceSpec& device : DeviceCatalog()) names.push_back(device.name);
  return names;
}

absl::StatusOr<NetworkModel> FindNetworkPreset(std::string_view name, const DeviceSpec& device) {
  if (SameName(name, "default")) return DefaultNetworkModel(device);
  if (SameName(name, "abci")) return AbciNetworkModel();
  if (absl::StatusOr<DeviceSpec> other = FindDevice(name); other.ok()) {
    return DefaultNetworkModel(*other);
  }
  const std::vector<std::string> names = NetworkPresetNames();
  return absl::NotFoundError(absl::StrCat("unknown network preset \"", std::string(name),
                                          "\"; presets: ", absl::StrJoin(names, ", "),
                                          DidYouMean(name, names, "\"")));
}

}  // namespace wavepool::planner
