#include "wavepool/planner/data_movement.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

// Three fp32 values travel as one (scalednn-data-movement §IV-C, Figure 8(b)).
constexpr Bytes kCompressedGroupBytes = 3 * kBytesPerItem;

class DevicePeerTransfer final : public PeerTransferModel {
 public:
  DevicePeerTransfer(double bytes_per_second, Seconds alpha)
      : link_{alpha, 1.0 / bytes_per_second} {}

  Seconds PointToPoint(Bytes n) const override { return n == 0 ? Seconds(0) : link_.Time(n); }
  Seconds Broadcast(Bytes n, int gpus) const override {
    if (n == 0 || gpus <= 1) return Seconds(0);
    return std::ceil(std::log2(static_cast<double>(gpus))) * link_.Time(n);
  }

 private:
  Link link_;
};

absl::Status Invalid(std::string_view field, std::string_view rule, double got) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), ": must be ", std::string(rule), ", got ", got));
}

absl::Status ValidateRequest(const DataMovementRequest& r) {
  if (r.gpus < 1) return Invalid("gpus", ">= 1", r.gpus);
  if (r.global_batch < r.gpus) {
    return Invalid("global_batch", absl::StrCat(">= gpus (", r.gpus, ")"),
                   static_cast<double>(r.global_batch));
  }
  if (r.sample_bytes <= 0)
    return Invalid("sample_bytes", "> 0", static_cast<double>(r.sample_bytes));
  if (r.param_bytes < 0) return Invalid("param_bytes", ">= 0", static_cast<double>(r.param_bytes));
  if (r.compute_time < Seconds(0)) return Invalid("compute_time", ">= 0 s", r.compute_time.count());
  if (!(r.host_link_bytes_per_second > 0)) {
    return Invalid("host_link_bytes_per_second", "> 0", r.host_link_bytes_per_second);
  }
  if (r.gpus_per_host_link < 1) return Invalid("gpus_per_host_link", ">= 1", r.gpus_per_host_link);
  if (r.host_copy_latency < Seconds(0)) {
    return Invalid("host_copy_latency", ">= 0 s", r.host_copy_latency.count());
  }
  if (!(r.memory_bytes_per_second > 0)) {
    return Invalid("memory_bytes_per_second", "> 0", r.memory_bytes_per_second);
  }
  if (!(r.codec_efficiency > 0 && r.codec_efficiency <= 1)) {
    return Invalid("codec_efficiency", "in (0, 1]", r.codec_efficiency);
  }
  if (r.codec_fixed_time < Seconds(0)) {
    return Invalid("codec_fixed_time", ">= 0 s", r.codec_fixed_time.count());
  }
  return absl::OkStatus();
}

// Samples GPU i gets when B samples are split evenly (the first B mod G GPUs get one more).
std::int64_t Shard(const DataMovementRequest& r, int gpu) {
  return r.global_batch / r.gpus + (gpu < r.global_batch % r.gpus ? 1 : 0);
}

Seconds HostCopy(const DataMovementRequest& r, Bytes bytes, int sharing) {
  return r.host_copy_latency +
         Seconds(static_cast<double>(bytes) * sharing / r.host_link_bytes_per_second);
}

// The input batch: host-to-device copies and, under master-GPU splitting, the scatter.
void MoveBatch(const DataMovementRequest& r, const PeerTransferModel& peers,
               DataMovementEstimate& e) {
  const Bytes batch_bytes = r.global_batch * r.sample_bytes;
  const Bytes shard0_bytes = Shard(r, 0) * r.sample_bytes;
  e.host_to_device_bytes = batch_bytes;
  if (e.option.split == BatchSplit::kMasterGpu) {
    // §II-B (1)-(2): the whole batch to GPU 0 (alone on its host link), then GPU 0 sends every
    // peer its shard, one after another through its own egress.
    e.host_to_device = HostCopy(r, batch_bytes, 1);
    e.input_buffer_bytes = batch_bytes;
    for (int gpu = 1; gpu < r.gpus; ++gpu) {
      const Bytes bytes = Shard(r, gpu) * r.sample_bytes;
      e.peer_to_peer_bytes += bytes;
      e.peer_to_peer += peers.PointToPoint(bytes);
    }
  } else {
    // §IV-A: every GPU copies its own shard at once; GPUs behind one host link share it.
    e.host_to_device = HostCopy(r, shard0_bytes, std::min(r.gpus_per_host_link, r.gpus));
    e.input_buffer_bytes = shard0_bytes;
  }
  // §IV-B: the next batch's copy runs on a copy stream during this iteration's compute.
  e.exposed_host_to_device =
      e.option.preload ? std::max(Seconds(0), e.host_to_device - r.compute_time) : e.host_to_device;
  if (e.option.preload) e.input_buffer_bytes *= 2;
}

// The weights: broadcast from GPU 0, optionally compressed 3:1 (§II-B (3), §IV-C).
void MoveWeights(const DataMovementRequest& r, const PeerTransferModel& peers,
                 DataMovementEstimate& e) {
  if (r.gpus <= 1) return;
  const bool compress = e.option.compress_weights;
  const Bytes wire =
      compress ? (r.param_bytes + kCompressedGroupBytes - 1) / kCompressedGroupBytes * kBytesPerItem
               : r.param_bytes;
  e.broadcast_bytes = (r.gpus - 1) * wire;
  e.broadcast = peers.Broadcast(wire, r.gpus);
  if (compress) {
    const double bandwidth = r.memory_bytes_per_second * r.codec_efficiency;
    e.codec =
        r.codec_fixed_time + Seconds(2.0 * static_cast<double>(r.param_bytes + wire) / bandwidth);
  }
}

}  // namespace

PeerTransferModelPtr MakeDevicePeerTransfer(const DeviceSpec& device, Seconds alpha) {
  const double bandwidth = device.nvlink_bytes_per_second > 0 ? device.nvlink_bytes_per_second
                                                              : device.host_link_bytes_per_second;
  return std::make_unique<DevicePeerTransfer>(bandwidth, alpha);
}

DataMovementRequest DataMovementRequestFor(const ModelGraph& graph, const DeviceSpec& device,
                                           int gpus, std::int64_t global_batch,
                                           Seconds compute_time) {
  DataMovementRequest request;
  request.gpus = gpus;
  request.global_batch = global_batch;
  request.sample_bytes = graph.input_shape().Elements() * kBytesPerItem;
  request.param_bytes = graph.TotalParams() * kBytesPerItem;
  request.compute_time = compute_time;
  request.host_link_bytes_per_second = device.host_link_bytes_per_second;
  request.memory_bytes_per_second = device.memory_bytes_per_second;
  int param_layers = 0;
  for (const Layer& layer : graph.layers()) param_layers += layer.params > 0 ? 1 : 0;
  request.codec_fixed_time = 2.0 * param_layers * device.kernel_launch_overhead;
  return request;
}

std::string DataMovementOptionName(const DataMovementOption& option) {
  std::string name = option.split == BatchSplit::kMasterGpu ? "master-gpu" : "cpu-centric";
  if (option.preload) absl::StrAppend(&name, "+preload");
  if (option.compress_weights) absl::StrAppend(&name, "+compression");
  return name;
}

const DataMovementEstimate& DataMovementReport::Find(const DataMovementOption& option) const {
  for (const DataMovementEstimate& estimate : options) {
    if (estimate.option == option) return estimate;
  }
  return options.front();
}

absl::StatusOr<DataMovementEstimate> EstimateDataMovement(const DataMovementRequest& request,
                                                          const PeerTransferModel& peers,
                                                          const DataMovementOption& option) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateRequest(request));
  DataMovementEstimate e;
  e.option = option;
  MoveBatch(request, peers, e);
  MoveWeights(request, peers, e);
  e.critical_path = e.exposed_host_to_device + e.peer_to_peer + e.broadcast + e.codec;
  e.iteration = request.compute_time + e.critical_path;
  return e;
}

absl::StatusOr<DataMovementReport> CompareDataMovement(const DataMovementRequest& request,
                                                       const PeerTransferModel& peers) {
  DataMovementReport report;
  for (bool compress : {false, true}) {
    for (bool preload : {false, true}) {
      for (BatchSplit split : {BatchSplit::kCpuCentric, BatchSplit::kMasterGpu}) {
        WAVEPOOL_ASSIGN_OR_RETURN(DataMovementEstimate estimate,
                                  EstimateDataMovement(request, peers, {split, preload, compress}));
        report.options.push_back(estimate);
      }
    }
  }
  for (size_t i = 1; i < report.options.size(); ++i) {
    if (report.options[i].iteration < report.options[report.recommended].iteration) {
      report.recommended = i;
    }
  }
  return report;
}

}  // namespace wavepool::planner
