#include "wavepool/agent/mps_control.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace wavepool::agent {
namespace {

std::string Trimmed(std::string text) {
  return std::string(absl::StripTrailingAsciiWhitespace(text));
}

bool MakeDirectories(const std::string& path) {
  size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos) {
    mkdir(path.substr(0, pos).c_str(), 0755);
  }
  return mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
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
    const std::string base = absl::StrCat(options_.directory, "/mps/", gpu.index);
    if (!MakeDirectories(base + "/pipe") || !MakeDirectories(base + "/log")) {
      errors_[gpu.index] = absl::StrCat("mkdir ", base, ": ", std::strerror(errno));
      continue;
    }
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

std::string MpsControl::PipeDirectory(std::uint32_t gpu_index) const {
  auto it = pipes_.find(gpu_index);
  return it == pipes_.end() ? std::string() : it->second;
}

std::string MpsControl::Status() const {
  if (!off_reason_.empty() && errors_.empty()) return absl::StrCat("MPS off: ", off_reason_);
  std::string status = absl::StrCat("MPS on ", pipes_.size(), " of ", gpus_.size(), " GPUs");
  for (const auto& [gpu, error] : errors_) absl::StrAppend(&status, "; GPU ", gpu, ": ", error);
  return status;
}

}  // namespace wavepool::agent
