// Moving activations forward and their gradients back between the ranks of consecutive stage
// instances (stage_program.h, "Transfers"): each rank sends exactly the rows another rank's block
// needs and keeps the rows it needs itself.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stage_engine_internal.h"
#include "step_timer.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/stage_engine.h"

namespace wavepool::runtime {
namespace {

std::vector<std::int64_t> BatchShape(std::int64_t rows, const planner::TensorShape& sample) {
  std::vector<std::int64_t> shape{rows};
  shape.insert(shape.end(), sample.dims.begin(), sample.dims.end());
  return shape;
}

}  // namespace

absl::StatusOr<torch::Tensor> StageEngine::GatherActivations(const StageEdge& edge, int wave,
                                                             const RowRange& rows,
                                                             StepTimes* times) {
  const StageInstance& from = program_->instance(edge.from_stage, wave);
  const planner::TensorShape& sample = model_->graph().layer(edge.producer).output;
  std::vector<torch::Tensor> pieces;
  std::vector<Pending> receives;
  for (int k = 0; k < static_cast<int>(from.ranks.size()); ++k) {
    const RowRange piece = from.Block(k).Intersect(rows);
    if (piece.empty()) continue;
    const int peer = from.ranks[static_cast<std::size_t>(k)];
    if (peer == options_.rank) {
      const InstanceState& producer = *states_[static_cast<std::size_t>(from.id)];
      pieces.push_back(producer.outputs.at(edge.producer)
                           .detach()
                           .narrow(0, piece.begin - producer.rows.begin, piece.size()));
      continue;
    }
    torch::Tensor buffer =
        torch::empty(BatchShape(piece.size(), sample),
                     torch::TensorOptions(torch::kFloat32).device(device_->device()));
    WAVEPOOL_ASSIGN_OR_RETURN(
        Pending received, communicator_->Recv(buffer, peer, program_->ForwardTag(edge.id, wave)));
    receives.push_back(std::move(received));
    pieces.push_back(buffer);
  }
  WAVEPOOL_RETURN_IF_ERROR(WaitForReceives(receives, edge.to_stage, times));
  return pieces.size() == 1 ? pieces.front() : torch::cat(pieces);
}

absl::Status StageEngine::ScatterActivations(const StageEdge& edge, int wave, const RowRange& rows,
                                             const torch::Tensor& output) {
  const StageInstance& to = program_->instance(edge.to_stage, wave);
  for (int k = 0; k < static_cast<int>(to.ranks.size()); ++k) {
    const RowRange piece = to.Block(k).Intersect(rows);
    const int peer = to.ranks[static_cast<std::size_t>(k)];
    if (piece.empty() || peer == options_.rank) continue;
    torch::Tensor rows_out =
        output.detach().narrow(0, piece.begin - rows.begin, piece.size()).contiguous();
    WAVEPOOL_ASSIGN_OR_RETURN(
        Pending sent, communicator_->Send(rows_out, peer, program_->ForwardTag(edge.id, wave)));
    sends_.push_back(std::move(sent));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> StageEngine::GatherGradients(const StageEdge& edge, int wave,
                                                           const RowRange& rows,
                                                           const torch::Tensor& like,
                                                           StepTimes* times) {
  const StageInstance& to = program_->instance(edge.to_stage, wave);
  torch::Tensor gradient = torch::zeros_like(like, torch::TensorOptions().requires_grad(false));
  std::vector<Pending> receives;
  for (int k = 0; k < static_cast<int>(to.ranks.size()); ++k) {
    const RowRange piece = to.Block(k).Intersect(rows);
    if (piece.empty()) continue;
    const int peer = to.ranks[static_cast<std::size_t>(k)];
    torch::Tensor slot = gradient.narrow(0, piece.begin - rows.begin, piece.size());
    if (peer == options_.rank) {
      const InstanceState& consumer = *states_[static_cast<std::size_t>(to.id)];
      const torch::Tensor& imported = consumer.imports.at(edge.producer);
      if (imported.grad().defined()) {
        slot.copy_(imported.grad().narrow(0, piece.begin - consumer.rows.begin, piece.size()));
      }
      continue;
    }
    WAVEPOOL_ASSIGN_OR_RETURN(
        Pending received, communicator_->Recv(slot, peer, program_->BackwardTag(edge.id, wave)));
    receives.push_back(std::move(received));
  }
  WAVEPOOL_RETURN_IF_ERROR(WaitForReceives(receives, edge.from_stage, times));
  return gradient;
}

absl::Status StageEngine::ScatterGradients(const StageEdge& edge, int wave, const RowRange& rows,
                                           const torch::Tensor& gradient) {
  const StageInstance& from = program_->instance(edge.from_stage, wave);
  for (int k = 0; k < static_cast<int>(from.ranks.size()); ++k) {
    const RowRange piece = from.Block(k).Intersect(rows);
    const int peer = from.ranks[static_cast<std::size_t>(k)];
    if (piece.empty() || peer == options_.rank) continue;
    torch::Tensor rows_out =
        gradient.narrow(0, piece.begin - rows.begin, piece.size()).contiguous();
    WAVEPOOL_ASSIGN_OR_RETURN(
        Pending sent, communicator_->Send(rows_out, peer, program_->BackwardTag(edge.id, wave)));
    sends_.push_back(std::move(sent));
  }
  return absl::OkStatus();
}

absl::Status StageEngine::WaitForReceives(std::vector<Pending>& receives, int stage,
                                          StepTimes* times) {
  if (receives.empty()) return absl::OkStatus();
  // A blocking receive is its own launch group: the agent lets background work run during a
  // long one (DeepPool §5).
  StepTimer timer(&times->transfer);
  absl::Status waited;
  absl::Status ran = device_->pacer()->Run(ReceiveGroup(stage), [&] {
    for (Pending& pending : receives) {
      if (absl::Status s = pending.Wait(); !s.ok() && waited.ok()) waited = s;
    }
  });
  return ran.ok() ? waited : ran;
}

absl::Status StageEngine::WaitForSends() {
  absl::Status first;
  for (Pending& pending : sends_) {
    if (absl::Status s = pending.Wait(); !s.ok() && first.ok()) first = s;
  }
  sends_.clear();
  return first;
}

}  // namespace wavepool::runtime
