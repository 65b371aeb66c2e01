// One task of the foreground/background collocation benchmark (docs/performance.md, "Sharing one
// GPU"): a model from the zoo trained on a static synthetic batch, its step captured as one CUDA
// graph and cut into pieces (runtime/graph_pieces.h) that go through the node agent's launch gate
// (runtime/piece_launcher.h), on a stream with the role's priority. tests/bench/gpu/colloc_run.py
// starts the agent and the tasks and runs the PyTorch baselines beside them.
//
//   colloc_bench --role fg|bg [--model resnet50] [--batch 16] [--steps 100] [--warmup 15]
//                [--piece-min-us N --piece-max-us N]  (default: the role's piece targets)
//                [--launch pieces|graph|eager] [--dtype bf16|fp32] [--agent-dir DIR]
//                [--ready FILE] [--go FILE] [--stop FILE] [--out FILE]
//
// Foreground: sets up, runs --warmup steps as it will be measured (the agent learns each piece's
// solo time), touches --ready, waits for --go, then times --steps steps and writes
// {median_ms, p90_ms, imgs_per_s, window} to --out. Background: sets up, touches --ready and
// trains until --stop exists, then writes {batch, done} (the wall time each step ended). The
// file protocol is colloc_probe.py's, so both run under one driver.
//
// Without LibTorch CUDA (a CPU build) only --launch eager runs, on the CPU: that checks the
// driver's protocol, not the GPU.
#include <cuda_runtime_api.h>
#include <execinfo.h>
#include <pthread.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/agent_session.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/graph_pieces.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/piece_launcher.h"
#include "wavepool/runtime/role_stream.h"

#ifdef WAVEPOOL_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace wavepool::runtime {
namespace {

struct Options {
  agent::Role role = agent::Role::kForeground;
  std::string model = "resnet50";
  std::int64_t batch = 16;
  std::int64_t steps = 100;
  std::int64_t warmup = 15;
  std::int64_t piece_min_us = 0;  // 0: the role's targets (graph_pieces.h)
  std::int64_t piece_max_us = 0;
  std::string launch = "pieces";
  std::string dtype = "bf16";
  std::string agent_dir;
  std::string ready;
  std::string go;
  std::string stop;
  std::string out;
};

absl::StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options options;
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag.rfind("--", 0) != 0 || i + 1 >= argc) {
      return absl::InvalidArgumentError(absl::StrCat("expected --flag VALUE, got '", flag, "'"));
    }
    values[flag.substr(2)] = argv[i + 1];
  }
  auto take_int = [&](const std::string& name, std::int64_t& field) -> absl::Status {
    auto it = values.find(name);
    if (it == values.end()) return absl::OkStatus();
    if (!absl::SimpleAtoi(it->second, &field) || field < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": '", it->second, "' is not a non-negative integer"));
    }
    values.erase(it);
    return absl::OkStatus();
  };
  auto take = [&](const std::string& name, std::string& field) {
    auto it = values.find(name);
    if (it == values.end()) return;
    field = it->second;
    values.erase(it);
  };
  std::string role = "fg";
  take("role", role);
  if (role != "fg" && role != "bg") {
    return absl::InvalidArgumentError(absl::StrCat("--role: '", role, "' is not fg or bg"));
  }
  options.role = role == "fg" ? agent::Role::kForeground : agent::Role::kBackground;
  for (auto [name, field] : {std::pair{"batch", &options.batch},
                             {"steps", &options.steps},
                             {"warmup", &options.warmup},
                             {"piece-min-us", &options.piece_min_us},
                             {"piece-max-us", &options.piece_max_us}}) {
    if (absl::Status s = take_int(name, *field); !s.ok()) return s;
  }
  take("model", options.model);
  take("launch", options.launch);
  take("dtype", options.dtype);
  take("agent-dir", options.agent_dir);
  take("ready", options.ready);
  take("go", options.go);
  take("stop", options.stop);
  take("out", options.out);
  if (!values.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag --", values.begin()->first));
  }
  if (options.launch != "pieces" && options.launch != "graph" && options.launch != "eager") {
    return absl::InvalidArgumentError(
        absl::StrCat("--launch: '", options.launch, "' is not pieces, graph or eager"));
  }
  if (options.dtype != "bf16" && options.dtype != "fp32") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype: '", options.dtype, "' is not bf16 or fp32"));
  }
  if (options.batch == 0) return absl::InvalidArgumentError("--batch: must be positive");
  if ((options.piece_min_us == 0) != (options.piece_max_us == 0) ||
      options.piece_min_us > options.piece_max_us) {
    return absl::InvalidArgumentError(
        "--piece-min-us and --piece-max-us: give both, with 0 < min <= max");
  }
  if (options.role == agent::Role::kBackground && options.stop.empty()) {
    return absl::InvalidArgumentError("--stop: a background task needs a stop file");
  }
  return options;
}

// Setup milestones on stderr, with the seconds since the process started: where a slow setup
// spends its time shows in the task's log.
void Progress(const std::string& what) {
  static const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "colloc_bench: %s after %.2f s\n", what.c_str(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// Where the main thread is, printed to stderr on SIGUSR1: colloc_run.py asks before it kills a
// task whose setup is late, so that the log names what it was waiting for. The signal may land on
// any thread; it is passed on to the main one.
pthread_t main_thread;

void PrintMainStack(int) {
  if (!pthread_equal(pthread_self(), main_thread)) {
    pthread_kill(main_thread, SIGUSR1);
    return;
  }
  static constexpr char kHeader[] = "colloc_bench: the main thread's stack:\n";
  void* frames[64];
  const int depth = backtrace(frames, 64);
  (void)!write(STDERR_FILENO, kHeader, sizeof(kHeader) - 1);
  backtrace_symbols_fd(frames, depth, STDERR_FILENO);
}

void InstallStackPrinter() {
  main_thread = pthread_self();
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now: the handler must not allocate
  std::signal(SIGUSR1, PrintMainStack);
}

#ifdef WAVEPOOL_TORCH_CUDA
PieceTargets PieceTargetsFor(const Options& options) {
  PieceTargets targets = options.role == agent::Role::kForeground ? ForegroundPieceTargets()
                                                                  : BackgroundPieceTargets();
  if (options.piece_max_us > 0) {
    targets.min_duration = std::chrono::microseconds(options.piece_min_us);
    targets.max_duration = std::chrono::microseconds(options.piece_max_us);
  }
  return targets;
}
#endif

bool Exists(const std::string& path) { return !path.empty() && access(path.c_str(), F_OK) == 0; }

void Touch(const std::string& path) {
  if (!path.empty()) std::ofstream(path).flush();
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The model, its optimizer and a static batch: one training step reads and writes only these,
// so that it can be captured once and replayed.
struct Trainer {
  std::unique_ptr<ExecutableModel> model;
  std::unique_ptr<torch::optim::SGD> optimizer;
  torch::Tensor inputs;
  torch::Tensor labels;

  void Step() {
    const planner::ModelGraph& graph = model->graph();
    ForwardContext context;
    context.labels = labels;
    std::vector<torch::Tensor> outputs(static_cast<std::size_t>(graph.size()));
    for (planner::LayerId id : model->layers()) {
      std::vector<torch::Tensor> layer_inputs;
      for (planner::LayerId in : graph.layer(id).inputs) {
        layer_inputs.push_back(outputs[static_cast<std::size_t>(in)]);
      }
      if (layer_inputs.empty()) layer_inputs.push_back(inputs);
      outputs[static_cast<std::size_t>(id)] = model->Forward(id, layer_inputs, context);
    }
    torch::Tensor loss = LossSum(graph.layer(graph.sink()),
                                 outputs[static_cast<std::size_t>(graph.sink())], labels) /
                         static_cast<double>(inputs.size(0));
    loss.backward();
    torch::NoGradGuard no_grad;
    optimizer->step();
  }
};

absl::StatusOr<Trainer> MakeTrainer(const Options& options, const torch::Device& device) {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel(options.model);
  if (!graph.ok()) return graph.status();
  auto shared = std::make_shared<const planner::ModelGraph>(*std::move(graph));
  absl::StatusOr<SampleSpec> spec = SampleSpecOf(*shared);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::unique_ptr<ExecutableModel>> model = ExecutableModel::Build(shared, {}, 1);
  if (!model.ok()) return model.status();
  const torch::Dtype dtype = options.dtype == "bf16" ? torch::kBFloat16 : torch::kFloat32;
  const bool images = spec->shape.size() == 3;
  for (planner::LayerId id : (*model)->layers()) (*model)->layer(id).to(device, dtype);
  if (images && device.is_cuda()) {
    // Channels-last convolutions are the fast ones on tensor cores (as the baseline runs them).
    for (torch::Tensor& p : (*model)->Parameters()) {
      if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
  Trainer trainer;
  trainer.model = *std::move(model);
  trainer.optimizer = std::make_unique<torch::optim::SGD>(
      trainer.model->Parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  std::vector<std::int64_t> shape{options.batch};
  shape.insert(shape.end(), spec->shape.begin(), spec->shape.end());
  trainer.inputs = torch::randn(shape, torch::TensorOptions().dtype(dtype).device(device));
  if (images && device.is_cuda()) {
    trainer.inputs = trainer.inputs.contiguous(torch::MemoryFormat::ChannelsLast);
  }
  trainer.labels = torch::randint(0, spec->classes, {options.batch},
                                  torch::TensorOptions().dtype(torch::kLong).device(device));
  return trainer;
}

// How a step is launched: eagerly, or as pieces of a captured graph through the gate.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Runs one step and returns when the GPU has finished it.
  virtual absl::Status RunStep() = 0;
  virtual nlohmann::json Describe() const = 0;
};

class EagerRunner final : public StepRunner {
 public:
  EagerRunner(Trainer& trainer, LaunchPacer& pacer) : trainer_(trainer), pacer_(pacer) {}
  absl::Status RunStep() override {
    // One launch group per step: eager launches cannot be split without a capture.
    absl::Status s = pacer_.Run(ForwardGroup(0), [&] {
      trainer_.optimizer->zero_grad();
      trainer_.Step();
#ifdef WAVEPOOL_TORCH_CUDA
      if (trainer_.inputs.is_cuda()) c10::cuda::getCurrentCUDAStream().synchronize();
#endif
    });
    return s;
  }
  nlohmann::json Describe() const override { return {{"launch", "eager"}}; }

 private:
  Trainer& trainer_;
  LaunchPacer& pacer_;
};

#ifdef WAVEPOOL_TORCH_CUDA
class PieceRunner final : public StepRunner {
 public:
  // Captures one step of `trainer` on `stream` and cuts it (one piece for --launch graph).
  static absl::StatusOr<std::unique_ptr<PieceRunner>> Create(Trainer& trainer, LaunchPacer& pacer,
                                                             cudaStream_t stream,
                                                             const PieceTargets& targets,
                                                             bool whole_graph) {
    std::unique_ptr<PieceRunner> runner(new PieceRunner());
    runner->graph_ = std::make_unique<at::cuda::CUDAGraph>(/*keep_graph=*/true);
    // As PyTorch's make_graphed_callables: gradients set to None before the capture are
    // allocated by the captured backward in the graph's pool, at fixed addresses.
    trainer.optimizer->zero_grad(/*set_to_none=*/true);
    try {
      runner->graph_->capture_begin();
      trainer.Step();
      runner->graph_->capture_end();
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("capturing the step: ", e.what_without_backtrace()));
    }
    cudaGraph_t graph = runner->graph_->raw_cuda_graph();
    std::size_t node_count = 0;
    cudaGraphGetNodes(graph, nullptr, &node_count);
    Progress(absl::StrCat("captured the step (", node_count, " graph nodes)"));
    std::vector<torch::Tensor> saved;
    for (const torch::Tensor& p : trainer.model->Parameters()) saved.push_back(p.detach().clone());
    absl::StatusOr<std::unique_ptr<GraphPieces>> pieces;
    if (whole_graph) {
      absl::StatusOr<std::vector<cudaGraphNode_t>> order = TopologicalOrder(graph);
      if (!order.ok()) return order.status();
      pieces = GraphPieces::SplitByNodeCounts(graph, {order->size()});
    } else {
      pieces = GraphPieces::SplitByDuration(graph, stream, targets);
    }
    if (!pieces.ok()) return pieces.status();
    runner->pieces_ = *std::move(pieces);
    Progress(absl::StrCat("cut into ", runner->pieces_->size(), " pieces"));
    // Splitting replayed parts of the step; the weights go back to where the capture left them.
    {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> params = trainer.model->Parameters();
      for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
    }
    absl::StatusOr<std::unique_ptr<PieceLauncher>> launcher = PieceLauncher::Create(pacer, stream);
    if (!launcher.ok()) return launcher.status();
    runner->launcher_ = *std::move(launcher);
    runner->whole_graph_ = whole_graph;
    return runner;
  }

  absl::Status RunStep() override {
    for (std::size_t i = 0; i < pieces_->size(); ++i) {
      if (absl::Status s = launcher_->Launch(ForwardGroup(static_cast<int>(i)), pieces_->piece(i));
          !s.ok()) {
        return s;
      }
    }
    return launcher_->Drain();
  }

  nlohmann::json Describe() const override {
    nlohmann::json solo_us = nlohmann::json::array();
    nlohmann::json nodes = nlohmann::json::array();
    for (std::size_t i = 0; i < pieces_->size(); ++i) {
      solo_us.push_back(static_cast<double>(pieces_->solo_duration(i).count()) / 1e3);
      nodes.push_back(pieces_->node_count(i));
    }
    return {{"launch", whole_graph_ ? "graph" : "pieces"},
            {"pieces", pieces_->size()},
            {"piece_solo_us", solo_us},
            {"piece_nodes", nodes}};
  }

 private:
  PieceRunner() = default;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;  // owns the memory pool the pieces use
  std::unique_ptr<GraphPieces> pieces_;
  std::unique_ptr<PieceLauncher> launcher_;
  bool whole_graph_ = false;
};
#endif

absl::StatusOr<std::unique_ptr<AgentSession>> ConnectAgent(const Options& options) {
  agent::RegisterRequest identity;
  identity.namespace_name = "bench";
  identity.job = options.role == agent::Role::kForeground ? "colloc-fg" : "colloc-bg";
  identity.pod = absl::StrCat(identity.job, "-", getpid());
  identity.role = options.role;
  identity.pid = getpid();
  identity.max_foreground_slowdown = 1.1;
  identity.batch_size = static_cast<std::uint32_t>(options.batch);
  absl::StatusOr<std::unique_ptr<AgentSession>> session =
      AgentSession::Connect(options.agent_dir, identity, std::chrono::seconds(10));
  if (!session.ok()) return session.status();
  // The agent's MPS pipe and client priority must be in the environment before CUDA starts.
  const agent::Registered registered = (*session)->client().registration();
  if (!registered.mps_pipe_directory.empty()) {
    setenv("CUDA_MPS_PIPE_DIRECTORY", registered.mps_pipe_directory.c_str(), 1);
    setenv("CUDA_MPS_CLIENT_PRIORITY", std::to_string(registered.mps_client_priority).c_str(), 1);
  }
  return session;
}

absl::Status Run(const Options& options) {
  Progress("started");
  std::unique_ptr<LaunchPacer> pacer = MakeUnpacedLauncher();
  if (!options.agent_dir.empty()) {
    absl::StatusOr<std::unique_ptr<AgentSession>> session = ConnectAgent(options);
    if (!session.ok()) return session.status();
    pacer = *std::move(session);
  }
  const bool cuda = torch::cuda::is_available();
  if (!cuda && options.launch != "eager") {
    return absl::FailedPreconditionError(
        absl::StrCat("--launch ", options.launch, " needs a CUDA GPU and LibTorch with CUDA"));
  }
  const torch::Device device = cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  absl::StatusOr<Trainer> trainer;
  try {
    trainer = MakeTrainer(options, device);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("building the model: ", e.what_without_backtrace()));
  }
  if (!trainer.ok()) return trainer.status();
  Progress("model built");
  std::unique_ptr<StepRunner> runner;
#ifdef WAVEPOOL_TORCH_CUDA
  OwnedStream stream;
  std::unique_ptr<c10::cuda::CUDAStreamGuard> guard;
  if (cuda) {
    at::globalContext().setBenchmarkCuDNN(true);
    absl::StatusOr<OwnedStream> created = CreateRoleStream(options.role);
    if (!created.ok()) return created.status();
    stream = *std::move(created);
    guard = std::make_unique<c10::cuda::CUDAStreamGuard>(
        c10::cuda::getStreamFromExternal(stream.get(), 0));
  }
#endif
  try {
    // Eager warm-up: cuDNN picks its algorithms and the allocator fills before any capture.
    for (int i = 0; i < 3; ++i) {
      trainer->optimizer->zero_grad();
      trainer->Step();
      Progress(absl::StrCat("eager step ", i + 1, " launched"));
    }
#ifdef WAVEPOOL_TORCH_CUDA
    if (cuda) c10::cuda::getCurrentCUDAStream().synchronize();
    Progress("eager warm-up done");
    if (options.launch != "eager") {
      absl::StatusOr<std::unique_ptr<PieceRunner>> pieces = PieceRunner::Create(
          *trainer, *pacer, stream.get(), PieceTargetsFor(options), options.launch == "graph");
      if (!pieces.ok()) return pieces.status();
      runner = *std::move(pieces);
    }
#endif
    if (runner == nullptr) runner = std::make_unique<EagerRunner>(*trainer, *pacer);
    for (std::int64_t i = 0; i < options.warmup; ++i) {
      if (absl::Status s = runner->RunStep(); !s.ok()) return s;
      if (i == 0) Progress("first warm-up step done");
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("setting up: ", e.what_without_backtrace()));
  }
  Progress("ready");
  Touch(options.ready);
  nlohmann::json result = runner->Describe();
  result["batch"] = options.batch;
  result["model"] = options.model;
  if (options.role == agent::Role::kBackground) {
    std::vector<double> done;
    std::int64_t step = 0;
    while (!Exists(options.stop)) {
      const auto start = std::chrono::steady_clock::now();
      if (absl::Status s = runner->RunStep(); !s.ok()) return s;
      done.push_back(WallSeconds());
      pacer->ReportIteration(
          ++step, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          options.batch);
    }
    result["done"] = done;
  } else {
    while (!options.go.empty() && !Exists(options.go)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::vector<double> times;
    const double begin = WallSeconds();
    for (std::int64_t step = 0; step < options.steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      if (absl::Status s = runner->RunStep(); !s.ok()) return s;
      times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      pacer->ReportIteration(step + 1, times.back(), options.batch);
    }
    const double end = WallSeconds();
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    double total = 0;
    for (double t : times) total += t;
    result["median_ms"] = sorted.empty() ? 0 : 1e3 * sorted[sorted.size() / 2];
    result["p90_ms"] = sorted.empty() ? 0 : 1e3 * sorted[sorted.size() * 9 / 10];
    result["imgs_per_s"] =
        total > 0 ? static_cast<double>(options.batch * options.steps) / total : 0;
    result["window"] = {begin, end};
  }
  if (!options.out.empty()) {
    std::ofstream out(options.out);
    out << result.dump() << "\n";
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", options.out));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace wavepool::runtime

int main(int argc, char** argv) {
  wavepool::runtime::InstallStackPrinter();
  absl::StatusOr<wavepool::runtime::Options> options = wavepool::runtime::ParseOptions(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "colloc_bench: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = wavepool::runtime::Run(*options); !s.ok()) {
    std::fprintf(stderr, "colloc_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
