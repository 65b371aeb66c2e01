// Forward and backward of one stage instance on this rank, layer by layer (stage_engine.h).
#include <utility>

#include "absl/strings/str_cat.h"
#include "stage_engine_internal.h"
#include "step_timer.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/stage_engine.h"

namespace wavepool::runtime {

absl::Status StageEngine::Forward(const StageInstance& instance, const std::vector<Batch>& data,
                                  std::optional<RowRange> slice, std::int64_t step,
                                  StepTimes* times) {
  const RowRange rows = slice.value_or(instance.BlockOf(options_.rank));
  auto state = std::make_unique<InstanceState>();
  state->rows = rows;
  if (rows.empty()) {  // a rank with no samples here launches nothing (DeepPool §4: idle time)
    states_[static_cast<std::size_t>(instance.id)] = std::move(state);
    return absl::OkStatus();
  }
  if (!data.empty()) {
    state->input = data.front().inputs;
    state->labels = data.front().labels;
  }
  for (int edge_id : program_->edges_into(instance.stage)) {
    const StageEdge& edge = program_->edges()[static_cast<std::size_t>(edge_id)];
    WAVEPOOL_ASSIGN_OR_RETURN(torch::Tensor gathered,
                              GatherActivations(edge, instance.wave, rows, times));
    state->imports[edge.producer] = gathered.detach().requires_grad_(true);
  }
  ForwardContext context;
  context.labels = state->labels;
  context.step = step;
  context.first_sample = rows.begin;
  const planner::ModelGraph& graph = model_->graph();
  for (planner::LayerId id : program_->stage_layers(instance.stage)) {
    std::vector<torch::Tensor> inputs;
    for (planner::LayerId producer : graph.layer(id).inputs) {
      auto local = state->copies.find(producer);
      inputs.push_back(local != state->copies.end() ? local->second : state->imports[producer]);
    }
    if (inputs.empty()) inputs.push_back(state->input);
    torch::Tensor output;
    absl::Status computed;
    WAVEPOOL_RETURN_IF_ERROR(device_->pacer()->Run(ForwardGroup(id), [&] {
      try {
        output = model_->Forward(id, inputs, context);
      } catch (const std::exception& e) {
        computed = internal::LayerError(graph, id, "forward", e);
      }
    }));
    WAVEPOOL_RETURN_IF_ERROR(computed);
    state->outputs[id] = output;
    if (id != program_->sink()) {
      state->copies[id] = output.detach().requires_grad_(output.is_floating_point());
    }
    activation_bytes_ += internal::Bytes(output);
    ReportMemory();
  }
  for (int edge_id : program_->edges_out_of(instance.stage)) {
    const StageEdge& edge = program_->edges()[static_cast<std::size_t>(edge_id)];
    WAVEPOOL_RETURN_IF_ERROR(
        ScatterActivations(edge, instance.wave, rows, state->outputs[edge.producer]));
  }
  states_[static_cast<std::size_t>(instance.id)] = std::move(state);
  return absl::OkStatus();
}

absl::Status StageEngine::Backward(const StageInstance& instance, double loss_scale, bool reduce,
                                   torch::Tensor* loss_sum, StepTimes* times) {
  InstanceState& state = *states_[static_cast<std::size_t>(instance.id)];
  const int stage = instance.stage;
  const std::vector<planner::LayerId>& layers = program_->stage_layers(stage);
  const planner::ModelGraph& graph = model_->graph();
  // Once this rank's last instance of the stage is done, each layer's gradients are final: its
  // bucket may start summing while backward goes on.
  GradientReducer* reducer = --instances_left_[static_cast<std::size_t>(stage)] == 0 && reduce
                                 ? reducers_[static_cast<std::size_t>(stage)].get()
                                 : nullptr;
  auto layer_done = [reducer](planner::LayerId id) {
    return reducer == nullptr ? absl::OkStatus() : reducer->LayerReady(id);
  };
  if (state.rows.empty()) {
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      WAVEPOOL_RETURN_IF_ERROR(layer_done(*it));
    }
    return absl::OkStatus();
  }
  {
    // The gradients later stages send back for this instance's outputs.
    std::map<planner::LayerId, torch::Tensor> from_later;
    for (int edge_id : program_->edges_out_of(stage)) {
      const StageEdge& edge = program_->edges()[static_cast<std::size_t>(edge_id)];
      WAVEPOOL_ASSIGN_OR_RETURN(
          torch::Tensor gradient,
          GatherGradients(edge, instance.wave, state.rows, state.outputs[edge.producer], times));
      torch::Tensor& sum = from_later[edge.producer];
      sum = sum.defined() ? sum + gradient : gradient;
    }
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      const planner::LayerId id = *it;
      const torch::Tensor& output = state.outputs[id];
      torch::Tensor root;
      torch::Tensor gradient;
      if (id == program_->sink()) {
        root = LossSum(graph.layer(id), output, state.labels);
        *loss_sum = loss_sum->defined() ? *loss_sum + root.detach() : root.detach();
        root = root * loss_scale;
      } else {
        root = output;
        auto copy = state.copies.find(id);
        if (copy != state.copies.end()) {
          gradient = copy->second.grad();
          // Its consumers are done: free the copy and its gradient now, as autograd frees an
          // intermediate gradient once it is used (a smaller working set each step).
          state.copies.erase(copy);
        }
        auto later = from_later.find(id);
        if (later != from_later.end()) {
          gradient = gradient.defined() ? gradient + later->second : later->second;
        }
      }
      if (!root.requires_grad() || (id != program_->sink() && !gradient.defined())) {
        WAVEPOOL_RETURN_IF_ERROR(layer_done(id));
        continue;
      }
      absl::Status computed;
      WAVEPOOL_RETURN_IF_ERROR(device_->pacer()->Run(BackwardGroup(id), [&] {
        try {
          if (gradient.defined()) {
            torch::autograd::backward({root}, {gradient});
          } else {
            torch::autograd::backward({root});
          }
        } catch (const std::exception& e) {
          computed = internal::LayerError(graph, id, "backward", e);
        }
      }));
      WAVEPOOL_RETURN_IF_ERROR(computed);
      // The activations of this layer are no longer needed.
      activation_bytes_ -= std::min(activation_bytes_, internal::Bytes(output));
      state.outputs.erase(id);
      ReportMemory();
      WAVEPOOL_RETURN_IF_ERROR(layer_done(id));
    }
    for (int edge_id : program_->edges_into(stage)) {
      const StageEdge& edge = program_->edges()[static_cast<std::size_t>(edge_id)];
      const torch::Tensor& imported = state.imports[edge.producer];
      torch::Tensor gradient =
          imported.grad().defined() ? imported.grad() : torch::zeros_like(imported);
      WAVEPOOL_RETURN_IF_ERROR(ScatterGradients(edge, instance.wave, state.rows, gradient));
    }
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime
