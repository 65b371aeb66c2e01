// wavepool-worker's life: settings -> plan and model -> agent -> rendezvous -> executor ->
// checkpoint restore -> training with progress, periodic checkpoints and stop requests.
#include "wavepool/runtime/worker.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "checkpointing.h"
#include "wavepool/api/manifest.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/atomic_file.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/seconds.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/agent_session.h"
#include "wavepool/runtime/checkpoint_fingerprint.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/executor_factory.h"
#include "wavepool/runtime/rendezvous.h"
#include "wavepool/runtime/replica_device.h"

namespace wavepool::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Set by SIGTERM/SIGINT; read by the training loop at every step.
std::atomic<bool> g_stop_requested{false};
std::atomic<LaunchPacer*> g_pacer{nullptr};

void OnStopSignal(int) {
  g_stop_requested.store(true);
  // A background task waiting for a credit returns at once (LaunchPacer::Stop is an atomic store).
  if (LaunchPacer* pacer = g_pacer.load()) pacer->Stop();
}

void InstallHandlers() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  // A checkpoint larger than RLIMIT_FSIZE fails with EFBIG instead of killing the worker.
  signal(SIGXFSZ, SIG_IGN);
}

WorkerExit ExitFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return WorkerExit::kDone;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kPermissionDenied:
      return WorkerExit::kBadInput;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
      return WorkerExit::kGangBroken;
    case absl::StatusCode::kCancelled:
      return WorkerExit::kStopped;
    default:
      return WorkerExit::kFailed;
  }
}

// A plan is a few KB, a few hundred with the layer table of a large model: a file far larger is
// not a plan, and reading it whole would exhaust the memory first.
constexpr std::uint64_t kMaxPlanBytes = std::uint64_t{64} << 20;

absl::StatusOr<std::string> ReadPlanText(const std::string& path) {
  // Opened here to say "cannot be read" for a missing plan; non-blocking, so that a FIFO is
  // refused below instead of waiting for a writer, forever.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    const int error = errno;  // before StrCat allocates
    return ErrnoError(error, absl::StrCat("plan ", path, ": cannot be read"));
  }
  // Refuses a directory, a device (/dev/zero never ends) or a FIFO, and a file larger than any
  // plan before reading it.
  return ReadWholeFile(fd, path, "plan", kMaxPlanBytes);
}

absl::StatusOr<api::Plan> ReadPlan(const std::string& path) {
  WAVEPOOL_ASSIGN_OR_RETURN(const std::string text, ReadPlanText(path));
  absl::StatusOr<api::Plan> plan = api::LoadPlan(text);
  if (plan.ok()) {
    if (absl::Status s = api::Validate(*plan); !s.ok()) plan = s;
  }
  if (!plan.ok()) {
    return absl::Status(plan.status().code(),
                        absl::StrCat("plan ", path, ": ", plan.status().message()));
  }
  return plan;
}

absl::StatusOr<planner::ModelGraph> ModelOf(const api::Plan& plan) {
  absl::StatusOr<planner::ModelGraph> graph =
      plan.layer_table.empty() ? planner::BuiltinModel(plan.model)
                               : planner::ParseLayerTable(plan.model, plan.layer_table);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(),
                        absl::StrCat("plan model ", plan.model, ": ", graph.status().message()));
  }
  return graph;
}

// One training run of one rank.
class Worker {
 public:
  Worker(const WorkerOptions& options, std::ostream& out) : options_(options), out_(out) {}
  ~Worker() { g_pacer.store(nullptr); }

  absl::Status Run();

 private:
  absl::Status Prepare();
  absl::StatusOr<SampleSourcePtr> OpenSource(const SampleSpec& spec) const;
  absl::Status ConnectAgent();
  agent::Role AgentRole() const {
    return options_.role == api::Role::kBackground ? agent::Role::kBackground
                                                   : agent::Role::kForeground;
  }
  StepRequests Requests(std::int64_t step);
  std::int64_t SliceRows(std::int64_t rows);
  absl::Status StopWhileWaiting(std::int64_t saved);
  void Progress(const StepReport& report);

  const WorkerOptions& options_;
  std::ostream& out_;
  api::Plan plan_;
  std::shared_ptr<const planner::ModelGraph> graph_;
  std::int64_t steps_ = 0;
  std::unique_ptr<LaunchPacer> pacer_;
  AgentSession* session_ = nullptr;     // pacer_ when the node's agent paces it
  std::int64_t recommended_batch_ = 0;  // the agent's last recommendation, as followed
  StorePtr store_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Checkpointing> checkpointing_;
  Clock::time_point last_checkpoint_ = Clock::now();
  Clock::time_point started_ = Clock::now();
  StepRequests agreed_;         // what the gang agreed on at the last step
  std::int64_t completed_ = 0;  // steps completed
  double last_loss_ = 0;
};

absl::Status Worker::ConnectAgent() {
  if (options_.agent_dir.empty()) {
    pacer_ = MakeUnpacedLauncher();
    return absl::OkStatus();
  }
  agent::RegisterRequest identity;
  identity.namespace_name = options_.namespace_name;
  identity.job = options_.job.empty() ? plan_.model : options_.job;
  identity.pod = options_.pod;
  identity.role = AgentRole();
  identity.gpu_index = options_.gpu_index;
  identity.max_foreground_slowdown = options_.max_foreground_slowdown;
  if (options_.role == api::Role::kBackground) {
    identity.batch_size = static_cast<std::uint32_t>(plan_.stages.front().per_gpu_batch);
  }
  absl::StatusOr<std::unique_ptr<AgentSession>> session = AgentSession::Connect(
      options_.agent_dir, identity, options_.agent_timeout, agent::LogToStderr, RealClock(),
      [] { return g_stop_requested.load(); });
  if (session.ok()) {
    session_ = session->get();
    pacer_ = *std::move(session);
    return absl::OkStatus();
  }
  // DESIGN.md: a foreground task keeps training unpaced without its agent; a background task
  // never runs unpaced.
  if (options_.role == api::Role::kBackground || !absl::IsUnavailable(session.status())) {
    return session.status();
  }
  out_ << "warning: " << session.status().message() << "; training unpaced\n" << std::flush;
  pacer_ = MakeUnpacedLauncher();
  return absl::OkStatus();
}

// The --data source, for a plan that counts an epoch as training.datasetSamples samples (the
// job's spec.datasetSamples): synthetic data gets that many samples, and a dataset of another size
// is refused rather than training epochs of another length than the steps were counted for.
absl::StatusOr<SampleSourcePtr> Worker::OpenSource(const SampleSpec& spec) const {
  const std::int64_t epoch = plan_.training.dataset_samples;
  const auto seed = static_cast<std::uint64_t>(plan_.training.seed);
  absl::StatusOr<SampleSourcePtr> source = epoch > 0
                                               ? OpenSampleSource(options_.data, spec, seed, epoch)
                                               : OpenSampleSource(options_.data, spec, seed);
  if (!source.ok() || epoch == 0 || (*source)->size() == epoch) return source;
  return absl::InvalidArgumentError(absl::StrCat(
      "--data: ", (*source)->Describe(), " holds ", (*source)->size(),
      " samples, but the plan's training.datasetSamples (the job's spec.datasetSamples) is ", epoch,
      ": set spec.datasetSamples to the dataset's size"));
}

absl::Status Worker::Prepare() {
  WAVEPOOL_ASSIGN_OR_RETURN(api::Plan plan, ReadPlan(options_.plan_path));
  plan_ = std::move(plan);
  if (plan_.gpus != options_.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--world-size ", options_.world_size, " does not match the plan's ", plan_.gpus, " GPUs"));
  }
  steps_ = options_.steps.value_or(plan_.training.steps);
  if (steps_ < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--steps: the plan ", options_.plan_path,
                                                   " has no step count (training.steps 0); give "
                                                   "--steps"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(planner::ModelGraph graph, ModelOf(plan_));
  graph_ = std::make_shared<const planner::ModelGraph>(std::move(graph));
  if (options_.threads > 0) torch::set_num_threads(options_.threads);
  WAVEPOOL_ASSIGN_OR_RETURN(SampleSpec spec, SampleSpecOf(*graph_));
  WAVEPOOL_ASSIGN_OR_RETURN(SampleSourcePtr source, OpenSource(spec));
  // Before the agent and the gang: a missing GPU fails this rank alone, at once.
  WAVEPOOL_ASSIGN_OR_RETURN(const torch::Device device, ParseDevice(options_.device));
  if (!device.is_cpu()) out_ << "training on " << device.str() << "\n";
  WAVEPOOL_RETURN_IF_ERROR(ConnectAgent());
  g_pacer.store(pacer_.get());
  if (options_.store.empty()) {
    store_ = LocalStore();
  } else {
    WAVEPOOL_ASSIGN_OR_RETURN(StoreAddress address, ParseStoreAddress(options_.store));
    WAVEPOOL_ASSIGN_OR_RETURN(
        StorePtr store,
        // A stop request (SIGTERM) ends the wait for the other ranks: it may come before any
        // of them arrives (a pod deleted while its gang starts).
        Rendezvous(address, options_.rank, options_.world_size, options_.rendezvous_timeout,
                   [] { return g_stop_requested.load(); }));
    store_ = store;
  }
  ExecutorSetup setup;
  setup.plan = plan_;
  setup.graph = graph_;
  setup.rank = options_.rank;
  setup.store = store_;
  setup.pacer = pacer_.get();
  setup.source = source;
  setup.device = device;
  setup.role = AgentRole();
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, MakeExecutor(setup));
  executor_ = std::move(executor);
  if (options_.checkpoint_dir.empty()) return absl::OkStatus();
  WAVEPOOL_ASSIGN_OR_RETURN(CheckpointDirectory directory,
                            CheckpointDirectory::Open(options_.checkpoint_dir));
  WAVEPOOL_ASSIGN_OR_RETURN(std::string fingerprint, CheckpointFingerprint(*graph_, plan_));
  Checkpointing::Identity identity;
  identity.rank = options_.rank;
  identity.world_size = options_.world_size;
  identity.fingerprint = fingerprint;
  identity.metadata = {{"job", plan_.job},
                       {"model", plan_.model},
                       {"strategy", std::string(api::ToString(plan_.strategy))}};
  checkpointing_ = std::make_unique<Checkpointing>(std::move(directory), identity, executor_.get(),
                                                   store_, options_.rendezvous_timeout);
  return absl::OkStatus();
}

StepRequests Worker::Requests(std::int64_t step) {
  StepRequests requests;
  requests.stop = g_stop_requested.load();
  const api::PlanTraining& t = plan_.training;
  if (checkpointing_ != nullptr && step + 1 < steps_) {
    const bool by_steps =
        t.checkpoint_interval_steps > 0 && (step + 1) % t.checkpoint_interval_steps == 0;
    const bool by_time =
        t.checkpoint_interval_seconds > 0 &&
        Seconds(Clock::now() - last_checkpoint_).count() >= t.checkpoint_interval_seconds;
    requests.checkpoint = by_steps || by_time;
  }
  return requests;
}

// A background task follows its node agent's smaller batch recommendation (the foreground beside
// it stays over its slowdown limit: deeppool-burst-parallel §5) by training each step in slices of
// the recommended size, gradients accumulated: the kernels it launches get shorter while the job
// trains as planned (executor.h, StepHooks::slice_rows). Said once per recommendation, also by an
// executor that cannot follow it. `rows`: the samples of this rank's block.
std::int64_t Worker::SliceRows(std::int64_t rows) {
  if (session_ == nullptr || options_.role != api::Role::kBackground) return 0;
  const std::optional<agent::Policy> policy = session_->client().LatestPolicy();
  std::int64_t recommended = policy.has_value() ? policy->recommended_batch_size : 0;
  if (recommended >= rows) recommended = 0;
  if (recommended != recommended_batch_) {
    recommended_batch_ = recommended;
    if (recommended == 0) {
      out_ << "the node agent no longer recommends a smaller batch: steps train whole\n";
    } else if (executor_->SlicesSteps()) {
      out_ << absl::StrFormat(
          "following the node agent (%s): each step's %d samples train in slices of at most %d\n",
          policy->reason, rows, recommended);
    } else {
      out_ << absl::StrFormat(
          "the node agent recommends a per-GPU batch of %d (%s), but a %s plan cannot train its "
          "steps in slices: they train whole\n",
          recommended, policy->reason, api::ToString(plan_.strategy));
    }
    out_ << std::flush;
  }
  return recommended;
}

void Worker::Progress(const StepReport& report) {
  agreed_ = report.agreed;
  last_loss_ = report.loss;
  completed_ = report.step + 1;
  const bool last = report.step + 1 == steps_;
  if (options_.log_every == 0 || ((report.step + 1) % options_.log_every != 0 && !last)) return;
  const double rate = report.seconds > 0 ? static_cast<double>(report.samples) / report.seconds : 0;
  out_ << absl::StrFormat(
              "step %d/%d loss %.9g samples/s %.1f iteration %.4f s (compute %.4f, transfer "
              "%.4f, all-reduce %.4f, data %.4f)%s\n",
              report.step + 1, steps_, report.loss, rate, report.seconds, report.times.compute,
              report.times.transfer, report.times.allreduce, report.times.data,
              plan_.strategy == api::Strategy::kTickTock ? (report.wave == 0 ? " tick" : " tock")
                                                         : "")
       << std::flush;
}

// A stop request ended a wait for a launch credit inside a step (a paused background task being
// preempted). The step did not reach the optimizer, so a single-rank staged run checkpoints the
// steps before it; a gang or tick-tock's waves stop without (their ranks may be inside other
// steps), keeping the last periodic checkpoint.
absl::Status Worker::StopWhileWaiting(std::int64_t saved) {
  const bool consistent = options_.world_size == 1 && plan_.strategy != api::Strategy::kTickTock;
  if (checkpointing_ != nullptr && consistent && completed_ != saved) {
    WAVEPOOL_RETURN_IF_ERROR(checkpointing_->Save(completed_));
    return absl::CancelledError(
        absl::StrCat("stopped while paused after step ", completed_, ", checkpointed"));
  }
  return absl::CancelledError(absl::StrCat("stopped while paused after step ", completed_));
}

absl::Status Worker::Run() {
  WAVEPOOL_RETURN_IF_ERROR(Prepare());
  std::int64_t next = 0;
  if (checkpointing_ != nullptr) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<std::int64_t> restored, checkpointing_->Restore());
    if (restored.has_value()) {
      next = completed_ = *restored;
      out_ << "resumed from " << checkpointing_->path() << " at step " << next << "\n";
    }
  }
  if (next >= steps_) {
    // A finished job started again (or asked for fewer steps than it has): there is no step, and
    // so no loss, to report.
    out_ << "done: nothing to train, the checkpoint is at step " << next << " of " << steps_ << "\n"
         << std::flush;
    return absl::OkStatus();
  }
  if (next == 0) {
    // A fresh start makes every replica identical (a resumed one restored its weights above).
    WAVEPOOL_RETURN_IF_ERROR(executor_->SynchronizeInitialWeights());
  }
  StepHooks hooks;
  hooks.requests = [this](std::int64_t step) { return Requests(step); };
  if (executor_->SlicesSteps()) {
    hooks.after_step = [this](const StepReport& report) { Progress(report); };
    hooks.slice_rows = [this](std::int64_t rows) { return SliceRows(rows); };
  } else {
    // Such an executor never asks for slices (tick-tock's waves would ask from two threads): the
    // recommendation is read after each step only to say that it is not followed.
    hooks.after_step = [this](const StepReport& report) {
      Progress(report);
      SliceRows(plan_.stages.front().per_gpu_batch);
    };
  }
  std::int64_t saved = next;
  while (next < steps_) {
    agreed_ = {};
    absl::StatusOr<std::int64_t> reached = executor_->Train(next, steps_, hooks);
    if (absl::IsCancelled(reached.status())) return StopWhileWaiting(saved);
    if (!reached.ok()) return reached.status();
    next = *reached;
    if (checkpointing_ != nullptr && next != saved && (agreed_.any() || next == steps_)) {
      WAVEPOOL_RETURN_IF_ERROR(checkpointing_->Save(next));
      saved = next;
      last_checkpoint_ = Clock::now();
    }
    if (agreed_.stop) {
      return absl::CancelledError(absl::StrCat("stopped after step ", next, " of ", steps_,
                                               checkpointing_ != nullptr ? ", checkpointed" : ""));
    }
  }
  out_ << absl::StrFormat("done: %d steps, final loss %.4f, %.1f s\n", steps_, last_loss_,
                          Seconds(Clock::now() - started_).count())
       << std::flush;
  return absl::OkStatus();
}

}  // namespace

void InstallStopHandlers() { InstallHandlers(); }

void KeepFreedMemoryForReuse() {
  // Blocks up to 256 MiB come from the heap and freed memory stays mapped up to 1 GiB: a step's
  // activations and gradients are allocated and freed in the same sizes every step.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

WorkerExit RunWorker(const WorkerOptions& options, std::ostream& out, std::ostream& err) {
  InstallHandlers();
  absl::Status status;
  {
    Worker worker(options, out);
    try {
      status = worker.Run();
    } catch (const std::exception& e) {  // LibTorch's, where no boundary caught it
      status = absl::InternalError(e.what());
    }
  }
  const WorkerExit exit = ExitFor(status);
  if (!status.ok()) {
    err << "wavepool-worker rank " << options.rank << ": "
        << (exit == WorkerExit::kStopped ? "" : "error: ") << status.message() << "\n"
        << std::flush;
  }
  return exit;
}

}  // namespace wavepool::runtime
