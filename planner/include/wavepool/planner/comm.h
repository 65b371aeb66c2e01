// Communication cost: the Hockney alpha-beta model per network level, with the collectives the
// planner prices (paradl-oracle §4.3-4.4; deeppool-burst-parallel §4.1 "Communication cost").
#ifndef WAVEPOOL_PLANNER_COMM_H_
#define WAVEPOOL_PLANNER_COMM_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

// One network level in the Hockney model: sending n bytes takes alpha + n * beta.
struct Link {
  Seconds alpha{0};            // latency per message
  double beta_s_per_byte = 0;  // seconds per byte (1 / bandwidth)

  Seconds Time(Bytes n) const { return alpha + Seconds(static_cast<double>(n) * beta_s_per_byte); }
};

// Inter-node latency as a step function of scale (paradl-oracle §4.4: 40.3 us up to 68 GPUs,
// 40.5 us up to 136, 41 us beyond on ABCI). A group spanning g GPUs uses the alpha of the first
// step with up_to_gpus >= g, and NetworkModel::inter_node.alpha beyond the last step.
struct AlphaStep {
  int up_to_gpus = 0;
  Seconds alpha{0};
};

struct NetworkModel {
  std::string name;  // e.g. "a100-40gb default", "abci", or the file it came from
  int gpus_per_node = 8;
  // Network interfaces per node. Flows leaving a node at the same time share them: k flows over
  // m NICs get 1 / ceil(k / m) of a NIC's bandwidth each (paradl-oracle §4.3, self-contention).
  int nics_per_node = 8;
  Link intra_node;                                // NVLink/NVSwitch, per GPU
  Link inter_node;                                // one NIC, per flow
  std::vector<AlphaStep> inter_node_alpha_steps;  // optional; ascending up_to_gpus
  // External contention (congestion from other jobs, measured): every collective that crosses
  // nodes multiplies its beta term by this factor (>= 1).
  double contention = 1.0;
  // A flat all-reduce uses the ring (bandwidth-bound) algorithm for messages of at least this
  // size; below it, the cheaper of ring and tree (latency-bound) for the group at hand. A group
  // that spans nodes may use the hierarchical all-reduce instead (CommModel::AllReduce).
  Bytes ring_threshold_bytes = 1 << 20;
};

// OK when the model is usable: gpus_per_node and nics_per_node >= 1, alphas >= 0, betas > 0,
// contention >= 1, ring_threshold_bytes >= 0, steps with ascending up_to_gpus >= 1 and
// non-decreasing alphas no larger than inter_node.alpha. InvalidArgument names the field
// ("interNode.bytesPerSecond" style, as in the network file).
absl::Status ValidateNetworkModel(const NetworkModel& network);

// kHierarchical: reduce-scatter inside each node, an all-reduce of every GPU's share across the
// nodes, all-gather inside each node (CommModel::HierarchicalAllReduce).
enum class AllReduceAlgorithm { kRing, kTree, kHierarchical };

// "ring", "tree", "hierarchical".
std::string_view AllReduceAlgorithmName(AllReduceAlgorithm algorithm);

// Where the members of a communicating group sit. Ranks fill nodes in order (gpus_per_node each,
// the group's first member on a node boundary); consecutive members are `stride` ranks apart:
// 1 for a packed group, the model-split size for the data-parallel groups of a hybrid strategy.
// `flows_per_node` groups of this shape communicate at the same time, each with one flow through
// every node they cross; their flows share the node's NICs.
struct GroupLayout {
  int stride = 1;
  int flows_per_node = 1;
};

// Collective times over p GPUs. A group stays on intra_node while its members span at most one
// node and is priced on its bottleneck link beyond: the slower of intra_node and inter_node (with
// the alpha step for the span, external contention and NIC sharing), since a ring that crosses
// nodes also takes intra-node hops. Every time is 0 for p <= 1 or n <= 0, and non-decreasing in p
// for a fixed size and layout (the burst search's pruning relies on it). A NetworkModel that
// fails ValidateNetworkModel is clamped into a usable one (steps sorted and made
// non-decreasing, counts and factors raised to 1, negative or non-finite figures to 0), so the
// guarantees hold for any input.
// Immutable and safe for concurrent use.
class CommModel {
 public:
  explicit CommModel(NetworkModel network);

  const NetworkModel& network() const { return network_; }
  // True when a group of p GPUs laid out as `layout` spans more than one node.
  bool CrossesNodes(int gpus, GroupLayout layout = {}) const;
  // The effective link a group of p GPUs communicates over.
  Link LinkFor(int gpus, GroupLayout layout = {}) const;

  // alpha + n beta between two GPUs; a cross-node pair uses the smallest inter-node scale (two
  // neighbouring nodes) and the external contention, but shares no NIC.
  Seconds PointToPoint(Bytes n, bool cross_node) const;
  // 2 (p-1) (alpha + n/p beta)
  Seconds RingAllReduce(Bytes n, int p, GroupLayout layout = {}) const;
  // 2 ceil(log2 p) (alpha + n beta)
  Seconds TreeAllReduce(Bytes n, int p, GroupLayout layout = {}) const;
  // For a group that spans nodes with g = MembersPerNode(layout) >= 2 of its members in a node:
  //   2 (g-1) (alpha_intra + n/g beta_intra)          reduce-scatter, then all-gather, in the node
  //   + min(2 (m-1) (alpha + s/m beta), 2 ceil(log2 m) (alpha + s beta))
  // where m = ceil(p / g) nodes and s = ceil(n / g) bytes: each of a node's g GPUs all-reduces its
  // share with the same GPU of every other node (ring or tree, the cheaper), the g flows of a node
  // (times layout.flows_per_node) sharing its NICs; alpha and beta are the inter-node level's as in
  // LinkFor, with that sharing. NCCL's tree and multi-ring all-reduces work this way; a flat ring
  // over thousands of GPUs would pay 2 (p-1) latencies. For any other group, FlatAllReduce.
  Seconds HierarchicalAllReduce(Bytes n, int p, GroupLayout layout = {}) const;
  // Members of a group with this layout in its first node: ceil(gpus_per_node / stride), at most p.
  int MembersPerNode(int p, GroupLayout layout = {}) const;
  // kRing when n >= ring_threshold_bytes, else whichever of ring and tree is cheaper (ring on
  // ties): the algorithm of a flat all-reduce (ParaDL's formulas, paradl-oracle §4.3).
  AllReduceAlgorithm ChooseFlatAllReduce(Bytes n, int p, GroupLayout layout = {}) const;
  Seconds FlatAllReduce(Bytes n, int p, GroupLayout layout = {}) const;
  // The flat choice, or kHierarchical when the group spans nodes with at least two members in a
  // node and the hierarchical all-reduce is cheaper (the flat one on ties).
  AllReduceAlgorithm ChooseAllReduce(Bytes n, int p, GroupLayout layout = {}) const;
  Seconds AllReduce(Bytes n, int p, GroupLayout layout = {}) const;
  // n is the gathered (total) size: (p-1) (alpha + n/p beta)
  Seconds AllGather(Bytes n, int p, GroupLayout layout = {}) const;
  // n is the size before the scatter, each GPU keeps n/p: (p-1) (alpha + n/p beta)
  Seconds ReduceScatter(Bytes n, int p, GroupLayout layout = {}) const;
  // ceil(log2 p) (alpha + n beta)
  Seconds Broadcast(Bytes n, int p, GroupLayout layout = {}) const;

 private:
  NetworkModel network_;
};

// The default network for a device: intra-node from its NVLink figures (alpha 9 us), inter-node
// from its NIC (alpha 40 us, one NIC per GPU), gpus_per_node from the catalog, no alpha steps.
NetworkModel DefaultNetworkModel(const DeviceSpec& device);

// The paradl-oracle paper's ABCI machine (V100, 4 GPUs and 2 InfiniBand EDR NICs per node,
// 50 GB/s and 9 us inside a node, 12.5 GB/s per NIC between nodes with alpha 40.3/40.5/41 us
// up to 68 / up to 136 / beyond 136 GPUs).
NetworkModel AbciNetworkModel();

// The network models known by name, in this order: "default" (the planned device's,
// DefaultNetworkModel), "abci" (AbciNetworkModel), then every catalog device's name (that device's
// default network: "h100" plans on the network of H100 nodes whatever GPU is planned).
std::vector<std::string> NetworkPresetNames();

// The preset `name` names (matched as SameName matches names; device aliases work too), with
// "default" meaning `device`'s. NotFound suggests the closest names and lists the presets.
absl::StatusOr<NetworkModel> FindNetworkPreset(std::string_view name, const DeviceSpec& device);

// Reads a network model from JSON (a document starting with '{') or YAML, so that measured
// collective benchmarks can be plugged in. Fields (all optional except the two links):
//   name, gpusPerNode (8), nicsPerNode (gpusPerNode), contention (1),
//   ringThresholdBytes (1048576),
//   intraNode: {alphaSeconds, bytesPerSecond}, interNode: {alphaSeconds, bytesPerSecond},
//   interNodeAlphaSteps: [{upToGpus, alphaSeconds}, ...]
// Unknown fields are errors. InvalidArgument names the field, e.g.
// "interNode.bytesPerSecond: must be > 0, got -1", or the line of a syntax error.
absl::StatusOr<NetworkModel> ParseNetworkModel(std::string_view text);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_COMM_H_
