// Tick-tock against data parallel on one GPU (wavelet-tick-tock §5): the same model, per-wave
// batch and data, trained by the runtime's executors on a CUDA device, first as data parallel
// (one wave of --batch per iteration), then as tick-tock (two waves of --batch, each on its own
// stream and thread, their forward passes offset by half an iteration). Prints one JSON line per
// mode: samples per second over the timed steps (wall clock from the end of the warm-up to the
// last step) and the median time between consecutive steps.
//
//   ticktock_bench [--model resnet50] [--batch 128] [--steps 40] [--warmup 8] [--device cuda:0]
//                  [--modes DataParallel,TickTock] [--agent-dir DIR]
//
// With --agent-dir each mode registers with the node agent there as a foreground task, which
// records its memory waves (the driver scrapes the agent's /metrics while a mode runs). Samples
// come from the synthetic source, precomputed into a pool of --pool samples and read round-robin,
// so that generating them on the CPU does not bound the GPU.
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/planner.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/agent_session.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/executor_factory.h"
#include "wavepool/runtime/rendezvous.h"
#include "wavepool/runtime/replica_device.h"
#include "wavepool/runtime/sample_source.h"

namespace wavepool::runtime {
namespace {

struct Options {
  std::string model = "resnet50";
  std::int64_t batch = 128;
  std::int64_t steps = 40;
  std::int64_t warmup = 8;
  std::int64_t pool = 256;
  std::string device = "cuda:0";
  std::vector<std::string> modes = {"DataParallel", "TickTock"};
  std::string agent_dir;
};

absl::StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag.rfind("--", 0) != 0 || i + 1 >= argc) {
      return absl::InvalidArgumentError(absl::StrCat("expected --flag VALUE, got '", flag, "'"));
    }
    const std::string value = argv[i + 1];
    std::int64_t* number = flag == "--batch"    ? &options.batch
                           : flag == "--steps"  ? &options.steps
                           : flag == "--warmup" ? &options.warmup
                           : flag == "--pool"   ? &options.pool
                                                : nullptr;
    if (number != nullptr) {
      if (!absl::SimpleAtoi(value, number) || *number < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag, ": '", value, "' is not a positive integer"));
      }
    } else if (flag == "--model") {
      options.model = value;
    } else if (flag == "--device") {
      options.device = value;
    } else if (flag == "--agent-dir") {
      options.agent_dir = value;
    } else if (flag == "--modes") {
      options.modes = absl::StrSplit(value, ',');
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
    }
  }
  return options;
}

// `pool` samples of a source, computed once and served round-robin for every index.
class PooledSource final : public SampleSource {
 public:
  static absl::StatusOr<SampleSourcePtr> Create(const SampleSourcePtr& source, std::int64_t pool) {
    auto pooled = std::shared_ptr<PooledSource>(new PooledSource(source, pool));
    const std::size_t bytes = pooled->sample_bytes_;
    pooled->inputs_.resize(bytes * static_cast<std::size_t>(pool));
    pooled->labels_.resize(static_cast<std::size_t>(pool));
    for (std::int64_t i = 0; i < pool; ++i) {
      absl::Status read =
          source->Read(i, pooled->inputs_.data() + bytes * static_cast<std::size_t>(i),
                       &pooled->labels_[static_cast<std::size_t>(i)]);
      if (!read.ok()) return read;
    }
    return pooled;
  }

  const SampleSpec& spec() const override { return source_->spec(); }
  std::int64_t size() const override { return source_->size(); }
  std::string Describe() const override {
    return absl::StrCat(source_->Describe(), ", ", pool_, " of them pooled");
  }
  absl::Status Read(std::int64_t index, void* input, std::int64_t* label) const override {
    const auto slot = static_cast<std::size_t>(index % pool_);
    std::memcpy(input, inputs_.data() + sample_bytes_ * slot, sample_bytes_);
    *label = labels_[slot];
    return absl::OkStatus();
  }

 private:
  PooledSource(SampleSourcePtr source, std::int64_t pool)
      : source_(std::move(source)),
        pool_(pool),
        sample_bytes_(static_cast<std::size_t>(source_->spec().Elements()) *
                      (source_->spec().kind == SampleSpec::Kind::kTokens ? sizeof(std::int64_t)
                                                                         : sizeof(float))) {}

  SampleSourcePtr source_;
  std::int64_t pool_;
  std::size_t sample_bytes_;
  std::vector<char> inputs_;
  std::vector<std::int64_t> labels_;
};

absl::StatusOr<api::Plan> PlanOf(const planner::ModelGraph& graph, const Options& options,
                                 api::Strategy strategy) {
  absl::StatusOr<planner::DeviceSpec> device = planner::FindDevice("h100");
  if (!device.ok()) return device.status();
  planner::ComputeCostModelPtr compute = planner::MakeAnalyticCostModel(*device);
  const planner::CommModel comm(planner::DefaultNetworkModel(*device));
  planner::PlanRequest request;
  request.gpus = 1;
  request.global_batch = options.batch;
  request.strategy = strategy;
  request.tick_tock = strategy == api::Strategy::kTickTock ? api::Toggle::kOn : api::Toggle::kOff;
  absl::StatusOr<planner::PlanReport> report =
      planner::MakePlan(planner::PlanContext{graph, *device, *compute, comm}, request);
  if (!report.ok()) return report.status();
  if (report->plan.strategy != strategy) {
    return absl::InternalError(absl::StrCat("the planner made a ",
                                            std::string(api::ToString(report->plan.strategy)),
                                            " plan, not ", std::string(api::ToString(strategy))));
  }
  report->plan.training.steps = options.warmup + options.steps;
  report->plan.training.seed = 5;
  return report->plan;
}

absl::StatusOr<std::unique_ptr<LaunchPacer>> Pacer(const Options& options,
                                                   const std::string& mode) {
  if (options.agent_dir.empty()) return MakeUnpacedLauncher();
  agent::RegisterRequest identity;
  identity.namespace_name = "bench";
  identity.job = absl::StrCat("ticktock-", mode == "TickTock" ? "tt" : "dp");
  identity.pod = absl::StrCat(identity.job, "-", getpid());
  identity.role = agent::Role::kForeground;
  identity.pid = getpid();
  absl::StatusOr<std::unique_ptr<AgentSession>> session =
      AgentSession::Connect(options.agent_dir, identity, std::chrono::seconds(10));
  if (!session.ok()) return session.status();
  return std::unique_ptr<LaunchPacer>(*std::move(session));
}

absl::StatusOr<nlohmann::json> RunMode(const Options& options, const std::string& mode,
                                       std::shared_ptr<const planner::ModelGraph> graph,
                                       const SampleSourcePtr& source, torch::Device device) {
  const api::Strategy strategy =
      mode == "TickTock" ? api::Strategy::kTickTock : api::Strategy::kDataParallel;
  absl::StatusOr<api::Plan> plan = PlanOf(*graph, options, strategy);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<std::unique_ptr<LaunchPacer>> pacer = Pacer(options, mode);
  if (!pacer.ok()) return pacer.status();
  ExecutorSetup setup;
  setup.plan = *plan;
  setup.graph = std::move(graph);
  setup.store = LocalStore();
  setup.pacer = pacer->get();
  setup.source = source;
  setup.device = device;
  absl::StatusOr<std::unique_ptr<Executor>> executor = MakeExecutor(setup);
  if (!executor.ok()) return executor.status();
  std::vector<std::chrono::steady_clock::time_point> ends;
  std::vector<double> losses;
  StepHooks hooks;
  hooks.after_step = [&](const StepReport& report) {
    ends.push_back(std::chrono::steady_clock::now());
    losses.push_back(report.loss);
  };
  const std::int64_t total = options.warmup + options.steps;
  absl::StatusOr<std::int64_t> next = (*executor)->Train(0, total, hooks);
  if (!next.ok()) return next.status();
  const auto window = std::chrono::duration<double>(ends.back() - ends[options.warmup - 1]).count();
  std::vector<double> intervals;
  for (std::size_t i = static_cast<std::size_t>(options.warmup); i < ends.size(); ++i) {
    intervals.push_back(std::chrono::duration<double>(ends[i] - ends[i - 1]).count());
  }
  std::sort(intervals.begin(), intervals.end());
  const double median = intervals[intervals.size() / 2];
  return nlohmann::json{
      {"mode", mode},
      {"model", options.model},
      {"batch_per_wave", options.batch},
      {"device", device.str()},
      {"timed_steps", options.steps},
      {"samples_per_s", static_cast<double>(options.steps * options.batch) / window},
      {"median_step_interval_s", median},
      {"median_samples_per_s", static_cast<double>(options.batch) / median},
      {"first_loss", losses.front()},
      {"last_loss", losses.back()}};
}

absl::Status Run(const Options& options) {
  absl::StatusOr<torch::Device> device = ParseDevice(options.device);
  if (!device.ok()) return device.status();
  absl::StatusOr<planner::ModelGraph> built = planner::BuiltinModel(options.model);
  if (!built.ok()) return built.status();
  auto graph = std::make_shared<const planner::ModelGraph>(*std::move(built));
  absl::StatusOr<SampleSpec> spec = SampleSpecOf(*graph);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<SampleSourcePtr> synthetic = OpenSampleSource("synthetic", *spec, 5);
  if (!synthetic.ok()) return synthetic.status();
  absl::StatusOr<SampleSourcePtr> source = PooledSource::Create(*synthetic, options.pool);
  if (!source.ok()) return source.status();
  for (const std::string& mode : options.modes) {
    if (mode != "DataParallel" && mode != "TickTock") {
      return absl::InvalidArgumentError(
          absl::StrCat("--modes: '", mode, "' is not DataParallel or TickTock"));
    }
    std::cerr << "ticktock_bench: " << mode << " started" << std::endl;
    absl::StatusOr<nlohmann::json> result = RunMode(options, mode, graph, *source, *device);
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat(mode, ": ", result.status().message()));
    }
    std::cout << result->dump() << std::endl;
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace wavepool::runtime

int main(int argc, char** argv) {
  absl::StatusOr<wavepool::runtime::Options> options = wavepool::runtime::ParseOptions(argc, argv);
  absl::Status status = options.ok() ? wavepool::runtime::Run(*options) : options.status();
  if (!status.ok()) {
    std::cerr << "ticktock_bench: " << status << std::endl;
    return 1;
  }
  return 0;
}
