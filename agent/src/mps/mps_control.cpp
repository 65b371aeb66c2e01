#include "wavepool/agent/mps_control.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "host_dir/no_follow_fs.h"

namespace wavepool::agent {
namespace {

std::string Trimmed(std::string text) {
  return std::string(absl::StripTrailingAsciiWhitespace(text));
}

// The files a control daemon keeps in its pipe directory.
constexpr const char* kControlFiles[] = {"control", "control_lock", "control_privileged"};

// Whether `pipe_directory` holds a daemon's control pipe (a FIFO, not followed if a link).
bool HasControlPipe(const std::string& pipe_directory) {
  struct stat st;
  const std::string control = pipe_directory + "/control";
  return lstat(control.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// Removes a dead daemon's control files so that a new one can start; never through a link.
void RemoveStaleControlFiles(const std::string& pipe_directory) {
  const int fd = open(pipe_directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  for (const char* name : kControlFiles) unlinkat(fd, name, 0);
  close(fd);
}

}  // namespace

MpsControl::MpsControl(Options options, CommandRunner* runner)
    : options_(std::move(options)), runner_(runner) {}

MpsControl::~MpsControl() { Stop(); }

std::vector<std::string> MpsControl::Environment(const MpsGpu& gpu) const {
  const std::string base = absl::StrCat(options_.directory, "/mps/", gpu.index);
  return {absl::StrCat("CUDA_VISIBLE_DEVICES=", gpu.uuid),
          absl::StrCat("CUDA_MPS_PIPE_DIRECTORY=", base, "/pipe"),
          absl::StrCat("CUDA_MPS_LOG_DIRECTORY=", base, "/log")};
}

void MpsControl::Start(const std::vector<MpsGpu>& gpus) {
  gpus_ = gpus;
  if (options_.mode == MpsMode::kOff) {
    off_reason_ = "turned off";
    return;
  }
  if (!runner_->Exists(options_.control_program)) {
    off_reason_ = absl::StrCat(options_.control_program, " not found");
    if (options_.mode == MpsMode::kOn) {
      for (const MpsGpu& gpu : gpus) errors_[gpu.index] = off_reason_;
    }
    return;
  }
  for (const MpsGpu& gpu : gpus) {
    const std::string relative = absl::StrCat("mps/", gpu.index);
    const std::string base = absl::StrCat(options_.directory, "/", relative);
    absl::Status made =
        internal::MakeDirectoriesUnder(options_.directory, relative + "/pipe", 0755);
    if (made.ok())
      made = internal::MakeDirectoriesUnder(options_.directory, relative + "/log", 0755);
    if (!made.ok()) {
      errors_[gpu.index] = std::string(made.message());
      continue;
    }
    if (Adopt(gpu, base + "/pipe")) continue;
    absl::StatusOr<CommandResult> result =
        runner_->Run({options_.control_program, "-d"}, Environment(gpu), "");
    if (!result.ok()) {
      errors_[gpu.index] = std::string(result.status().message());
    } else if (result->exit_status != 0) {
      errors_[gpu.index] = absl::StrCat(options_.control_program, " -d exited with ",
                                        result->exit_status, ": ", Trimmed(result->output));
    } else {
      pipes_[gpu.index] = base + "/pipe";
    }
  }
}

void MpsControl::Stop() {
  for (const MpsGpu& gpu : gpus_) {
    if (pipes_.count(gpu.index) == 0) continue;
    // A daemon that does not answer is left to its own shutdown; nothing more to do here.
    (void)runner_->Run({options_.control_program}, Environment(gpu), "quit\n");
  }
  pipes_.clear();
}

// A daemon left by a previous agent (it crashed or was restarted) still serves its clients:
// adopting it keeps them running and MPS reported on. One that does not answer is stale.
bool MpsControl::Adopt(const MpsGpu& gpu, const std::string& pipe_directory) {
  if (!HasControlPipe(pipe_directory)) return false;
  absl::StatusOr<CommandResult> probe =
      runner_->Run({options_.control_program}, Environment(gpu), "get_server_list\n");
  if (probe.ok() && probe->exit_status == 0) {
    pipes_[gpu.index] = pipe_directory;
    ++adopted_;
    return true;
  }
  RemoveStaleControlFiles(pipe_directory);
  return false;
}

std::string MpsControl::PipeDirectory(std::uint32_t gpu_index) const {
  auto it = pipes_.find(gpu_index);
  return it == pipes_.end() ? std::string() : it->second;
}

std::string MpsControl::Status() const {
  if (!off_reason_.empty() && errors_.empty()) return absl::StrCat("MPS off: ", off_reason_);
  std::string status = absl::StrCat("MPS on ", pipes_.size(), " of ", gpus_.size(), " GPUs");
  if (adopted_ > 0) absl::StrAppend(&status, " (", adopted_, " adopted from a previous agent)");
  for (const auto& [gpu, error] : errors_) absl::StrAppend(&status, "; GPU ", gpu, ": ", error);
  return status;
}

}  // namespace wavepool::agent
