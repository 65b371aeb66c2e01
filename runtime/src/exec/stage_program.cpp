#include "wavepool/runtime/stage_program.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {

RowRange RowRange::Intersect(const RowRange& other) const {
  return {std::max(begin, other.begin), std::min(end, other.end)};
}

RowRange StageInstance::Block(int k) const {
  const std::int64_t begin = std::min(samples.end, samples.begin + k * per_rank);
  return {begin, std::min(samples.end, begin + per_rank)};
}

int StageInstance::IndexOf(int rank) const {
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    if (ranks[k] == rank) return static_cast<int>(k);
  }
  return -1;
}

RowRange StageInstance::BlockOf(int rank) const {
  const int k = IndexOf(rank);
  return k < 0 ? RowRange{} : Block(k);
}

namespace {

absl::Status PlanError(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("plan ", field, ": ", problem));
}

// stage_of[layer] from the plan's layer names; every graph layer in exactly one stage.
absl::Status AssignLayers(const api::Plan& plan, const planner::ModelGraph& graph,
                          std::vector<int>* stage_of,
                          std::vector<std::vector<planner::LayerId>>* stage_layers) {
  stage_of->assign(static_cast<std::size_t>(graph.size()), -1);
  stage_layers->assign(plan.stages.size(), {});
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    for (std::size_t i = 0; i < plan.stages[s].layers.size(); ++i) {
      const std::string& name = plan.stages[s].layers[i];
      std::optional<planner::LayerId> id = graph.Find(name);
      const std::string field = absl::StrCat("stages[", s, "].layers[", i, "]");
      if (!id.has_value()) {
        return PlanError(field, absl::StrCat("model ", graph.name(), " has no layer '", name, "'"));
      }
      if ((*stage_of)[static_cast<std::size_t>(*id)] >= 0) {
        return PlanError(field, absl::StrCat("layer '", name, "' already runs in stage ",
                                             (*stage_of)[static_cast<std::size_t>(*id)]));
      }
      (*stage_of)[static_cast<std::size_t>(*id)] = static_cast<int>(s);
      (*stage_layers)[s].push_back(*id);
    }
  }
  for (const planner::Layer& layer : graph.layers()) {
    if ((*stage_of)[static_cast<std::size_t>(layer.id)] < 0) {
      return PlanError(
          "stages", absl::StrCat("no stage runs layer '", layer.name, "' of model ", graph.name()));
    }
  }
  for (std::vector<planner::LayerId>& layers : *stage_layers)
    std::sort(layers.begin(), layers.end());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StageProgram> StageProgram::Compile(const api::Plan& plan,
                                                   const planner::ModelGraph& graph) {
  StageProgram p;
  p.world_size_ = static_cast<int>(plan.gpus);
  const bool waves_are_batches = plan.strategy == api::Strategy::kModelParallelWaves;
  // Tick-tock's two waves are two global iterations of one data-parallel program (tick_tock.h).
  p.waves_ = waves_are_batches ? static_cast<int>(plan.waves) : 1;
  p.samples_per_step_ = plan.global_batch_size * p.waves_;
  p.sink_ = graph.sink();
  WAVEPOOL_RETURN_IF_ERROR(AssignLayers(plan, graph, &p.stage_of_, &p.stage_layers_));
  const int stages = static_cast<int>(plan.stages.size());
  p.edges_into_.assign(static_cast<std::size_t>(stages), {});
  p.edges_out_of_.assign(static_cast<std::size_t>(stages), {});
  p.reads_input_.assign(static_cast<std::size_t>(stages), false);
  std::set<std::pair<planner::LayerId, int>> seen;  // (producer, consumer stage)
  for (const planner::Layer& layer : graph.layers()) {
    const int to = p.stage_of(layer.id);
    if (layer.inputs.empty()) p.reads_input_[static_cast<std::size_t>(to)] = true;
    for (planner::LayerId producer : layer.inputs) {
      const int from = p.stage_of(producer);
      if (from > to) {
        return PlanError(
            absl::StrCat("stages[", to, "]"),
            absl::StrCat("layer '", layer.name, "' reads '", graph.layer(producer).name,
                         "', which runs in the later stage ", from));
      }
      if (from == to || !seen.insert({producer, to}).second) continue;
      StageEdge edge{static_cast<int>(p.edges_.size()), producer, from, to};
      p.edges_into_[static_cast<std::size_t>(to)].push_back(edge.id);
      p.edges_out_of_[static_cast<std::size_t>(from)].push_back(edge.id);
      p.edges_.push_back(edge);
    }
  }
  const bool round_robin =
      waves_are_batches && plan.wave_placement == api::WavePlacement::kRoundRobin;
  p.sync_groups_.assign(static_cast<std::size_t>(stages), {});
  for (int s = 0; s < stages; ++s) {
    const api::PlanStage& stage = plan.stages[static_cast<std::size_t>(s)];
    if (waves_are_batches && stage.ranks.size() != 1) {
      return PlanError(absl::StrCat("stages[", s, "].ranks"),
                       "a ModelParallelWaves stage runs on exactly one rank");
    }
    std::set<int> holders;
    for (int w = 0; w < p.waves_; ++w) {
      StageInstance instance;
      instance.id = static_cast<int>(p.instances_.size());
      instance.stage = s;
      instance.wave = w;
      for (std::int64_t rank : stage.ranks) {
        const std::int64_t placed = round_robin ? (rank + w) % plan.gpus : rank;
        instance.ranks.push_back(static_cast<int>(placed));
        holders.insert(static_cast<int>(placed));
      }
      instance.samples = {w * plan.global_batch_size, (w + 1) * plan.global_batch_size};
      instance.per_rank = stage.per_gpu_batch;
      if (instance.per_rank * static_cast<std::int64_t>(instance.ranks.size()) <
          plan.global_batch_size) {
        return PlanError(
            absl::StrCat("stages[", s, "].perGpuBatch"),
            absl::StrCat(stage.per_gpu_batch, " samples on ", instance.ranks.size(),
                         " GPUs do not cover the global batch of ", plan.global_batch_size));
      }
      p.instances_.push_back(std::move(instance));
    }
    p.sync_groups_[static_cast<std::size_t>(s)].assign(holders.begin(), holders.end());
  }
  return p;
}

const StageInstance& StageProgram::instance(int stage, int wave) const {
  return instances_[static_cast<std::size_t>(stage * waves_ + wave)];
}

std::vector<std::vector<int>> StageProgram::DistinctSyncGroups() const {
  std::set<std::vector<int>> groups;
  for (const std::vector<int>& group : sync_groups_) {
    if (group.size() >= 2) groups.insert(group);
  }
  return {groups.begin(), groups.end()};
}

std::vector<planner::LayerId> StageProgram::LayersOn(int rank) const {
  std::vector<planner::LayerId> layers;
  for (int s = 0; s < stage_count(); ++s) {
    const std::vector<int>& group = sync_group(s);
    if (!std::binary_search(group.begin(), group.end(), rank)) continue;
    layers.insert(layers.end(), stage_layers(s).begin(), stage_layers(s).end());
  }
  std::sort(layers.begin(), layers.end());
  return layers;
}

std::vector<int> StageProgram::InstancesOn(int rank) const {
  std::vector<int> ids;
  for (const StageInstance& instance : instances_) {
    if (instance.IndexOf(rank) >= 0) ids.push_back(instance.id);
  }
  return ids;
}

}  // namespace wavepool::runtime
