#include "job_processes.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/exec_args.h"

namespace wavepool::local {
namespace {

// A loopback port nothing listens on now, for a job's store (rank 0 serves it).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    socklen_t length = sizeof(address);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
  }
  close(fd);
  return port;
}

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace

JobProcesses::JobProcesses(const LocalJob& job, std::string plan_path)
    : job_(job), plan_path_(std::move(plan_path)) {}

JobProcesses::~JobProcesses() {
  for (std::size_t rank = 0; rank < pids_.size(); ++rank) {
    if (exits_.count(static_cast<int>(rank)) == 0 && pids_[rank] > 0) {
      kill(pids_[rank], SIGKILL);
      waitpid(pids_[rank], nullptr, 0);
      if (on_reaped_) on_reaped_(pids_[rank]);
    }
  }
  if (output_fd_ >= 0) close(output_fd_);
}

std::map<std::string, std::string> WorkerDeviceEnvironment(bool machine_gpus, std::uint32_t gpu) {
  if (!machine_gpus) return {{"WAVEPOOL_DEVICE", "cpu"}};
  return {{"WAVEPOOL_DEVICE", absl::StrCat("cuda:", gpu)}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
}

std::map<std::string, std::string> JobProcesses::Environment(const WorkerSettings& settings,
                                                             int rank, int port) const {
  const api::TrainingJob& j = job_.job;
  std::map<std::string, std::string> env = {
      {"WAVEPOOL_PLAN", plan_path_},
      {"WAVEPOOL_RANK", std::to_string(rank)},
      {"WAVEPOOL_WORLD_SIZE", std::to_string(job_.plan.plan.gpus)},
      {"WAVEPOOL_STORE", absl::StrCat("tcp://127.0.0.1:", port)},
      {"WAVEPOOL_AGENT_DIR", settings.agent_dir},
      {"WAVEPOOL_DATA", settings.data},
      {"WAVEPOOL_CHECKPOINT_PATH", absl::StrCat(settings.checkpoint_root, "/", job_.slug)},
      {"WAVEPOOL_NAMESPACE", j.metadata.namespace_},
      {"WAVEPOOL_JOB", j.metadata.name},
      {"WAVEPOOL_POD_NAME", absl::StrCat(j.metadata.name, "-local-", rank)},
      {"WAVEPOOL_ROLE", std::string(api::ToString(*j.spec.role))},
      {"WAVEPOOL_GPU_INDEX", std::to_string(job_.gpus[static_cast<std::size_t>(rank)])},
  };
  env.merge(
      WorkerDeviceEnvironment(settings.machine_gpus, job_.gpus[static_cast<std::size_t>(rank)]));
  if (!job_.background() && j.spec.collocation.max_foreground_slowdown.has_value()) {
    env["WAVEPOOL_MAX_FOREGROUND_SLOWDOWN"] =
        absl::StrCat(*j.spec.collocation.max_foreground_slowdown);
  }
  return env;
}

absl::Status JobProcesses::Start(const WorkerSettings& settings) {
  log_dir_ = settings.log_dir;
  on_reaped_ = settings.on_reaped;
  const int port = FreeLoopbackPort();
  if (port == 0) return absl::UnavailableError("no free loopback port for the job's store");
  const int ranks = static_cast<int>(job_.plan.plan.gpus);
  for (int rank = 0; rank < ranks; ++rank) {
    int pipe_fds[2] = {-1, -1};
    if (rank == 0 && pipe2(pipe_fds, O_CLOEXEC) != 0) {
      return ErrnoError(errno, absl::StrCat("pipe for ", job_.key));
    }
    const std::string out_log = absl::StrCat(log_dir_, "/", job_.slug, "-rank", rank, ".out");
    const std::string err_log = absl::StrCat(log_dir_, "/", job_.slug, "-rank", rank, ".err");
    const std::map<std::string, std::string> env = Environment(settings, rank, port);
    std::vector<std::string> args = {settings.binary, "--log-every", "1"};
    if (settings.threads > 0) {
      args.push_back("--threads");
      args.push_back(std::to_string(settings.threads));
    }
    // Everything the child needs is made here: this process runs the agent's threads, so the
    // forked child may only make async-signal-safe calls (no allocation, no stdio, no setenv)
    // until it execs. Rank 0's stdout is the pipe, the others' a file; stderr a file.
    std::vector<std::string> environment = ChildEnvironment(env);
    const std::vector<char*> envp = ExecPointers(environment);
    const std::vector<char*> argv = ExecPointers(args);
    const int out = rank == 0
                        ? pipe_fds[1]
                        : open(out_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return ErrnoError(errno, out_log);
    const int err = open(err_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err < 0) {
      if (rank != 0) close(out);
      return ErrnoError(errno, err_log);
    }
    // The child waits for `go` to close: on_started has run by then.
    int go[2] = {-1, -1};
    if (pipe2(go, O_CLOEXEC) != 0) return ErrnoError(errno, absl::StrCat("pipe for ", job_.key));
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return ErrnoError(errno, absl::StrCat("fork for ", job_.key));
    if (pid == 0) {
      close(go[1]);
      char byte;
      while (read(go[0], &byte, 1) < 0 && errno == EINTR) {
      }
      if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(126);
      setpgid(0, 0);  // the terminal's Ctrl-C reaches `wavepool run`, which stops the workers
      // A run killed outright (SIGKILL, a crash) cannot stop its workers: they get SIGTERM
      // (checkpoint and exit) when it dies, instead of training on without an agent. The check
      // after it covers a run that died before the request was made.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(143);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (rank != 0) close(out);
    close(err);
    close(go[0]);
    if (settings.on_started) settings.on_started(pid, env);
    close(go[1]);
    pids_.push_back(pid);
    if (rank == 0) {
      close(pipe_fds[1]);
      output_fd_ = pipe_fds[0];
      fcntl(output_fd_, F_SETFL, fcntl(output_fd_, F_GETFL) | O_NONBLOCK);
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> JobProcesses::ReadLines() {
  std::vector<std::string> lines;
  if (output_fd_ < 0) return lines;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(output_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      pending_.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) {  // rank 0 closed its output (it exited)
      close(output_fd_);
      output_fd_ = -1;
    }
    break;
  }
  std::size_t start = 0;
  for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(pending_.substr(start, end - start));
  }
  pending_.erase(0, start);
  if (output_fd_ < 0 && !pending_.empty()) lines.push_back(std::move(pending_));
  return lines;
}

bool JobProcesses::Reap() {
  for (std::size_t rank = 0; rank < pids_.size(); ++rank) {
    if (exits_.count(static_cast<int>(rank)) > 0) continue;
    int status = 0;
    if (waitpid(pids_[rank], &status, WNOHANG) == pids_[rank]) {
      if (on_reaped_) on_reaped_(pids_[rank]);
      exits_[static_cast<int>(rank)] =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
  return !running();
}

bool JobProcesses::running() const { return exits_.size() < pids_.size(); }

void JobProcesses::Signal(int signal) {
  for (std::size_t rank = 0; rank < pids_.size(); ++rank) {
    if (exits_.count(static_cast<int>(rank)) == 0) kill(pids_[rank], signal);
  }
}

std::string JobProcesses::FailureReason() const {
  for (const auto& [rank, code] : exits_) {
    if (code == 0) continue;
    const std::string line =
        LastLine(absl::StrCat(log_dir_, "/", job_.slug, "-rank", rank, ".err"));
    return absl::StrCat("rank ", rank, " exited ", code, line.empty() ? "" : ": ", line);
  }
  return "";
}

}  // namespace wavepool::local
