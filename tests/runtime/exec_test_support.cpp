#include "tests/runtime/exec_test_support.h"

#include <atomic>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/executor_factory.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/rendezvous.h"
#include "wavepool/runtime/sample_source.h"
#include "wavepool/runtime/stage_engine.h"

namespace wavepool::runtime::testing {

absl::StatusOr<api::Plan> PlanFor(const planner::ModelGraph& graph,
                                  const planner::PlanRequest& request, std::int64_t steps,
                                  double learning_rate, std::int64_t seed) {
  absl::StatusOr<planner::DeviceSpec> device = planner::FindDevice("a100");
  if (!device.ok()) return device.status();
  planner::ComputeCostModelPtr compute = planner::MakeAnalyticCostModel(*device);
  const planner::CommModel comm(planner::DefaultNetworkModel(*device));
  absl::StatusOr<planner::PlanReport> report =
      planner::MakePlan(planner::PlanContext{graph, *device, *compute, comm}, request);
  if (!report.ok()) return report.status();
  report->plan.training.learning_rate = learning_rate;
  report->plan.training.steps = steps;
  report->plan.training.seed = seed;
  return report->plan;
}

absl::StatusOr<planner::ModelGraph> BranchyWithoutBatchNorm() {
  using planner::LayerId;
  using planner::ModelBuilder;
  auto conv = [](std::int64_t out, int kh, int kw, int ph, int pw) {
    ModelBuilder::Conv c;
    c.out_channels = out;
    c.kernel_h = kh;
    c.kernel_w = kw;
    c.pad_h = ph;
    c.pad_w = pw;
    c.bias = true;
    c.relu = true;
    return c;
  };
  ModelBuilder b("branchy_nobn", planner::TensorShape{{3, 32, 32}});
  const LayerId stem = b.Conv2d("stem", ModelBuilder::kInput, conv(16, 3, 3, 1, 1));
  const LayerId b1 = b.Conv2d("block1.branch1x1", stem, conv(8, 1, 1, 0, 0));
  const LayerId b2 = b.Conv2d("block1.branch3x3_1", stem, conv(8, 1, 1, 0, 0));
  const LayerId b2a = b.Conv2d("block1.branch3x3_2a", b2, conv(8, 1, 3, 0, 1));
  const LayerId b2b = b.Conv2d("block1.branch3x3_2b", b2, conv(8, 3, 1, 1, 0));
  const LayerId b2cat = b.Concat("block1.branch3x3_concat", {b2a, b2b});
  const LayerId pool = b.AvgPool2d("block1.branch_pool_avg", stem, 3, 1, 1);
  const LayerId b3 = b.Conv2d("block1.branch_pool", pool, conv(8, 1, 1, 0, 0));
  const LayerId block1 = b.Concat("block1.concat", {b1, b2cat, b3});  // 32 channels
  const LayerId down = b.MaxPool2d("pool", block1, 2, 2);             // 32x16x16
  const LayerId c1 = b.Conv2d("block2.conv1", down, conv(32, 3, 3, 1, 1));
  ModelBuilder::Conv second = conv(32, 3, 3, 1, 1);
  second.relu = false;
  const LayerId c2 = b.Conv2d("block2.conv2", c1, second);
  const LayerId sum = b.Add("block2.add", {c2, down});
  LayerId x = b.ReLU("block2.relu", sum);
  x = b.AdaptiveAvgPool2d("avgpool", x, 1, 1);
  x = b.Flatten("flatten", x);
  b.Linear("fc", x, 10);
  return std::move(b).Build();
}

namespace {

std::string FreshStorePath() {
  static std::atomic<int> counter{0};
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      absl::StrCat("wavepool-exec-test-", getpid(), "-", counter.fetch_add(1));
  std::filesystem::remove(path);
  return path.string();
}

absl::StatusOr<RankResult> TrainRank(const api::Plan& plan,
                                     std::shared_ptr<const planner::ModelGraph> graph, int rank,
                                     const StoreAddress& address, torch::Device device,
                                     std::int64_t slice_rows) {
  absl::StatusOr<StorePtr> store =
      Rendezvous(address, rank, static_cast<int>(plan.gpus), std::chrono::seconds(60));
  if (!store.ok()) return store.status();
  absl::StatusOr<SampleSpec> spec = SampleSpecOf(*graph);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<SampleSourcePtr> source =
      OpenSampleSource("synthetic", *spec, static_cast<std::uint64_t>(plan.training.seed));
  if (!source.ok()) return source.status();
  std::unique_ptr<LaunchPacer> pacer = MakeUnpacedLauncher();
  ExecutorSetup setup;
  setup.plan = plan;
  setup.graph = std::move(graph);
  setup.rank = rank;
  setup.store = *store;
  setup.pacer = pacer.get();
  setup.source = *source;
  setup.timeout = std::chrono::seconds(60);
  setup.bucket_bytes = 2048;  // several buckets even for the tiny models
  setup.device = device;
  absl::StatusOr<std::unique_ptr<Executor>> executor = MakeExecutor(setup);
  if (!executor.ok()) return executor.status();
  if (absl::Status s = (*executor)->SynchronizeInitialWeights(); !s.ok()) return s;
  RankResult result;
  StepHooks hooks;
  hooks.after_step = [&](const StepReport& report) { result.reports.push_back(report); };
  hooks.slice_rows = [slice_rows](std::int64_t) { return slice_rows; };
  result.slices_steps = (*executor)->SlicesSteps();
  absl::StatusOr<std::int64_t> next = (*executor)->Train(0, plan.training.steps, hooks);
  if (!next.ok()) return next.status();
  for (const Replica& replica : (*executor)->Replicas()) {
    for (auto& [name, tensor] : replica.model->NamedParameters()) {
      result.parameters[absl::StrCat(replica.name, "/", name)] =
          tensor.detach().to(torch::kCPU).clone();
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<std::vector<RankResult>> TrainRanks(const api::Plan& plan,
                                                   std::shared_ptr<const planner::ModelGraph> graph,
                                                   torch::Device device, std::int64_t slice_rows) {
  StoreAddress address;
  address.kind = StoreAddress::Kind::kFile;
  address.path = FreshStorePath();
  const int world = static_cast<int>(plan.gpus);
  std::vector<absl::StatusOr<RankResult>> results(static_cast<std::size_t>(world),
                                                  absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      results[static_cast<std::size_t>(rank)] =
          TrainRank(plan, graph, rank, address, device, slice_rows);
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::filesystem::remove(address.path);
  std::vector<RankResult> ranks;
  for (int rank = 0; rank < world; ++rank) {
    absl::StatusOr<RankResult>& result = results[static_cast<std::size_t>(rank)];
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat("rank ", rank, ": ", result.status().message()));
    }
    ranks.push_back(*std::move(result));
  }
  return ranks;
}

double RelativeDifference(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  const double diff = (a - b).abs().max().item<double>();
  return scale == 0 ? diff : diff / scale;
}

absl::StatusOr<std::map<std::string, torch::Tensor>> MergeReplicas(
    const std::vector<RankResult>& ranks, const std::string& replica, double tolerance) {
  std::map<std::string, torch::Tensor> merged;
  const std::string prefix = replica + "/";
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& [name, tensor] : ranks[r].parameters) {
      if (name.rfind(prefix, 0) != 0) continue;
      const std::string key = name.substr(prefix.size());
      auto [it, inserted] = merged.emplace(key, tensor);
      if (!inserted && RelativeDifference(tensor, it->second) > tolerance) {
        return absl::InvalidArgumentError(absl::StrCat("rank ", r, " holds ", key, " off by ",
                                                       RelativeDifference(tensor, it->second)));
      }
    }
  }
  return merged;
}

absl::StatusOr<ReferenceResult> TrainReference(const planner::ModelGraph& graph,
                                               const api::PlanTraining& training,
                                               std::int64_t samples_per_step, std::int64_t steps) {
  auto shared = std::make_shared<const planner::ModelGraph>(graph);
  absl::StatusOr<std::unique_ptr<ExecutableModel>> model =
      ExecutableModel::Build(shared, {}, static_cast<std::uint64_t>(training.seed));
  if (!model.ok()) return model.status();
  (*model)->Train(true);
  std::unique_ptr<torch::optim::Optimizer> optimizer =
      MakeOptimizer(training, (*model)->Parameters());
  absl::StatusOr<SampleSpec> spec = SampleSpecOf(graph);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<SampleSourcePtr> source =
      OpenSampleSource("synthetic", *spec, static_cast<std::uint64_t>(training.seed));
  if (!source.ok()) return source.status();
  BatchLoader::Options options;
  options.preload = false;
  absl::StatusOr<std::unique_ptr<BatchLoader>> loader = BatchLoader::Create(
      *source,
      SampleOrder(static_cast<std::uint64_t>(training.seed), (*source)->size(), samples_per_step),
      {BatchBlock{0, samples_per_step}}, options);
  if (!loader.ok()) return loader.status();
  ReferenceResult result;
  for (std::int64_t step = 0; step < steps; ++step) {
    absl::StatusOr<std::vector<Batch>> batch = (*loader)->Next();
    if (!batch.ok()) return batch.status();
    ForwardContext context;
    context.labels = batch->front().labels;
    context.step = step;
    std::vector<torch::Tensor> outputs(static_cast<std::size_t>(graph.size()));
    for (const planner::Layer& layer : graph.layers()) {
      std::vector<torch::Tensor> inputs;
      for (planner::LayerId in : layer.inputs)
        inputs.push_back(outputs[static_cast<std::size_t>(in)]);
      if (inputs.empty()) inputs.push_back(batch->front().inputs);
      outputs[static_cast<std::size_t>(layer.id)] = (*model)->Forward(layer.id, inputs, context);
    }
    torch::Tensor loss =
        LossSum(graph.layer(graph.sink()), outputs[static_cast<std::size_t>(graph.sink())],
                batch->front().labels) /
        static_cast<double>(samples_per_step);
    optimizer->zero_grad();
    loss.backward();
    {
      torch::NoGradGuard no_grad;
      optimizer->step();
    }
    result.losses.push_back(loss.item<double>());
  }
  for (auto& [name, tensor] : (*model)->NamedParameters()) {
    result.parameters[name] = tensor.detach().clone();
  }
  return result;
}

}  // namespace wavepool::runtime::testing
