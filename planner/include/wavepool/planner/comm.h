// Communication cost: the Hockney alpha-beta model per network level, with the collectives the
// planner prices (paradl-oracle §4.3-4.4; deeppool-burst-parallel §4.1 "Communication cost").
#ifndef WAVEPOOL_PLANNER_COMM_H_
#define WAVEPOOL_PLANNER_COMM_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

// One network level in the Hockney model: sending n bytes takes alpha + n * beta.
struct Link {
  Seconds alpha{0};        // latency per message
  double beta_s_per_byte = 0;  // seconds per byte (1 / bandwidth)

  Seconds Time(Bytes n) const { return alpha + Seconds(static_cast<double>(n) * beta_s_per_byte); }
};

// Inter-node latency as a step function of scale (paradl-oracle §4.4: 40.3 us up to 68 GPUs,
// 40.5 us up to 136, 41 us beyond on ABCI).
struct AlphaStep {
  int up_to_gpus = 0;
  Seconds alpha{0};
};

struct NetworkModel {
  std::string name;                // e.g. "a100-40gb default", "abci", or the file it came from
  int gpus_per_node = 8;
  Link intra_node;                 // NVLink/NVSwitch, per GPU
  Link inter_node;                 // the NIC, per GPU
  std::vector<AlphaStep> inter_node_alpha_steps;  // optional; ascending up_to_gpus
  // Flows that share a link divide its bandwidth (paradl-oracle §4.3, "contention"): each of the
  // collectives below multiplies its beta term by this factor when it crosses nodes (>= 1).
  double contention = 1.0;
  // All-reduce switches from the tree (latency-bound) to the ring (bandwidth-bound) algorithm at
  // this message size; at or above 2 GPUs the cheaper of the two below the threshold is used.
  Bytes ring_threshold_bytes = 1 << 20;
};

enum class AllReduceAlgorithm { kRing, kTree };

// Collective times over p GPUs with the lowest-ranked GPUs packed into nodes (gpus_per_node each).
// A collective stays on intra_node while p <= gpus_per_node and is priced on inter_node (with
// contention) beyond. Every time is 0 for p == 1 or n == 0, and non-decreasing in p for a fixed
// size. Immutable and safe for concurrent use.
class CommModel {
 public:
  explicit CommModel(NetworkModel network);

  const NetworkModel& network() const { return network_; }
  // The level a group of p GPUs communicates over (inter-node alpha from the steps for p).
  Link LinkFor(int gpus) const;

  Seconds PointToPoint(Bytes n, bool cross_node) const;
  // 2 (p-1) (alpha + n/p beta)
  Seconds RingAllReduce(Bytes n, int p) const;
  // 2 ceil(log2 p) (alpha + n beta)
  Seconds TreeAllReduce(Bytes n, int p) const;
  AllReduceAlgorithm ChooseAllReduce(Bytes n, int p) const;
  Seconds AllReduce(Bytes n, int p) const;
  // n is the gathered (total) size: (p-1) (alpha + n/p beta)
  Seconds AllGather(Bytes n, int p) const;
  Seconds ReduceScatter(Bytes n, int p) const;
  // ceil(log2 p) (alpha + n beta)
  Seconds Broadcast(Bytes n, int p) const;

 private:
  NetworkModel network_;
};

// The default network for a device: intra-node from its NVLink figures (alpha 9 us), inter-node
// from its NIC (alpha 40 us), gpus_per_node from the catalog.
NetworkModel DefaultNetworkModel(const DeviceSpec& device);

// The paradl-oracle paper's ABCI machine (V100, 4 GPUs per node, 50 GB/s and 9 us inside a node,
// 12.5 GB/s between nodes with alpha 40.3/40.5/41 us by scale).
NetworkModel AbciNetworkModel();

// Reads a network model from JSON or YAML, so that measured collective benchmarks can be plugged
// in. Fields (all optional except the two links):
//   name, gpusPerNode, contention, ringThresholdBytes,
//   intraNode: {alphaSeconds, bytesPerSecond}, interNode: {alphaSeconds, bytesPerSecond},
//   interNodeAlphaSteps: [{upToGpus, alphaSeconds}, ...]
// InvalidArgument names the field, e.g. "interNode.bytesPerSecond: must be > 0, got -1".
absl::StatusOr<NetworkModel> ParseNetworkModel(std::string_view text);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_COMM_H_
