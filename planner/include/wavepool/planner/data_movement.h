// Data movement of one data-parallel iteration on the G GPUs of one node (scalednn-data-movement
// §II-B, §IV): copying the input batch from the host, scattering it between GPUs, broadcasting the
// weights from GPU 0, and the three ScaleDNN optimisations — CPU-centric batch splitting (§IV-A),
// mini-batch pre-loading on a copy stream (§IV-B) and 3:1 lossy weight compression (§IV-C).
//
// Per iteration, with B samples of s bytes, P parameter bytes, C compute time, PCIe bandwidth h
// per GPU shared by k GPUs on one host link, shard_i = B/G (+1 for the first B mod G GPUs):
//   master GPU:  H2D  B s to GPU 0 alone:               alpha_h + B s / h
//                P2P  GPU 0 sends shard_i s to GPU i:   sum_{i>0} PointToPoint(shard_i s)
//   CPU-centric: H2D  every GPU its shard, at once:     alpha_h + shard_0 s min(k, G) / h
//   both:        weights from GPU 0 (it still updates them, §IV-A fn. 5): Broadcast(w, G), where
//                w = P, or ceil(P / 12) * 4 bytes compressed (3 fp32 values in one, §IV-C)
//   compression: codec = codec_fixed_time + 2 (P + w) / (memory bandwidth * codec_efficiency):
//                GPU 0 reads P and writes w, then every peer (in parallel) reads w and writes P;
//                the fixed part (kernel launches) is why small models lose (§V-A: -1.64%)
//   pre-loading: only max(0, H2D - C) of the next batch's copy stays on the critical path
//   critical path = exposed H2D + P2P + broadcast + codec;  iteration = C + critical path.
// The gradient reduction to GPU 0 is the same under every option and is left to the oracle.
#ifndef WAVEPOOL_PLANNER_DATA_MOVEMENT_H_
#define WAVEPOOL_PLANNER_DATA_MOVEMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

// GPU-to-GPU transfer times inside one node. Implementations are immutable and safe for
// concurrent use. Both times are 0 when n == 0 (and Broadcast when gpus <= 1).
class PeerTransferModel {
 public:
  virtual ~PeerTransferModel() = default;
  // One GPU sends n bytes to another.
  virtual Seconds PointToPoint(Bytes n) const = 0;
  // One GPU sends the same n bytes to gpus - 1 others.
  virtual Seconds Broadcast(Bytes n, int gpus) const = 0;
};
using PeerTransferModelPtr = std::unique_ptr<PeerTransferModel>;

// From the device catalog: bandwidth nvlink_bytes_per_second (host_link_bytes_per_second when the
// device has no NVLink), latency `alpha` (9 us, as DefaultNetworkModel's intra-node level), and
// the broadcast of CommModel: ceil(log2 gpus) (alpha + n / bandwidth).
PeerTransferModelPtr MakeDevicePeerTransfer(const DeviceSpec& device,
                                            Seconds alpha = Microseconds(9));

// Over the planner's communication model (intra-node level). Borrows `comm`, which must outlive it.
class CommPeerTransfer final : public PeerTransferModel {
 public:
  explicit CommPeerTransfer(const CommModel& comm) : comm_(comm) {}
  Seconds PointToPoint(Bytes n) const override { return comm_.PointToPoint(n, false); }
  Seconds Broadcast(Bytes n, int gpus) const override { return comm_.Broadcast(n, gpus); }

 private:
  const CommModel& comm_;
};

struct DataMovementRequest {
  int gpus = 0;                   // G, on one node
  std::int64_t global_batch = 0;  // B: samples per iteration on this node
  Bytes sample_bytes = 0;         // s: one model input as copied (fp32 by default)
  Bytes param_bytes = 0;          // P
  Seconds compute_time{0};        // C: forward + backward per GPU, what pre-loading overlaps
  double host_link_bytes_per_second = 0;  // h: PCIe per GPU and direction
  // k: GPUs behind one PCIe switch sharing its host uplink. 2 as in DGX-1 / DGX A100 and in
  // ScaleDNN's Figure 1(a) ("each pair of GPUs is connected to a PCI host bridge").
  int gpus_per_host_link = 2;
  Seconds host_copy_latency = Microseconds(10);  // alpha_h, per cudaMemcpyAsync
  double memory_bytes_per_second = 0;            // HBM bandwidth, for the codec
  // Fraction of HBM bandwidth the bit-packing kernels reach (§IV-C runs them on the GPU).
  double codec_efficiency = 0.5;
  // Launch and synchronisation cost of one compress plus one decompress pass.
  Seconds codec_fixed_time{0};
};

// The request for `graph` on `device`: sample_bytes from input_shape (fp32), param_bytes from
// TotalParams, h and HBM bandwidth from the device, codec_fixed_time = 2 kernel launches (compress
// and decompress) per layer with parameters; the other fields keep their defaults.
DataMovementRequest DataMovementRequestFor(const ModelGraph& graph, const DeviceSpec& device,
                                           int gpus, std::int64_t global_batch,
                                           Seconds compute_time);

enum class BatchSplit { kMasterGpu, kCpuCentric };

struct DataMovementOption {
  BatchSplit split = BatchSplit::kMasterGpu;
  bool preload = false;
  bool compress_weights = false;

  bool operator==(const DataMovementOption& o) const {
    return split == o.split && preload == o.preload && compress_weights == o.compress_weights;
  }
};
// e.g. "cpu-centric+preload+compression", "master-gpu".
std::string DataMovementOptionName(const DataMovementOption& option);

struct DataMovementEstimate {
  DataMovementOption option;
  Bytes host_to_device_bytes = 0;  // over all GPUs
  Bytes peer_to_peer_bytes = 0;    // the scatter from GPU 0
  Bytes broadcast_bytes = 0;       // weight bytes the G-1 peers receive: (G-1) w
  Bytes input_buffer_bytes = 0;    // most input bytes one GPU holds (doubled by pre-loading)
  Seconds host_to_device{0};       // the copy itself
  Seconds exposed_host_to_device{0};
  Seconds peer_to_peer{0};
  Seconds broadcast{0};
  Seconds codec{0};
  Seconds critical_path{0};
  Seconds iteration{0};
};

struct DataMovementReport {
  // The eight combinations, in preference order for ties: lossless before compressed, no
  // pre-loading buffer before pre-loading, CPU-centric before master GPU.
  std::vector<DataMovementEstimate> options;
  size_t recommended = 0;  // the first option with the shortest iteration

  const DataMovementEstimate& Recommended() const { return options[recommended]; }
  // REQUIRES: options holds all eight combinations (as CompareDataMovement returns).
  const DataMovementEstimate& Find(const DataMovementOption& option) const;
};

// InvalidArgument names the field: gpus < 1, global_batch < gpus, sample_bytes <= 0,
// param_bytes < 0, compute_time < 0, host_link_bytes_per_second <= 0, gpus_per_host_link < 1,
// host_copy_latency < 0, memory_bytes_per_second <= 0, codec_efficiency outside (0, 1],
// codec_fixed_time < 0.
absl::StatusOr<DataMovementEstimate> EstimateDataMovement(const DataMovementRequest& request,
                                                          const PeerTransferModel& peers,
                                                          const DataMovementOption& option);
absl::StatusOr<DataMovementReport> CompareDataMovement(const DataMovementRequest& request,
                                                       const PeerTransferModel& peers);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_DATA_MOVEMENT_H_
