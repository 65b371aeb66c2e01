// `wavepool run`: plan, start the node agent, start the workers, show progress, write the report.
#include "wavepool/local/local_run.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "job_processes.h"
#include "local_devices.h"
#include "local_jobs.h"
#include "progress.h"
#include "report_html.h"
#include "run_report.h"
#include "start_order.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/simulated_gpu.h"
#include "wavepool/base/clock.h"
#include "wavepool/base/seconds.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::local {
namespace {

namespace fs = std::filesystem;

// A background job's state until the foreground on its GPUs trains (start_order.h).
constexpr const char* kWaitingForForeground = "waiting for the foreground";

std::atomic<bool> g_stop{false};
void OnStop(int) { g_stop.store(true); }

std::string Rfc3339(WallTime time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string DefaultOutDir(const std::vector<LocalJob>& jobs, WallTime now) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return absl::StrCat("wavepool-run-", jobs.front().job.metadata.name, "-", stamp);
}

std::string WorkerNextToUs() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? "wavepool-worker" : (self.parent_path() / "wavepool-worker").string();
}

JobReport StartReport(const LocalJob& j) {
  JobReport r;
  r.name = j.key;
  r.manifest = j.manifest;
  r.role = std::string(api::ToString(*j.job.spec.role));
  r.model = j.plan.plan.model;
  r.strategy = std::string(api::ToString(j.plan.plan.strategy));
  r.gpus = j.gpus;
  r.steps = j.plan.plan.training.steps;
  r.max_foreground_slowdown = j.job.spec.collocation.max_foreground_slowdown.value_or(0);
  r.predicted_iteration_seconds = j.plan.plan.predictions.iteration_seconds;
  r.predicted_samples_per_second = j.plan.plan.predictions.samples_per_second;
  r.predicted_memory_per_gpu_bytes = j.plan.plan.predictions.memory_per_gpu_bytes;
  r.device = j.plan.plan.device;
  return r;
}

AgentSnapshot Snapshot(const agent::AgentStatus& status, double time) {
  AgentSnapshot snapshot;
  snapshot.time = time;
  for (const agent::GpuStatus& gpu : status.gpus) {
    GpuSnapshot g;
    g.index = gpu.info.index;
    g.background_held = gpu.background_held;
    if (gpu.memory_wave.has_value()) {
      g.wave_peak_bytes = gpu.memory_wave->peak_bytes;
      g.wave_trough_bytes = gpu.memory_wave->trough_bytes;
      g.wave_period_seconds = gpu.memory_wave->period.count();
    }
    if (gpu.phase_offset.has_value()) g.phase_offset_seconds = gpu.phase_offset->count();
    g.phase_offset_ratio = gpu.phase_offset_ratio;
    for (const agent::TaskStatus& t : gpu.tasks) {
      g.tasks.push_back({absl::StrCat(t.namespace_name, "/", t.job),
                         t.role == agent::Role::kForeground ? "Foreground" : "Background", t.pid,
                         t.credit_limit, t.foreground_slowdown, t.sensitive_op_groups,
                         t.recommended_batch_size, t.launch_wait.count(), t.launch_paused.count()});
    }
    snapshot.gpus.push_back(std::move(g));
  }
  return snapshot;
}

// One local run.
class LocalRun {
 public:
  LocalRun(const RunOptions& options, std::ostream& out, std::ostream& err)
      : options_(options),
        out_(out),
        err_(err),
        // The run's one default: the real clock.
        clock_(options.clock != nullptr ? *options.clock : RealClock()),
        display_(out, options.tty, clock_) {}

  int Run();

 private:
  absl::Status Prepare();
  absl::Status StartAgent();
  absl::Status StartJobs();
  absl::Status StartJob(std::size_t index);
  absl::Status StartWaitingJobs(const agent::AgentStatus& status);
  std::vector<JobWorkers> Workers() const;
  absl::Status Loop();
  void ReadProgress(std::size_t index);
  void SampleAgent(const agent::AgentStatus& status);
  void RecordMemory(const agent::AgentStatus& status);
  std::vector<JobView> Views() const;
  double Elapsed() const { return Seconds(clock_.Now() - started_).count(); }
  void Note(const std::string& text) {
    report_.notes.push_back({Elapsed(), text});
    display_.Note(text);
  }
  int Finish();

  const RunOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  Clock& clock_;
  ProgressDisplay display_;
  std::vector<LocalJob> jobs_;
  std::string out_dir_;
  agent::GpuDevicesPtr machine_gpus_;  // NVML's GPUs until the agent takes them; null: simulated
  bool on_machine_gpus_ = false;       // the agent's GPUs are NVML's: the workers train on them
  agent::CommandRunnerPtr runner_;
  WorkerSettings settings_;
  // The workers this run started: the agent's only source of who a worker is.
  agent::LocalPeerIdentity identity_;
  std::unique_ptr<agent::Agent> agent_;
  std::vector<std::unique_ptr<JobProcesses>> processes_;  // by job; a waiting job's not started
  RunReport report_;
  std::vector<JobView> views_;
  const MonotonicTime started_ = clock_.Now();
  std::optional<MonotonicTime> last_read_;    // of the agent's status; nullopt: not read yet
  std::optional<MonotonicTime> last_sample_;  // the last snapshot; nullopt: none yet
  // The last snapshot's tasks, by (GPU, pid).
  std::set<std::pair<std::uint32_t, std::int32_t>> sampled_tasks_;
  std::map<std::uint32_t, MonotonicTime> held_since_;  // GPUs the foreground pauses
  std::map<std::string, std::uint32_t> recommended_;   // the last batch the agent advised, by job
  // Per worker (GPU, pid): its series in report_.memory and the newest sample time read (ns).
  std::map<std::pair<std::uint32_t, std::int32_t>, std::pair<std::size_t, std::int64_t>> memory_;
  bool stopping_ = false;
};

absl::Status LocalRun::Prepare() {
  if (options_.manifests.empty()) {
    return absl::InvalidArgumentError("no manifest: wavepool run JOB.yaml [MORE.yaml ...]");
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<LocalJob> jobs,
                            LoadJobs(options_.manifests, options_.device));
  jobs_ = std::move(jobs);
  WAVEPOOL_ASSIGN_OR_RETURN(MachineGpus machine, OpenMachineGpus(options_.devices, clock_));
  machine_gpus_ = std::move(machine.nvml);
  on_machine_gpus_ = machine_gpus_ != nullptr;
  std::uint32_t gpus = options_.gpus;
  if (machine.simulated > 0) {
    if (gpus > 0 && gpus != machine.simulated) {
      return absl::InvalidArgumentError(
          absl::StrCat("--gpus ", gpus, " and --devices ", options_.devices, " disagree"));
    }
    gpus = machine.simulated;
  }
  if (machine_gpus_ != nullptr) {
    const auto present = static_cast<std::uint32_t>(machine_gpus_->gpus().size());
    if (gpus > present) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus ", gpus, ": this machine has ",
                                                     present, " GPUs (", machine_gpus_->Describe(),
                                                     ")"));
    }
    if (gpus == 0) gpus = present;
  }
  WAVEPOOL_RETURN_IF_ERROR(AssignGpus(jobs_, &gpus));
  report_.gpus = gpus;
  out_dir_ = options_.out_dir.empty() ? DefaultOutDir(jobs_, clock_.WallNow()) : options_.out_dir;
  std::error_code error;
  for (const char* sub : {"", "/logs", "/plans", "/agent"}) {
    fs::create_directories(out_dir_ + sub, error);
    if (error) {
      return absl::PermissionDeniedError(
          absl::StrCat("--out ", out_dir_, sub, ": ", error.message()));
    }
  }
  for (const LocalJob& job : jobs_) {
    if (options_.fresh) fs::remove_all(options_.checkpoint_root + "/" + job.slug, error);
    std::ofstream(out_dir_ + "/plans/" + job.slug + ".json")
        << api::ToJson(job.plan.plan).dump(2) << "\n";
    report_.jobs.push_back(StartReport(job));
    JobView view;
    view.name = job.key;
    view.background = job.background();
    view.steps = job.plan.plan.training.steps;
    view.slowdown_limit = job.job.spec.collocation.max_foreground_slowdown.value_or(0);
    views_.push_back(view);
  }
  report_.started_at = Rfc3339(clock_.WallNow());
  report_.data = options_.data;
  return StartAgent();
}

absl::Status LocalRun::StartAgent() {
  runner_ = agent::MakeSystemCommandRunner();
  agent::GpuDevicesPtr devices = std::move(machine_gpus_);
  if (devices == nullptr) {
    agent::SimulatedGpuOptions gpus;
    gpus.gpus = report_.gpus;
    WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<agent::SimulatedGpus> simulated,
                              agent::SimulatedGpus::Create(clock_, gpus));
    devices = std::move(simulated);
  }
  agent::AgentOptions options;
  options.directory = fs::absolute(out_dir_ + "/agent").string();
  options.hostname = "local";
  options.version = "local";
  options.mps.mode = agent::MpsMode::kOff;
  options.identity = &identity_;
  if (options_.metrics_port >= 0) {
    options.metrics_address = "127.0.0.1";
    options.metrics_port = static_cast<std::uint16_t>(options_.metrics_port);
  }
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::unique_ptr<agent::Agent> started,
      agent::Agent::Start(options, std::move(devices), &clock_, runner_.get()));
  agent_ = std::move(started);
  report_.devices = agent_->Status().devices;
  return absl::OkStatus();
}

void LocalRun::ReadProgress(std::size_t index) {
  static const std::regex resumed(R"(^resumed from .* at step (\d+)$)");
  JobView& view = views_[index];
  JobReport& report = report_.jobs[index];
  for (const std::string& line : processes_[index]->ReadLines()) {
    if (std::optional<StepLine> step = ParseStepLine(line)) {
      view.state = "training";
      view.step = step->step;
      view.loss = step->loss;
      view.samples_per_second = step->samples_per_second;
      const double per_step = step->iteration_seconds;
      view.eta_seconds = per_step * static_cast<double>(view.steps - view.step);
      report.steps_trained.push_back({Elapsed(), *step});
      continue;
    }
    std::smatch m;
    if (std::regex_match(line, m, resumed)) report.resumed_from = std::stoll(m[1].str());
    if (line.rfind("done:", 0) != 0) Note(absl::StrCat(view.name, ": ", line));
  }
}

void LocalRun::SampleAgent(const agent::AgentStatus& status) {
  const MonotonicTime now = clock_.Now();
  RecordMemory(status);
  // A snapshot four times a second, and whenever a worker registered or left since the last one:
  // a task the run read once is in the report however briefly it lived.
  std::set<std::pair<std::uint32_t, std::int32_t>> tasks;
  for (const agent::GpuStatus& gpu : status.gpus) {
    for (const agent::TaskStatus& t : gpu.tasks) tasks.emplace(gpu.info.index, t.pid);
  }
  if (tasks == sampled_tasks_ && last_sample_.has_value() &&
      now - *last_sample_ < std::chrono::milliseconds(250)) {
    return;
  }
  last_sample_ = now;
  sampled_tasks_ = std::move(tasks);
  report_.agent.push_back(Snapshot(status, Elapsed()));
  const std::map<std::string, double> slowdowns = ForegroundSlowdowns(status);
  for (JobView& view : views_) {
    if (auto it = slowdowns.find(view.name); it != slowdowns.end()) view.slowdown = it->second;
  }
  for (const agent::GpuStatus& gpu : status.gpus) {
    for (const agent::TaskStatus& t : gpu.tasks) {
      const std::string job = absl::StrCat(t.namespace_name, "/", t.job);
      // The agent's advice to a background job, said when it changes.
      if (t.role == agent::Role::kBackground && t.recommended_batch_size > 0) {
        std::uint32_t& said = recommended_[job];
        if (said != t.recommended_batch_size) {
          said = t.recommended_batch_size;
          Note(
              absl::StrFormat("agent: recommends a per-GPU batch of %u for background job %s "
                              "on GPU %d: the foreground there stays over its slowdown limit",
                              said, job, gpu.info.index));
        }
      }
    }
    // A background task paused for long is worth saying (once per pause).
    if (!gpu.background_held) {
      held_since_.erase(gpu.info.index);
    } else if (held_since_.emplace(gpu.info.index, now).second == false &&
               now - held_since_[gpu.info.index] >= std::chrono::seconds(5)) {
      Note(
          absl::StrFormat("warning: the background on GPU %d has been paused for 5 s while "
                          "the foreground runs work the background slows",
                          gpu.info.index));
      held_since_[gpu.info.index] = now + std::chrono::hours(24);
    }
  }
}

// The workers' allocator samples since the last call. Their times are the agent protocol's
// integers, CLOCK_MONOTONIC nanoseconds: MonotonicTime's clock, on one axis with started_ when
// the run reads the real clock (the workers, other processes, always do).
void LocalRun::RecordMemory(const agent::AgentStatus& status) {
  for (const agent::GpuStatus& gpu : status.gpus) {
    for (const agent::TaskStatus& t : gpu.tasks) {
      auto [cursor, added] =
          memory_.try_emplace({gpu.info.index, t.pid}, std::make_pair(report_.memory.size(), -1));
      if (added) {
        MemorySeries series;
        series.job = absl::StrCat(t.namespace_name, "/", t.job);
        series.role = t.role == agent::Role::kForeground ? "Foreground" : "Background";
        series.gpu = gpu.info.index;
        series.pid = t.pid;
        report_.memory.push_back(std::move(series));
      }
      auto& [index, last_ns] = cursor->second;
      for (const agent::MemorySample& s :
           agent_->TaskMemorySamples(gpu.info.index, t.pid, last_ns)) {
        AddReading(report_.memory[index],
                   {Seconds(MonotonicTimeFromNanos(s.time_ns) - started_).count(),
                    s.allocated_bytes, s.reserved_bytes});
        last_ns = s.time_ns;
      }
    }
  }
}

std::vector<JobView> LocalRun::Views() const { return views_; }

std::vector<JobWorkers> LocalRun::Workers() const {
  std::vector<JobWorkers> workers;
  for (const auto& p : processes_) {
    JobWorkers w;
    w.pids = p->pids();
    w.exited = p->started() && !p->running();
    w.failed = w.exited && std::any_of(p->exits().begin(), p->exits().end(),
                                       [](const auto& e) { return e.second != 0; });
    workers.push_back(std::move(w));
  }
  return workers;
}

// Starts job `index`'s workers; an error names the job.
absl::Status LocalRun::StartJob(std::size_t index) {
  absl::Status started = processes_[index]->Start(settings_);
  if (started.ok()) return started;
  return absl::Status(started.code(), absl::StrCat(jobs_[index].key, ": ", started.message()));
}

// Every job's processes; the workers of foreground jobs and of background jobs with no foreground
// on their GPUs start now, the others once the foreground trains (start_order.h).
absl::Status LocalRun::StartJobs() {
  for (const LocalJob& job : jobs_) {
    processes_.push_back(std::make_unique<JobProcesses>(
        job, fs::absolute(out_dir_ + "/plans/" + job.slug + ".json").string()));
  }
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i].background() && !ForegroundsSharingGpus(jobs_, i).empty()) {
      views_[i].state = kWaitingForForeground;
      continue;
    }
    WAVEPOOL_RETURN_IF_ERROR(StartJob(i));
  }
  return absl::OkStatus();
}

absl::Status LocalRun::StartWaitingJobs(const agent::AgentStatus& status) {
  if (stopping_) return absl::OkStatus();
  std::vector<JobWorkers> workers;  // read once, when a job waits
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    if (processes_[i]->started()) continue;
    if (workers.empty()) workers = Workers();
    const std::vector<AwaitedForeground> awaited = AwaitForegrounds(jobs_, workers, i, status);
    if (!MayStart(awaited)) continue;
    Note(StartNote(jobs_, workers, i, awaited));
    views_[i].state = "starting";
    WAVEPOOL_RETURN_IF_ERROR(StartJob(i));
  }
  return absl::OkStatus();
}

absl::Status LocalRun::Loop() {
  MonotonicTime kill_at{};
  while (true) {
    std::vector<pollfd> fds;
    for (const auto& p : processes_) {
      if (p->output_fd() >= 0) fds.push_back({p->output_fd(), POLLIN, 0});
    }
    poll(fds.data(), fds.size(), 100);
    bool running = false;
    for (std::size_t i = 0; i < processes_.size(); ++i) {
      if (!processes_[i]->started()) {  // waits for the foreground: starts unless the run stops
        running = running || !stopping_;
        continue;
      }
      ReadProgress(i);
      processes_[i]->Reap();
      running = running || processes_[i]->running();
      if (!processes_[i]->running() && views_[i].state != "done" && views_[i].state != "failed" &&
          views_[i].state != "stopped") {
        const auto& exits = processes_[i]->exits();
        const bool ok =
            std::all_of(exits.begin(), exits.end(), [](const auto& e) { return e.second == 0; });
        views_[i].state = ok ? "done" : stopping_ ? "stopped" : "failed";
        views_[i].eta_seconds = ok ? 0 : -1;
      }
    }
    // The agent drops a worker's memory samples when it exits: read them often.
    const MonotonicTime now = clock_.Now();
    if (!last_read_.has_value() || now - *last_read_ >= std::chrono::milliseconds(50)) {
      last_read_ = now;
      const agent::AgentStatus status = agent_->Status();
      SampleAgent(status);
      WAVEPOOL_RETURN_IF_ERROR(StartWaitingJobs(status));
    }
    display_.Update(Views());
    if (!running) return absl::OkStatus();
    if (g_stop.load() && !stopping_) {
      stopping_ = true;
      report_.interrupted = true;
      Note("stopping: every worker checkpoints and exits; run the same command to resume");
      for (std::size_t i = 0; i < processes_.size(); ++i) {
        if (!processes_[i]->started()) views_[i].state = "stopped";  // never starts
      }
      for (auto& p : processes_) p->Signal(SIGTERM);
      kill_at = clock_.Now() + options_.stop_grace;
    }
    if (stopping_ && clock_.Now() > kill_at) {
      for (auto& p : processes_) p->Signal(SIGKILL);
    }
  }
}

int LocalRun::Finish() {
  int failed = 0;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    JobReport& report = report_.jobs[i];
    report.exit_codes = processes_[i]->exits();
    const bool ok = views_[i].state == "done";
    report.state = ok ? "Succeeded" : report_.interrupted ? "Interrupted" : "Failed";
    if (!ok) {
      report.reason = processes_[i]->started()
                          ? processes_[i]->FailureReason()
                          : "stopped before its workers started: it waited for the foreground";
    }
    if (!ok && !report_.interrupted) {
      ++failed;
      err_ << "wavepool run: TrainingJob " << report.name << " failed: " << report.reason << "\n";
    }
  }
  report_.elapsed_seconds = Elapsed();
  display_.Finish(Views());
  const std::string path = out_dir_ + "/report.json";
  if (absl::Status s = WriteReport(report_, path); !s.ok()) {
    err_ << "wavepool run: " << s.message() << "\n";
    return 1;
  }
  out_ << "report: " << path << "\n";
  const std::string html = out_dir_ + "/report.html";
  if (absl::Status s = WriteReportHtml(report_, html); !s.ok()) {
    err_ << "wavepool run: " << s.message() << "\n";
    return 1;
  }
  out_ << "report: " << html << "\n";
  if (report_.interrupted) return 130;
  return failed > 0 ? 1 : 0;
}

int LocalRun::Run() {
  if (absl::Status s = Prepare(); !s.ok()) {
    err_ << "wavepool run: " << s.message() << "\n";
    return 2;
  }
  settings_.binary = options_.worker_binary.empty() ? WorkerNextToUs() : options_.worker_binary;
  settings_.agent_dir = fs::absolute(out_dir_ + "/agent").string();
  settings_.data = options_.data;
  settings_.checkpoint_root = fs::absolute(options_.checkpoint_root).string();
  settings_.log_dir = fs::absolute(out_dir_ + "/logs").string();
  settings_.threads = options_.threads;
  settings_.machine_gpus = on_machine_gpus_;
  settings_.on_started = [this](pid_t pid, const std::map<std::string, std::string>& env) {
    agent::WorkerIdentity identity;
    identity.namespace_name = env.at("WAVEPOOL_NAMESPACE");
    identity.job = env.at("WAVEPOOL_JOB");
    identity.pod = env.at("WAVEPOOL_POD_NAME");
    identity.role = env.at("WAVEPOOL_ROLE") == "Background" ? agent::Role::kBackground
                                                            : agent::Role::kForeground;
    std::uint32_t gpu = 0;
    if (absl::SimpleAtoi(env.at("WAVEPOOL_GPU_INDEX"), &gpu)) identity.gpu_indices = {gpu};
    identity_.Add(pid, std::move(identity));
  };
  settings_.on_reaped = [this](pid_t pid) { identity_.Remove(pid); };
  out_ << absl::StrFormat(
      "wavepool run: %d job(s) on %d %s GPU(s) of the local agent; logs and report in %s\n",
      jobs_.size(), report_.gpus, on_machine_gpus_ ? "of this machine's" : "simulated", out_dir_);
  absl::Status started = StartJobs();
  if (started.ok()) {
    display_.Update(Views());  // every job's first state, a waiting background job's included
    started = Loop();
  }
  if (!started.ok()) {
    err_ << "wavepool run: " << started.message() << "\n";
    return 1;
  }
  return Finish();
}

}  // namespace

int RunLocally(const RunOptions& options, std::ostream& out, std::ostream& err) {
  g_stop.store(false);
  struct sigaction action {};
  action.sa_handler = OnStop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  LocalRun run(options, out, err);
  return run.Run();
}

}  // namespace wavepool::local
